"""The lane benchmark (`nox -s bench`, pipeline/bench/cli.py), all in one run on this machine
(results are never asserted).

Measures, side by side: q8 matvec GB/s of the scalar and simd128 kernels (pipeline/bench/harness
built with each lane's flags); per lane (scalar, simd128, threads with 1 and 2 workers, node;
and the native scalar binary) the prefill of a 128-token prompt (tokens/s and time to first
token) and decode tokens/s of the `bench` model; read bandwidth with 1 and 2 threads, whose best
gives the roofline (bandwidth / weight bytes read per token). Every figure is the median of
`--reps` (>= 5) interleaved repetitions — each repetition measures every figure once, in a fixed
order — with its min-max. Both kernel tiers run in the same repetitions: the `bench-int8` model
(the same weights in format v2, CONTRACT.md §10) on every lane as runs named `*-int8`, and the
harnesses' integer q8 matvec as shapes `*-int8`. Beside them (pipeline/bench/memory.py): the
memory plan and the measured peaks per wasm lane at contexts 128, 512 and the maximum (bytes,
measured once), and the time to first token of a follow-up turn with and without KV reuse (one
sample per lane, after the repetitions). `run_bench` returns the `tinyrustlm.bench.v4` document
(pipeline/bench/document.py); the node runner that measures the wasm lanes is lanes.mjs.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

from pipeline import paths
from pipeline.bench.browser import ChromiumBench, Plan, stage_bundle
from pipeline.bench.document import BENCH_SCHEMA
from pipeline.bench.environment import INT8_SUFFIX, host, stamp_runs
from pipeline.bench.errors import BenchError
from pipeline.bench.harness_build import build_kernel_harness
from pipeline.bench.memory import (
    KV_REUSE_PRESET,
    WasmRun,
    kv_reuse_repetition,
    kv_reuse_section,
    measure_memory,
    memory_contexts,
    memory_section,
)
from pipeline.bench.summary import summarize
from pipeline.io import process
from pipeline.io.atomic import write_atomic
from pipeline.io.digest import sha256_file
from pipeline.io.inputs import parse_output
from pipeline.lanebuild.driver import build_lanes
from pipeline.modelpack import PRESETS, Preset, pack, tensor_plan
from pipeline.toolchain import nodejs
from pipeline.tree.lanes import Lane
from pipeline.tree.snapshot import read_tree
from verify.errors import VerifyError
from verify.inputs import read_regular_file

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA = BENCH_SCHEMA
RUNNER = Path(__file__).resolve().parent / "lanes.mjs"
MODEL_PRESET, MODEL_SEED = "bench", 7
# model tier -> preset: both tiers run in the same repetitions (same weights; CONTRACT.md §10)
TIER_PRESETS = {"f32": MODEL_PRESET, "int8": "bench-int8"}
# run names of the integer tier: the lane's run name + this suffix
MIN_REPS = 5
# 127 bytes + BOS = the 128-token prompt of the prefill figures
PROMPT_TEXT = (
    "Tiled prefill reads every weight row once per tile of tokens, so a long prompt costs "
    "fewer passes over the weights than decode."
)
BOS = 256

# q8 matvec shapes: one bench-model matrix read from cache (w_gate, 2.9 MB) and one streamed
# from memory (72 MiB, as decode streams the whole model every token).
MATVEC_SHAPES = (
    {"name": "w_gate-2816x1024", "rows": 2816, "cols": 1024, "reps": 40},
    {"name": "stream-16384x4096", "rows": 16384, "cols": 4096, "reps": 4},
)

PROBE_THREADS = (1, 2)


def measured_lanes(lanes: list[Lane]) -> tuple[list[Lane], Lane]:
    """The wasm lanes with a `bench` entry (lanes.toml order) and the one native lane."""
    wasm = [lane for lane in lanes if lane.bench is not None and lane.kind == "wasm"]
    native = [lane for lane in lanes if lane.bench is not None and lane.kind == "native"]
    if not wasm or len(native) != 1:
        raise BenchError(
            "lanes.toml must give `bench` to wasm lanes and to one native lane",
            where=str(paths.LANES_FILE),
        )
    return wasm, native[0]


def _model_bytes(path: Path) -> bytes:
    try:
        return read_regular_file(path, "model")  # never a FIFO or device, never unbounded
    except VerifyError as exc:
        raise BenchError(f"{exc.message} [{exc.error_id}]", where=str(path)) from None


def bench_model(repo_root: Path, preset: str | Preset = MODEL_PRESET) -> tuple[Path, str]:
    """build/models/PRESET.trlm (re-packed when missing or not the preset's bytes)."""
    shape = PRESETS[preset] if isinstance(preset, str) else preset
    data = pack(shape, MODEL_SEED)
    digest = hashlib.sha256(data).hexdigest()
    path = repo_root / "build" / "models" / f"{shape.name}.trlm"
    if not path.is_file() or hashlib.sha256(_model_bytes(path)).hexdigest() != digest:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, data)
    return path, digest


def weight_bytes_per_token() -> int:
    """Bytes of weights one decode step reads: every tensor once, the embedding one row."""
    total = 0
    for t in tensor_plan(PRESETS[MODEL_PRESET]):
        if t.kind in ("rope_cos", "rope_sin"):
            continue  # one row of each per token
        total += t.stored_bytes // t.rows if t.kind == "token_embedding" else t.stored_bytes
    return total


def prompt_tokens() -> list[int]:
    return [BOS, *PROMPT_TEXT.encode()]


def native_run(binary: Path, model: Path, tokens: int, name: str) -> dict[str, Any]:
    """One repetition of the native scalar binary: prefill of the prompt and median decode step."""
    argv = [str(binary), "run", "--model", str(model), "--prompt", PROMPT_TEXT, "--seed", "0"]
    argv += ["--max-tokens", str(tokens), "--temperature", "0", "--json"]
    done = process.run(argv, timeout=600)
    if done.returncode != 0:
        raise BenchError(f"native run failed: {done.stderr[-2000:]}", where=str(binary))
    out = parse_output(done.stdout, f"{binary} output")
    steps = sorted(out["decode_ms"][1:])  # step 0 has no forward pass
    return {
        "name": name,
        "workers": 0,
        "decode_ms": steps[len(steps) // 2],
        "prefill_ms": out["prefill_ms"],
        "ttft_ms": out["prefill_ms"] + out["decode_ms"][0],
    }


def _runner_config(
    repo_root: Path, tokens: int
) -> tuple[dict[str, Any], Lane, Path, dict[str, str]]:
    """The runner's configuration, the native lane and its binary, each tier's model SHA-256
    (and `wasm_lanes`: the measured wasm lanes' ids, in lanes.toml order)."""
    nodejs.executable()  # before any build: a missing node fails fast
    tree = read_tree(repo_root)
    wasm_lanes, native_lane = measured_lanes(tree.lanes.lane)
    ids = [lane.id for lane in (*wasm_lanes, native_lane)]
    index = build_lanes(tree, lanes=ids, say=lambda _line: None)
    artifacts = {e.lane: repo_root / e.artifact for e in index.lanes}
    if any(i not in artifacts for i in ids):
        raise BenchError("a bench lane failed to build", where="build/index.json")
    harness = {
        lane.bench.kernels: build_kernel_harness(repo_root, lane)
        for lane in wasm_lanes
        if lane.bench is not None and lane.bench.kernels is not None
    }
    models = {tier: bench_model(repo_root, preset) for tier, preset in TIER_PRESETS.items()}
    config = {
        "models": {tier: str(path) for tier, (path, _) in models.items()},
        "tokens": tokens,
        "warmup": 4,
        "prompt_tokens": prompt_tokens(),
        "harness": {k: str(v) for k, v in harness.items()},
        "runs": [
            {
                "name": run.name + ("" if tier == "f32" else INT8_SUFFIX),
                "lane": str(artifacts[lane.id]),
                "workers": run.workers,
                "tier": tier,
            }
            for tier in TIER_PRESETS
            for lane in wasm_lanes
            if lane.bench is not None
            for run in lane.bench.runs
        ],
        "matvec": list(MATVEC_SHAPES),
        "probe_bytes": 256 << 20,
        "probe_threads": list(PROBE_THREADS),
        "wasm_lanes": [lane.id for lane in wasm_lanes],
        # the f32 runs again, for the memory and KV-reuse sections (pipeline/bench/memory.py)
        "wasm_runs": [
            {
                "name": run.name,
                "lane": lane.id,
                "module": str(artifacts[lane.id]),
                "workers": run.workers,
            }
            for lane in wasm_lanes
            if lane.bench is not None
            for run in lane.bench.runs
        ],
    }
    digests = {tier: digest for tier, (_, digest) in models.items()}
    digests["rustc"] = f"rustc {tree.lock.rustc.release} (LLVM {tree.lock.rustc.llvm_version})"
    return config, native_lane, artifacts[native_lane.id], digests


def _node_repetition(cfg_path: Path) -> dict[str, Any]:
    """One run of the node runner (lanes.mjs): every node figure once."""
    done = process.run([str(nodejs.executable()), str(RUNNER), str(cfg_path)], timeout=3600)
    if done.returncode != 0:
        raise BenchError(f"bench runner failed:\n{done.stderr[-3000:]}", where=str(RUNNER))
    raw: dict[str, Any] = parse_output(done.stdout, "node bench output")
    return raw


def _browser_bench(
    repo_root: Path, config: dict[str, Any], digests: dict[str, str], folder: Path, say: Any
) -> ChromiumBench:
    """The Chromium runs' bench (pipeline/bench/browser.py), primed: the measured wasm lanes
    staged as a bundle signed by the development key, the f32 `bench` model."""
    say("staging a signed bundle of the wasm lanes and priming Chromium's loader cache ...")
    staged = stage_bundle(repo_root, config["wasm_lanes"], folder)
    plan = Plan(
        staged=staged,
        model=Path(config["models"]["f32"]),
        model_sha256=digests["f32"],
        prompt_tokens=config["prompt_tokens"],
        warmup=int(config["warmup"]),
        tokens=int(config["tokens"]),
    )
    chromium = ChromiumBench.start(plan)
    try:
        chromium.prime()
    except BaseException:
        chromium.close()
        raise
    return chromium


def run_bench(
    repo_root: Path, tokens: int, reps: int, say: Any = print, browser: bool = True
) -> dict[str, Any]:
    """The bench document; `browser`: with the Chromium runs through js/loader.js."""
    if reps < MIN_REPS:
        raise BenchError(f"--reps {reps} < {MIN_REPS}: a median needs repetitions", where="--reps")
    say("building lanes and kernel harnesses (cached when unchanged) ...")
    config, native_lane, native_binary, digests = _runner_config(repo_root, tokens)
    assert native_lane.bench is not None  # measured_lanes picked it for its `bench`
    native_name = native_lane.bench.runs[0].name
    wasm_runs = [
        WasmRun(r["name"], r["lane"], Path(r["module"]), r["workers"]) for r in config["wasm_runs"]
    ]
    kv_model = bench_model(repo_root, KV_REUSE_PRESET)
    samples: list[dict[str, Any]] = []
    preset = PRESETS[MODEL_PRESET]
    contexts = memory_contexts(preset.max_context)
    with tempfile.TemporaryDirectory() as tmp:
        chromium = _browser_bench(repo_root, config, digests, Path(tmp), say) if browser else None
        load_before = os.getloadavg()
        # bytes, the same every time: measured once, before the timed repetitions
        say(f"memory: plan and measured per lane at contexts {contexts} ...")
        memory_rows = measure_memory(wasm_runs, Path(config["models"]["f32"]), contexts)
        cfg_path = Path(tmp) / "bench.json"
        cfg_path.write_text(json.dumps(config))
        try:
            for rep in range(reps):
                # one repetition = every figure once, wasm lanes, native, then the browser:
                # drift and load bursts spread over all figures instead of biasing one
                say(f"repetition {rep + 1}/{reps} ...")
                raw = _node_repetition(cfg_path)
                for tier, model_path in config["models"].items():
                    name = native_name + ("" if tier == "f32" else INT8_SUFFIX)
                    raw["runs"].append(native_run(native_binary, Path(model_path), tokens, name))
                if chromium is not None:
                    raw["runs"] += chromium.repetition()
                samples.append(raw)
            browser_runs = chromium.facts() if chromium is not None else {}
            if chromium is not None:
                memory_rows += chromium.memory_rows()
            # once, after the repetitions: a 528-token prefill from scratch takes 15-75 s a lane
            say("KV reuse: time to first token of a follow-up turn, with and without reuse ...")
            kv_samples = [kv_reuse_repetition(wasm_runs, kv_model[0])]
        finally:
            if chromium is not None:
                chromium.close()
    weights = weight_bytes_per_token()
    modules = {r["name"]: r["module_sha256"] for r in samples[0]["runs"] if "module_sha256" in r}
    modules[native_name] = sha256_file(native_binary)
    modules[native_name + INT8_SUFFIX] = modules[native_name]  # one binary runs both tiers
    for run in samples[0]["runs"]:
        run.setdefault("module_sha256", modules.get(run["name"]))
    rustc = digests.pop("rustc")
    doc = {
        "schema": SCHEMA,
        "version": 4,
        "generated_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "node": samples[0]["node"],
            "load_average": [round(x, 2) for x in (*load_before, *os.getloadavg())],
        },
        "model": {
            "preset": MODEL_PRESET,
            "seed": MODEL_SEED,
            "sha256": digests["f32"],
            "weight_bytes_per_token": weights,
            "context": preset.max_context,
            # the same weights as format v2 (runs named *-int8): CONTRACT.md §10
            "tiers": {t: {"preset": p, "sha256": digests[t]} for t, p in TIER_PRESETS.items()},
        },
        "modules": modules,
        "method": {
            "reps": reps,
            "tokens": tokens,
            "prompt_tokens": len(config["prompt_tokens"]),
            "statistic": f"median of {reps} interleaved repetitions, with min and max",
            "matvec": config["matvec"],
            "probe_bytes": config["probe_bytes"],
            "probe_threads": config["probe_threads"],
        },
        **summarize(samples, weights, len(config["prompt_tokens"])),
        "memory": memory_section(
            {
                "preset": MODEL_PRESET,
                "sha256": digests["f32"],
                "file_bytes": Path(config["models"]["f32"]).stat().st_size,
                "max_context": preset.max_context,
            },
            contexts,
            memory_rows,
        ),
        "kv_reuse": kv_reuse_section(kv_model[1], kv_samples, modules),
    }
    node = samples[0]["node"] + (f" (V8 {samples[0]['v8']})" if samples[0].get("v8") else "")
    return stamp_runs(
        doc,
        native_names=frozenset({native_name, native_name + INT8_SUFFIX}),
        node_version=node,
        rustc_version=rustc,
        model_digests=digests,
        context=preset.max_context,
        warmup_tokens=int(config["warmup"]),
        os_arch=host(),
        browser_runs=browser_runs,
    )
