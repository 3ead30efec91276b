"""pipeline/bench's arithmetic on made-up repetitions (the bench itself is never asserted):
medians with min-max, targets as ratios of the right figures, the schema'd document, and
`--compare` flagging only changes beyond the measured spreads."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError

from pipeline.bench.document import BenchDocument
from pipeline.bench.environment import INT8_SUFFIX, stamp_runs
from pipeline.bench.lanes import (
    SCHEMA,
    measured_lanes,
    prompt_tokens,
    weight_bytes_per_token,
)
from pipeline.bench.stats import compare
from pipeline.bench.summary import TARGETS, summarize, table
from pipeline.modelpack import PRESETS, q8_weight_bytes, tensor_plan
from pipeline.tree.lanes import load_lanes
from tests.crates.lanes.conftest import REPO_ROOT

SHAPES = ("w_gate-2816x1024", "stream-16384x4096")
SHA = "ab" * 32
# decode tok/s per run name in repetition 0; later repetitions scale every figure by FACTORS
DECODE = {"scalar": 10.0, "simd128": 30.0, "threads-1": 30.0, "threads-2": 54.0, "native": 12.5}
FACTORS = (1.0, 0.9, 1.1, 1.0, 0.8)


def _rep(f: float) -> dict[str, Any]:
    kernels = {
        lane: {s: {"gbps": gbps * f, "ms_per_matvec": 1.0 / f, "weight_bytes": 1} for s in SHAPES}
        for lane, gbps in (("scalar", 2.0), ("simd128", 11.0))
    }
    runs = [
        {
            "name": name if name != "native" else "native-scalar",
            "workers": 0,
            "module_sha256": SHA,
            "decode_ms": 1000 / (tps * f),
            "prefill_ms": 128 * 1000 / (4 * tps * f),  # prefill 4x decode
            "ttft_ms": 10.0 / f,
        }
        for name, tps in DECODE.items()
    ]
    bandwidth = {"1": 9.0 * f, "2": 10.0 * f}
    return {"node": "v20", "kernels": kernels, "bandwidth_gbps": bandwidth, "runs": runs}


MODEL_F32, MODEL_INT8 = "f3" * 32, "18" * 32
FACTS: dict[str, Any] = {
    "native_names": frozenset({"native-scalar", "native-scalar" + INT8_SUFFIX}),
    "node_version": "v20.0.0 (V8 11.3)",
    "rustc_version": "rustc 1.96.0 (LLVM 22.1)",
    "model_digests": {"f32": MODEL_F32, "int8": MODEL_INT8},
    "context": 512,
    "warmup_tokens": 4,
    "os_arch": ("Linux 6.1.0", "x86_64"),
}


def _doc() -> dict[str, Any]:
    summary = summarize([_rep(f) for f in FACTORS], weights=10**8, n_prompt=128)
    return stamp_runs(_unstamped(summary), **FACTS)


def _unstamped(summary: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "version": 3,
        "generated_utc": "2026-11-30T00:00:00Z",
        "machine": {"platform": "x", "cpus": 2, "node": "v20", "load_average": [0.1] * 6},
        "model": {
            "preset": "bench",
            "seed": 7,
            "sha256": SHA,
            "weight_bytes_per_token": 10**8,
            "context": 512,
        },
        "modules": {"simd128": SHA},
        "method": {
            "reps": len(FACTORS),
            "tokens": 32,
            "prompt_tokens": 128,
            "statistic": "median",
            "matvec": [],
            "probe_bytes": 1,
            "probe_threads": [1, 2],
        },
        **summary,
    }


def test_weight_bytes_read_per_token() -> None:
    plan = tensor_plan(PRESETS["bench"])
    embedding = next(t for t in plan if t.kind == "token_embedding")
    weights = weight_bytes_per_token()
    # every q8 matrix once, except the embedding: one row of it
    assert q8_weight_bytes(PRESETS["bench"]) - embedding.stored_bytes < weights
    assert weights < q8_weight_bytes(PRESETS["bench"])


def test_the_prompt_is_128_tokens() -> None:
    assert len(prompt_tokens()) == 128


def test_every_target_names_runs_and_kernels_lanes_toml_measures() -> None:
    wasm, native = measured_lanes(load_lanes(REPO_ROOT / "manifests" / "lanes.toml").lane)
    runs = {run.name for lane in (*wasm, native) if lane.bench for run in lane.bench.runs}
    kernels = {lane.bench.kernels for lane in wasm if lane.bench and lane.bench.kernels}
    for t in TARGETS:
        for figure in (t.numerator, t.denominator):
            kind, _, rest = figure.partition(":")
            if kind in ("run", "prefill"):
                assert rest.removesuffix(INT8_SUFFIX) in runs, figure
            elif kind == "kernel":
                assert rest.split(":")[0] in kernels, figure
            else:
                assert figure in ("roofline", "roofline:1-thread")


def test_every_figure_is_the_median_with_its_spread() -> None:
    doc = _doc()
    simd = next(r for r in doc["runs"] if r["name"] == "simd128")
    assert simd["tokens_per_s"] == pytest.approx(30.0)  # median of 30 x (1, .9, 1.1, 1, .8)
    assert simd["tokens_per_s_min"] == pytest.approx(24.0)
    assert simd["tokens_per_s_max"] == pytest.approx(33.0)
    pre = next(r for r in doc["prefill_runs"] if r["name"] == "simd128")
    assert pre["tokens_per_s"] == pytest.approx(120.0)
    # roofline from the best probe (2 threads, 10 GB/s) over 10^8 bytes per token
    assert doc["bandwidth_gbps"] == pytest.approx(10.0)
    assert doc["roofline_tokens_per_s"] == pytest.approx(100.0)
    assert all(
        r["roofline_fraction"] == pytest.approx(r["tokens_per_s"] / 100.0) for r in doc["runs"]
    )
    BenchDocument.model_validate(doc)


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("simd128 / scalar decode", 3.0),
        ("simd128 prefill / decode", 4.0),
        ("threads(2) / threads(1) decode", 1.8),
        ("threads(1) / simd128 decode", 1.0),
        ("simd128 / scalar q8 matvec (cache)", 5.5),
        ("threads(2) decode / roofline", 0.54),
    ],
    ids=["decode", "prefill", "threads", "threads-1", "matvec", "roofline"],
)
def test_targets_are_ratios_of_the_right_figures(target: str, expected: float) -> None:
    got = {t["target"]: t for t in _doc()["targets"]}
    assert set(got) == {t.name for t in TARGETS}
    assert got[target]["measured"] == pytest.approx(expected)
    lo, hi = got[target]["measured_range"]
    assert lo <= expected <= hi
    assert got[target]["met"] is (expected >= got[target]["at_least"])


def test_table_lists_every_run_and_target() -> None:
    text = table(_doc())
    for name in ("scalar", "simd128", "threads-1", "threads-2", "native-scalar"):
        assert f"\n{name} " in text
    for t in TARGETS:
        assert t.name in text


def _scaled(doc: dict[str, Any], run: str, factor: float) -> dict[str, Any]:
    new = copy.deepcopy(doc)
    r = next(r for r in new["runs"] if r["name"] == run)
    for key in ("tokens_per_s", "tokens_per_s_min", "tokens_per_s_max"):
        r[key] *= factor
    return new


@pytest.mark.parametrize(
    ("factor", "flag"),
    [(1.0, ""), (1.2, ""), (1.5, "better"), (0.5, "worse")],
    ids=["same", "within-spread", "faster", "slower"],
)
def test_compare_flags_only_changes_beyond_the_spread(factor: float, flag: str) -> None:
    old = _doc()
    rows = {r["figure"]: r for r in compare(old, _scaled(old, "simd128", factor))}
    assert rows["run:simd128"]["ratio"] == pytest.approx(factor)
    assert rows["run:simd128"]["flag"] == flag
    assert rows["run:scalar"]["flag"] == ""


def test_compare_reads_a_v1_document() -> None:
    v1 = {"schema": "tinyrustlm.bench.v1", "runs": [{"name": "simd128", "tokens_per_s": 15.0}]}
    rows = {r["figure"]: r for r in compare(v1, _doc())}
    assert rows["run:simd128"]["ratio"] == pytest.approx(2.0)
    assert rows["run:simd128"]["flag"] == "better"


def test_every_run_says_what_it_ran_on() -> None:
    doc = _doc()
    BenchDocument.model_validate(doc)
    for run in (*doc["runs"], *doc["prefill_runs"]):
        on = run["ran_on"]
        native = run["name"].startswith("native")
        assert (on["engine"], on["engine_version"]) == (
            ("native", "rustc 1.96.0 (LLVM 22.1)") if native else ("node", "v20.0.0 (V8 11.3)")
        )
        assert (on["os"], on["arch"], on["context"]) == ("Linux 6.1.0", "x86_64", 512)
        assert on["module_sha256"] == run["module_sha256"]
        assert on["workers"] == run["workers"]
        assert on["cache"] == {
            "process": "fresh-per-repetition",
            "module": "native-binary" if native else "compiled-fresh",
            "model": "read-from-file",
            "warmup_tokens": 4,
        }
        tier = "int8" if run["name"].endswith(INT8_SUFFIX) else "f32"
        assert (on["tier"], on["model_sha256"]) == (tier, FACTS["model_digests"][tier])


def test_an_int8_run_names_the_int8_model() -> None:
    summary = summarize([_rep(f) for f in FACTORS], weights=10**8, n_prompt=128)
    for run in summary["runs"]:
        run["name"] += INT8_SUFFIX
    doc = stamp_runs(_unstamped(summary), **FACTS)
    assert {r["ran_on"]["model_sha256"] for r in doc["runs"]} == {MODEL_INT8}
    assert next(r for r in doc["runs"] if r["name"].startswith("native"))["ran_on"]["engine"] == (
        "native"
    )


@pytest.mark.parametrize(
    "field", ["engine", "engine_version", "os", "arch", "module_sha256", "model_sha256",
              "context", "workers", "cache"],
)  # fmt: skip
def test_a_run_that_does_not_say_what_it_ran_on_is_not_a_bench_document(field: str) -> None:
    doc = _doc()
    del doc["runs"][0]["ran_on"][field]
    with pytest.raises(ValidationError):
        BenchDocument.model_validate(doc)
    doc = _doc()
    del doc["prefill_runs"][0]["ran_on"]
    with pytest.raises(ValidationError):
        BenchDocument.model_validate(doc)
