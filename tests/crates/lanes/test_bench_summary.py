"""pipeline/bench's arithmetic on made-up repetitions (the bench itself is never asserted):
medians with min-max, targets as ratios of the right figures, the schema'd document, and
`--compare` flagging only changes beyond the measured spreads."""

from __future__ import annotations

import copy
import json
from pathlib import Path
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
from pipeline.bench.memory import (
    KV_REUSE_PRESET,
    WasmRun,
    kv_reuse_section,
    loader_memory_row,
    memory_section,
    memory_table,
    node_memory_rows,
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


# the plan's parts in record order (as tr_plan_header's record and the loader give them)
PARTS = {
    "weights": 1000,
    "metadata": 10,
    "tokenizer": 0,
    "kv": 200,
    "activations": 50,
    "logits": 8,
    "decode_scratch": 13,
    "stacks_tls": 300,
    "transfer": 4,
    "load_copy": 0,
    "allocator": 66,
}


def _plan(context: int, load_copy: int = 0) -> dict[str, Any]:
    """A tr_plan_header result (abi.js planHeader) at `context` (K/V grows with it)."""
    parts = {**PARTS, "kv": PARTS["kv"] * context // 128, "load_copy": load_copy}
    steady = sum(parts.values()) - parts["load_copy"] - parts["transfer"]
    load = sum(parts[k] for k in ("weights", "metadata", "stacks_tls", "load_copy", "allocator"))
    largest = max(parts, key=parts.__getitem__)
    peaks = {"peakLoad": load, "peakPrefill": steady + parts["transfer"], "steadyDecode": steady}
    return {"code": 0, "parts": parts, **peaks, "peak": max(peaks.values()), "largest": largest}


def _phase(high_water: int) -> dict[str, int]:
    """One phase as memory.mjs prints it."""
    return {
        "heap": high_water - 300,
        "staticBase": 300,
        "measured": high_water,
        "memoryBytes": 4096,
    }


def _memory_mjs(contexts: tuple[int, ...]) -> dict[str, Any]:
    """memory.mjs's document: each phase measured 1% under its plan."""
    runs = []
    for c in contexts:
        plan, before = _plan(c), _plan(c, load_copy=1000)
        runs.append(
            {
                "context": c,
                "workers": 0,
                "decodeTokens": 8,
                "modelBytes": 1000,
                "plan": plan,
                "load": _phase(plan["peakLoad"] * 99 // 100),
                "prefill": _phase(plan["peakPrefill"] * 99 // 100),
                "decode": _phase(plan["steadyDecode"] * 99 // 100),
                "before": {"plan": before, "load": _phase(before["peakLoad"] * 99 // 100)},
            }
        )
    return {"runs": runs}


def _loader_phase(high_water: int) -> dict[str, int]:
    """One phase as js/loader.js measures it (lm.loadMemory, lm.memorySince())."""
    return {"heapPeak": high_water - 300, "staticBase": 300, "highWater": high_water,
            "memoryBytes": 1 << 28}  # fmt: skip


def _memory() -> dict[str, Any]:
    run = WasmRun("simd128", "simd128-wasm32", Path("m.wasm"), 0)
    rows = node_memory_rows(run, _memory_mjs((128, 512)))
    page = {  # the bench page (pipeline/bench/page/main.mjs) through the loader, threads lane
        "chosen_lane": "simd128-threads-wasm32",
        "context": 512,
        "memory": {
            "plan": {**_plan(512), "workers": 2, "budget": 1 << 30},
            "load": _loader_phase(_plan(512)["peakLoad"]),
            "prefill": _loader_phase(_plan(512)["peakPrefill"]),
            "decode": _loader_phase(_plan(512)["steadyDecode"]),
            "prompt_tokens": 128,
            "decode_tokens": 36,
        },
    }
    rows.append(loader_memory_row("chromium", "chromium", page))
    model = {"preset": "bench", "sha256": MODEL_F32, "file_bytes": 1000, "max_context": 512}
    return memory_section(model, [128, 512], rows)


def _kv_reuse() -> dict[str, Any]:
    samples = [
        [
            {
                "name": name,
                "workers": workers,
                "lane": "simd128-wasm32",
                "prompt_tokens": 528,
                "conversation_tokens": 512,
                "reuse": {"reused": 512, "recomputed": 16, "ttft_ms": 20.0 / f, "tokens": [1]},
                "scratch": {"reused": 0, "recomputed": 528, "ttft_ms": 600.0 / f, "tokens": [1]},
            }
            for name, workers in (("simd128", 0), ("threads-2", 2))
        ]
        for f in FACTORS
    ]
    return kv_reuse_section("b0" * 32, samples, {"simd128": SHA, "threads-2": SHA})


def _doc() -> dict[str, Any]:
    summary = summarize([_rep(f) for f in FACTORS], weights=10**8, n_prompt=128)
    return stamp_runs(_unstamped(summary), **FACTS)


def _unstamped(summary: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "version": 4,
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
        "memory": _memory(),
        "kv_reuse": _kv_reuse(),
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


def test_the_memory_section_stacks_every_part_by_context() -> None:
    """Per lane and context the eleven parts (a chart stacks them) and the three peaks, beside
    the measured high-water marks; node rows carry the load by copy (before issue 33)."""
    doc = _doc()
    BenchDocument.model_validate(doc)
    memory = doc["memory"]
    assert memory["part_names"] == list(PARTS)
    node = [r for r in memory["runs"] if r["engine"] == "node"]
    assert [(r["context"], r["prompt_tokens"], r["decode_tokens"]) for r in node] == [
        (128, 120, 8),
        (512, 504, 8),
    ]
    for r in memory["runs"]:
        plan = r["plan"]
        assert plan["peak_prefill"] == sum(plan["parts"].values()) - plan["parts"]["load_copy"]
        assert plan["parts"]["load_copy"] == 0
        for phase, key in (("load", "peak_load"), ("prefill", "peak_prefill")):
            assert r["measured"][phase]["high_water"] <= plan[key]
    assert node[1]["plan"]["parts"]["kv"] == 4 * node[0]["plan"]["parts"]["kv"]
    assert all(r["before"]["plan"]["parts"]["load_copy"] == 1000 for r in node)
    browser = next(r for r in memory["runs"] if r["engine"] == "chromium")
    assert (browser["lane"], browser["workers"], "before" in browser) == (
        "simd128-threads-wasm32",
        2,
        False,
    )
    printed = memory_table(doc)
    assert "simd128" in printed and "chromium" in printed and "threads-2" in printed


@pytest.mark.parametrize("where", ["a part left out", "a part of another name", "a phase"])
def test_a_memory_row_that_cannot_be_stacked_is_not_a_bench_document(where: str) -> None:
    doc = _doc()
    row = doc["memory"]["runs"][1]
    if where == "a part left out":
        del row["plan"]["parts"]["kv"]
    elif where == "a part of another name":
        row["plan"]["parts"]["kv_cache"] = row["plan"]["parts"].pop("kv")
    else:
        del row["measured"]["decode"]
    with pytest.raises(ValidationError):
        BenchDocument.model_validate(doc)


def test_a_written_bench_document_reads_back() -> None:
    """cli.py writes sorted keys: the parts' order is `part_names`, not the JSON's."""
    doc = json.loads(json.dumps(_doc(), sort_keys=True))
    assert list(doc["memory"]["runs"][0]["plan"]["parts"]) == sorted(PARTS)
    BenchDocument.model_validate(doc)


def test_kv_reuse_times_are_medians_and_compare_as_times() -> None:
    doc = _doc()
    kv = doc["kv_reuse"]
    assert (kv["conversation_tokens"], kv["new_tokens"]) == (512, 16)
    assert kv["model"] == {
        "preset": KV_REUSE_PRESET.name,
        "sha256": "b0" * 32,
        "context": KV_REUSE_PRESET.max_context,
    }
    simd = next(r for r in kv["runs"] if r["name"] == "simd128")
    assert simd["reuse_ttft_ms"] == pytest.approx(20.0)  # median of 20 / (1, .9, 1.1, 1, .8)
    assert simd["reuse_ttft_ms_max"] == pytest.approx(25.0)
    assert simd["scratch_ttft_ms"] == pytest.approx(600.0)
    assert (simd["reused"], simd["recomputed"]) == (512, 16)
    slower = _doc()
    for run in slower["kv_reuse"]["runs"]:
        for key in ("reuse_ttft_ms", "reuse_ttft_ms_min", "reuse_ttft_ms_max"):
            run[key] *= 3
    rows = {r["figure"]: r for r in compare(doc, slower)}
    assert rows["ttft:kv-reuse:simd128"]["flag"] == "worse"  # a time: higher is worse
    assert rows["ttft:kv-scratch:simd128"]["flag"] == ""
