"""The bench's memory and KV-reuse sections (issue 33): the itemized plan beside what each lane
measured, by context, and the time to first token of a follow-up turn with and without reuse.

`memory`: per wasm run (lane and workers) in node and at each context of `memory_contexts`
(128, 512 and the bench model's maximum), the plan's eleven parts (`part_names` order: a chart
stacks them by context) and its three peaks, beside the high-water marks measured by
pipeline/bench/memory.mjs — the allocator's over the static base and the Wasm memory's size,
for loading in place, prefill and steady decode — and `before`: the same model loaded by copy
(`tr_model_load`, the file twice while it loads: the load before issue 33) beside the plan with
its load copy. Byte counts are deterministic, so each is measured once per bench, not per
repetition. The Chromium run (pipeline/bench/browser.py) adds its own rows through js/loader.js
at the context the loader admits (the model's maximum).

`kv_reuse`: per wasm run, pipeline/bench/kvreuse.mjs (through the loader's `Loaded.turn`) on the
bench model's shape with a context of 1024: a 512-token conversation cached, then 16 new tokens;
the time to the first token with the cache reused and from scratch, and the token counts. One
sample per run, after the timed repetitions (the 528-token prefill from scratch takes 15-75 s
a lane on two cores); the section keeps the median/min/max shape of every other figure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from pipeline.bench.errors import BenchError
from pipeline.bench.stats import spread
from pipeline.io import process
from pipeline.io.inputs import parse_output
from pipeline.modelpack import PRESETS
from pipeline.toolchain import nodejs
from verify.formats.base import Frozen, Sha256Hex

HERE = Path(__file__).resolve().parent
MEMORY_SCRIPT = HERE / "memory.mjs"
KV_REUSE_SCRIPT = HERE / "kvreuse.mjs"
PHASES = ("load", "prefill", "decode")
ISSUE_CONTEXTS = (128, 512)
NODE_TIMEOUT_SECONDS = 1800


def memory_contexts(max_context: int) -> list[int]:
    """128, 512 and the model's maximum, those the model admits, ascending."""
    return sorted({c for c in (*ISSUE_CONTEXTS, max_context) if c <= max_context})


# the bench model's shape with room for the conversation (512), 16 new tokens and the reply
KV_REUSE_PRESET = replace(
    PRESETS["bench"],
    name="bench-1k",
    purpose="the bench model's shape with a context of 1024: KV reuse after 512 tokens",
    max_context=1024,
)


class PlanFigures(Frozen):
    parts: dict[str, int] = Field(description="the eleven parts (bytes), `part_names` order")
    peak_load: int
    peak_prefill: int
    steady_decode: int
    peak: int = Field(description="the largest of the three: what admission compares")
    largest: str = Field(description="the largest part")


class Measured(Frozen):
    heap_peak: int = Field(description="the allocator's high-water mark in the phase (bytes)")
    static_base: int = Field(description="`__heap_base`: data and stacks")
    high_water: int = Field(description="static_base + heap_peak, beside the plan's phase peak")
    memory_bytes: int = Field(description="the Wasm memory's size at the phase's end")


class PhasesMeasured(Frozen):
    load: Measured = Field(description="the model loaded in place (admission to adoption)")
    prefill: Measured
    decode: Measured = Field(description="steady decode")


class BeforeFigures(Frozen):
    plan: PlanFigures = Field(description="the plan with the load copy (tr_model_load)")
    load: Measured = Field(description="the model loaded by copy in a fresh instance")


class MemoryRun(Frozen):
    name: str = Field(description="the run's name (as in `runs`)")
    engine: Literal["node", "chromium"]
    lane: str = Field(description="the lane's id")
    workers: int = Field(ge=0)
    context: int = Field(ge=1)
    prompt_tokens: int = Field(
        ge=1, description="tokens prefilled (node: the context but the decode tokens)"
    )
    decode_tokens: int = Field(ge=0, description="tokens decoded in the steady-decode phase")
    plan: PlanFigures = Field(description="loaded in place (no load copy)")
    measured: PhasesMeasured
    before: BeforeFigures | None = Field(
        default=None, description="node: the load before issue 33 (by copy), for comparison"
    )


class MemoryModel(Frozen):
    preset: str
    sha256: Sha256Hex
    file_bytes: int
    max_context: int


class MemorySection(Frozen):
    model: MemoryModel
    part_names: list[str] = Field(description="the plan's parts in record order (stack order)")
    contexts: list[int] = Field(description="node: 128, 512 and the model's maximum")
    method: str
    runs: list[MemoryRun]

    @model_validator(mode="after")
    def _every_part_in_every_row(self) -> MemorySection:
        """A chart stacks the same parts in every row, in `part_names` order (the JSON's own
        key order is not kept: the bench writes sorted keys)."""
        for run in self.runs:
            if sorted(run.plan.parts) != sorted(self.part_names):
                raise ValueError(f"{run.name} at {run.context}: parts {sorted(run.plan.parts)}")
        return self


class KvReuseRun(Frozen):
    name: str
    workers: int = Field(ge=0)
    module_sha256: Sha256Hex
    prompt_tokens: int = Field(description="the follow-up turn's prompt: conversation + new")
    reused: int = Field(description="tokens kept from the cache by the reusing turn")
    recomputed: int = Field(description="tokens the reusing turn fed")
    reuse_ttft_ms: float
    reuse_ttft_ms_min: float
    reuse_ttft_ms_max: float
    reuse_ttft_ms_samples: list[float]
    scratch_ttft_ms: float = Field(description="the same prompt in a fresh session")
    scratch_ttft_ms_min: float
    scratch_ttft_ms_max: float
    scratch_ttft_ms_samples: list[float]


class KvReuseModel(Frozen):
    preset: str
    sha256: Sha256Hex
    context: int = Field(description="the model's maximum context (room for 528 + the reply)")


class KvReuseSection(Frozen):
    model: KvReuseModel
    conversation_tokens: int
    new_tokens: int
    method: str
    runs: list[KvReuseRun]


@dataclass(frozen=True)
class WasmRun:
    """One measured wasm run: its name, lane id, module and pool."""

    name: str
    lane: str
    module: Path
    workers: int


def _node(script: Path, *args: str | int | Path) -> dict[str, Any]:
    argv = [str(nodejs.executable()), str(script), *map(str, args)]
    done = process.run(argv, timeout=NODE_TIMEOUT_SECONDS)
    if done.returncode != 0:
        raise BenchError(f"{script.name} failed:\n{done.stderr[-3000:]}", where=str(script))
    doc: dict[str, Any] = parse_output(done.stdout, f"{script.name} output")
    return doc


def plan_figures(plan: Mapping[str, Any]) -> dict[str, Any]:
    """A tr_plan_header result (abi.js planHeader; the loader's `lm.plan`) as the document's."""
    return {
        # in the record's order (abi.js PLAN_PARTS, memory.rs PART_NAMES): the chart's stack
        "parts": {name: int(bytes_) for name, bytes_ in plan["parts"].items()},
        "peak_load": int(plan["peakLoad"]),
        "peak_prefill": int(plan["peakPrefill"]),
        "steady_decode": int(plan["steadyDecode"]),
        "peak": int(plan["peak"]),
        "largest": str(plan["largest"]),
    }


def node_measured(phase: Mapping[str, Any]) -> dict[str, int]:
    """One phase of memory.mjs."""
    return {
        "heap_peak": int(phase["heap"]),
        "static_base": int(phase["staticBase"]),
        "high_water": int(phase["measured"]),
        "memory_bytes": int(phase["memoryBytes"]),
    }


def loader_measured(phase: Mapping[str, Any]) -> dict[str, int]:
    """One phase as js/loader.js measures it (`lm.loadMemory`, `lm.memorySince()`)."""
    return {
        "heap_peak": int(phase["heapPeak"]),
        "static_base": int(phase["staticBase"]),
        "high_water": int(phase["highWater"]),
        "memory_bytes": int(phase["memoryBytes"]),
    }


def node_memory_rows(run: WasmRun, doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """memory.mjs's document of one run as the section's rows, one per context."""
    return [
        {
            "name": run.name,
            "engine": "node",
            "lane": run.lane,
            "workers": run.workers,
            "context": int(r["context"]),
            "prompt_tokens": int(r["context"]) - int(r["decodeTokens"]),
            "decode_tokens": int(r["decodeTokens"]),
            "plan": plan_figures(r["plan"]),
            "measured": {p: node_measured(r[p]) for p in PHASES},
            "before": {
                "plan": plan_figures(r["before"]["plan"]),
                "load": node_measured(r["before"]["load"]),
            },
        }
        for r in doc["runs"]
    ]


def loader_memory_row(name: str, engine: str, doc: Mapping[str, Any]) -> dict[str, Any]:
    """A browser page's run (pipeline/bench/page/main.mjs) as one row of the section."""
    m = doc["memory"]
    return {
        "name": name,
        "engine": engine,
        "lane": str(doc["chosen_lane"]),
        "workers": int(m["plan"]["workers"]),
        "context": int(doc["context"]),
        "prompt_tokens": int(m["prompt_tokens"]),
        "decode_tokens": int(m["decode_tokens"]),
        "plan": plan_figures(m["plan"]),
        "measured": {p: loader_measured(m[p]) for p in PHASES},
    }


def measure_memory(runs: Sequence[WasmRun], model: Path, contexts: Sequence[int]) -> list[Any]:
    """memory.mjs on every run (node), at every context: the section's rows."""
    rows = []
    for run in runs:
        doc = _node(MEMORY_SCRIPT, run.module, run.workers, model, ",".join(map(str, contexts)))
        rows += node_memory_rows(run, doc)
    return rows


def kv_reuse_repetition(runs: Sequence[WasmRun], model: Path) -> list[dict[str, Any]]:
    """One sample of kvreuse.mjs per run (the same tokens sampled with and without reuse)."""
    out = []
    for run in runs:
        doc = _node(KV_REUSE_SCRIPT, run.module, run.workers, model, run.lane)
        if doc["reuse"]["tokens"] != doc["scratch"]["tokens"]:
            raise BenchError(
                f"{run.name}: a reusing turn sampled {doc['reuse']['tokens']}, a fresh session "
                f"{doc['scratch']['tokens']}",
                where=str(KV_REUSE_SCRIPT),
            )
        out.append({"name": run.name, "workers": run.workers, **doc})
    return out


def kv_reuse_runs(
    samples: Sequence[Sequence[Mapping[str, Any]]], modules: Mapping[str, str]
) -> list[dict[str, Any]]:
    """The repetitions' samples (one list of runs each) as the section's runs."""
    rows = []
    for i, first in enumerate(samples[0]):
        series = [rep[i] for rep in samples]
        row: dict[str, Any] = {
            "name": first["name"],
            "workers": int(first["workers"]),
            "module_sha256": modules[first["name"]],
            "prompt_tokens": int(first["prompt_tokens"]),
            "reused": int(first["reuse"]["reused"]),
            "recomputed": int(first["reuse"]["recomputed"]),
        }
        for key in ("reuse", "scratch"):
            s = spread([float(r[key]["ttft_ms"]) for r in series])
            row[f"{key}_ttft_ms"], row[f"{key}_ttft_ms_min"] = s["median"], s["min"]
            row[f"{key}_ttft_ms_max"], row[f"{key}_ttft_ms_samples"] = s["max"], s["samples"]
        rows.append(row)
    return rows


def memory_section(
    model: Mapping[str, Any], contexts: Sequence[int], rows: Sequence[Any]
) -> dict[str, Any]:
    """The document's `memory` (validated): `model` {preset, sha256, file_bytes, max_context},
    `rows` from measure_memory, then the browsers'."""
    section = MemorySection(
        model=MemoryModel.model_validate(model),
        part_names=list(rows[0]["plan"]["parts"]),
        contexts=list(contexts),
        method="bytes, measured once per bench (deterministic): node runs by memory.mjs (the "
        "model loaded in place, a prompt filling the context but the decode tokens prefilled in "
        "one chunk, then the decode tokens; before: loaded by copy in a fresh instance); browser "
        "runs through js/loader.js at the context it admits (lm.loadMemory, lm.memorySince())",
        runs=rows,
    )
    return section.model_dump(mode="json", exclude_none=True)


def kv_reuse_section(
    sha256: str, samples: Sequence[Sequence[Mapping[str, Any]]], modules: Mapping[str, str]
) -> dict[str, Any]:
    """The document's `kv_reuse` (validated): one list of kvreuse.mjs samples per repetition,
    on the KV_REUSE_PRESET model of `sha256`."""
    first = samples[0][0]
    section = KvReuseSection(
        model=KvReuseModel(
            preset=KV_REUSE_PRESET.name, sha256=sha256, context=KV_REUSE_PRESET.max_context
        ),
        conversation_tokens=int(first["conversation_tokens"]),
        new_tokens=int(first["prompt_tokens"]) - int(first["conversation_tokens"]),
        method=f"through js/session.js Loaded.turn (prefill chunk: the loader's default), "
        f"{len(samples)} sample(s) per run after the repetitions; the time from the turn's start "
        "to its first token",
        runs=kv_reuse_runs(samples, modules),
    )
    return section.model_dump(mode="json")


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f}"


def memory_table(doc: Mapping[str, Any]) -> str:
    """The printed rows: per run and context, plan and measured peaks (MiB), and before."""
    mem = doc["memory"]
    lines = [
        f"memory ({mem['model']['preset']}, MiB; plan / measured high-water; before = load by "
        "copy)",
        f"{'run':<16}{'engine':<10}{'ctx':>5}{'load':>16}{'prefill':>16}{'decode':>16}"
        f"{'peak':>16}{'before':>16}",
    ]
    for r in mem["runs"]:
        plan, got = r["plan"], r["measured"]
        cells = [
            f"{_mib(plan[key])}/{_mib(got[phase]['high_water'])}"
            for phase, key in (
                ("load", "peak_load"),
                ("prefill", "peak_prefill"),
                ("decode", "steady_decode"),
            )
        ]
        measured_peak = max(got[p]["high_water"] for p in PHASES)
        cells.append(f"{_mib(plan['peak'])}/{_mib(measured_peak)}")
        before = r.get("before")
        if before:
            was = max(measured_peak, before["load"]["high_water"])
            cells.append(f"{_mib(before['plan']['peak'])}/{_mib(was)}")
        else:
            cells.append("-")
        lines.append(
            f"{r['name']:<16}{r['engine']:<10}{r['context']:>5}"
            + "".join(f"{c:>16}" for c in cells)
        )
    kv = doc["kv_reuse"]
    lines += [
        "",
        f"time to first token, {kv['new_tokens']} new tokens after a "
        f"{kv['conversation_tokens']}-token conversation ({kv['model']['preset']}, ms)",
        f"{'run':<16}{'with reuse':>26}{'from scratch':>26}",
    ]
    for r in kv["runs"]:
        reuse = (
            f"{r['reuse_ttft_ms']:.1f} ({r['reuse_ttft_ms_min']:.1f}-{r['reuse_ttft_ms_max']:.1f})"
        )
        scratch = (
            f"{r['scratch_ttft_ms']:.1f} ({r['scratch_ttft_ms_min']:.1f}-"
            f"{r['scratch_ttft_ms_max']:.1f})"
        )
        lines.append(f"{r['name']:<16}{reuse:>26}{scratch:>26}")
    return "\n".join(lines)
