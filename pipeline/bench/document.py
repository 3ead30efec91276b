"""`tinyrustlm.bench.v4`: what `nox -s bench` measured (pipeline/bench/cli.py writes it; the
pipeline's own format, registered in pipeline/formats.py).

Every figure is the median of `method.reps` interleaved repetitions, stored with its min, max
and samples (`<figure>`, `<figure>_min`, `<figure>_max`, `<figure>_samples`). Names kept from
v1: `runs` (decode, by run name), `kernels`, `targets`; new: `prefill_runs`, `bandwidth` (per
probe thread count), `modules` (SHA-256 of every module measured). New in v3: every decode and
prefill run's `ran_on` (pipeline/bench/environment.py): engine and version, OS, architecture,
module and model digests, tier, context, workers and cache state; the browser runs
(pipeline/bench/browser.py: Chromium through js/loader.js, first load and cached) also name the
lane the loader chose, and their prefill runs the loader's `load_ms`. New in v4
(pipeline/bench/memory.py): `memory`, the itemized plan (its eleven parts, for a chart that
stacks them by context) beside the measured high-water marks of loading, prefill and decode, per
lane and context (node, with the load by copy from before issue 33; Chromium through the
loader), and `kv_reuse`, the time to first token of a follow-up turn with and without KV reuse.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from pipeline.bench.environment import RanOn
from pipeline.bench.memory import KvReuseSection, MemorySection
from verify.formats.base import Frozen, Sha256Hex

BENCH_SCHEMA = "tinyrustlm.bench.v4"


class Machine(Frozen):
    platform: str
    cpus: int | None
    node: str
    load_average: list[float] = Field(description="1/5/15-minute load before, then after")


class BenchTier(Frozen):
    preset: str
    sha256: Sha256Hex


class BenchModel(Frozen):
    preset: str
    seed: int
    sha256: Sha256Hex
    weight_bytes_per_token: int
    context: int = Field(description="admitted context of every session (the model's C_max)")
    tiers: dict[str, BenchTier] = Field(
        default_factory=dict,
        description="kernel tier -> the model run for it (same weights; runs of the integer "
        "tier are named with the suffix -int8)",
    )


class Method(Frozen):
    reps: int = Field(ge=5)
    tokens: int
    prompt_tokens: int
    statistic: str
    matvec: list[dict[str, Any]]
    probe_bytes: int
    probe_threads: list[int]


class KernelFigure(Frozen):
    weight_bytes: int
    gbps: float
    gbps_min: float
    gbps_max: float
    gbps_samples: list[float]
    ms_per_matvec: float
    ms_per_matvec_min: float
    ms_per_matvec_max: float
    ms_per_matvec_samples: list[float]


class BandwidthFigure(Frozen):
    gbps: float
    gbps_min: float
    gbps_max: float
    gbps_samples: list[float]


class DecodeRun(Frozen):
    name: str
    workers: int
    lane: int | None = None
    module_sha256: Sha256Hex
    tokens_per_s: float
    tokens_per_s_min: float
    tokens_per_s_max: float
    tokens_per_s_samples: list[float]
    decode_ms_median: float
    effective_gbps: float
    roofline_fraction: float | None
    ran_on: RanOn


class PrefillRun(Frozen):
    name: str
    workers: int
    module_sha256: Sha256Hex
    prompt_tokens: int
    tokens_per_s: float
    tokens_per_s_min: float
    tokens_per_s_max: float
    tokens_per_s_samples: list[float]
    prefill_ms: float
    prefill_ms_min: float
    prefill_ms_max: float
    prefill_ms_samples: list[float]
    ttft_ms: float = Field(description="time to first token: prefill plus the first decode call")
    ttft_ms_min: float
    ttft_ms_max: float
    ttft_ms_samples: list[float]
    load_ms: float | None = Field(
        default=None,
        description="browser runs: js/loader.js's load() (verify, probe, self-test, fetch or "
        "cache, compile, admit the model) before the prefill",
    )
    load_ms_min: float | None = None
    load_ms_max: float | None = None
    load_ms_samples: list[float] | None = None
    ran_on: RanOn


class TargetRow(Frozen):
    target: str
    numerator: str
    denominator: str
    at_least: float
    measured: float | None = Field(description="ratio of the medians")
    measured_range: list[float] | None = Field(description="[lowest, highest] the spreads allow")
    met: bool | None


class BenchDocument(Frozen):
    schema_: Literal["tinyrustlm.bench.v4"] = Field(alias="schema")
    version: Literal[4]
    generated_utc: str
    machine: Machine
    model: BenchModel
    modules: dict[str, Sha256Hex]
    method: Method
    kernels: dict[str, dict[str, KernelFigure]]
    bandwidth: dict[str, BandwidthFigure]
    bandwidth_gbps: float | None = Field(description="the best probe's median: the roofline's")
    roofline_tokens_per_s: float | None = None
    roofline_tokens_per_s_min: float | None = None
    roofline_tokens_per_s_max: float | None = None
    roofline_1thread_tokens_per_s: float | None = None
    roofline_1thread_tokens_per_s_min: float | None = None
    roofline_1thread_tokens_per_s_max: float | None = None
    runs: list[DecodeRun]
    prefill_runs: list[PrefillRun]
    targets: list[TargetRow]
    memory: MemorySection
    kv_reuse: KvReuseSection
