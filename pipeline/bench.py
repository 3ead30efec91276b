"""`nox -s bench`: lane benchmarks, all in one run on this machine (results are never asserted).

Measures, side by side: q8 matvec GB/s of the scalar and simd128 kernels (tests/lanes/harness
built with each lane's flags); per lane (scalar, simd128, threads with 1 and 2 workers, node;
and the native scalar binary) the prefill of a 128-token prompt (tokens/s and time to first
token) and decode tokens/s of the `bench` model; read bandwidth with 1 and 2 threads, whose best
gives the roofline (bandwidth / weight bytes read per token). Every figure is the median of
`--reps` (>= 5) interleaved repetitions — each repetition measures every figure once, in a fixed
order — printed with its min-max. Writes build/bench/lanes-<utc>.json and lanes-latest.json
(`tinyrustlm.bench.v2`, verify/formats/bench.py); `--compare OLD.json` prints each figure's
ratio to a saved run and flags changes beyond the measured spreads.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pipeline.bench_format import BENCH_SCHEMA, BenchDocument
from pipeline.bench_stats import Target, compare, compare_table, figures_of, spread, target_rows
from pipeline.errors import PipelineError
from pipeline.io.atomic import write_atomic
from pipeline.io.inputs import load_json, parse_output
from pipeline.lanebuild.driver import build_lanes
from pipeline.modelpack import PRESETS, pack, tensor_plan
from pipeline.toolchain import nodejs
from pipeline.tree.lanes import Lane
from pipeline.tree.snapshot import read_tree
from verify.errors import VerifyError
from verify.inputs import read_regular_file

REPO_ROOT = Path(__file__).resolve().parent.parent
SCHEMA = BENCH_SCHEMA
HARNESS_DIR = Path("tests/lanes/harness")
RUNNER = Path(__file__).resolve().parent / "bench_lanes.mjs"
MODEL_PRESET, MODEL_SEED = "bench", 7
# model tier -> preset: both tiers run in the same repetitions (same weights; CONTRACT.md §10)
TIER_PRESETS = {"f32": MODEL_PRESET, "int8": "bench-int8"}
# run names of the integer tier: the lane's run name + this suffix
INT8_SUFFIX = "-int8"
MIN_REPS = 5
# 127 bytes + BOS = the 128-token prompt of the prefill figures
PROMPT_TEXT = (
    "Tiled prefill reads every weight row once per tile of tokens, so a long prompt costs "
    "fewer passes over the weights than decode."
)
BOS = 256


class BenchError(PipelineError):
    """A benchmark step could not run (missing tool, failed build, runner error)."""


# q8 matvec shapes: one bench-model matrix read from cache (w_gate, 2.9 MB) and one streamed
# from memory (72 MiB, as decode streams the whole model every token).
MATVEC_SHAPES = (
    {"name": "w_gate-2816x1024", "rows": 2816, "cols": 1024, "reps": 40},
    {"name": "stream-16384x4096", "rows": 16384, "cols": 4096, "reps": 4},
)

# The targets (policy as data): figure names refer to the result rows below
# (pipeline.bench_stats.figures_of).
TARGETS = (
    Target(
        "simd128 / scalar q8 matvec (cache)",
        "kernel:simd128:w_gate-2816x1024",
        "kernel:scalar:w_gate-2816x1024",
        5.0,
    ),
    Target(
        "simd128 / scalar q8 matvec (stream)",
        "kernel:simd128:stream-16384x4096",
        "kernel:scalar:stream-16384x4096",
        5.0,
    ),
    Target("simd128 / scalar decode", "run:simd128", "run:scalar", 2.5),
    Target("simd128 prefill / decode", "prefill:simd128", "run:simd128", 4.0),
    Target("threads(2) / threads(1) decode", "run:threads-2", "run:threads-1", 1.8),
    Target("threads(1) / simd128 decode", "run:threads-1", "run:simd128", 0.95),
    Target("threads(2) decode / roofline", "run:threads-2", "roofline", 0.7),
    # the integer tier (issue 25)
    Target("int8 / f32 simd128 decode", "run:simd128-int8", "run:simd128", 1.6),
    Target("int8 simd128 prefill / decode", "prefill:simd128-int8", "run:simd128-int8", 4.0),
    Target(
        "int8 simd128 / scalar q8 mv (stream)",
        "kernel:simd128:stream-16384x4096-int8",
        "kernel:scalar:stream-16384x4096",
        5.0,
    ),
    Target("int8 threads(2) / threads(1) decode", "run:threads-2-int8", "run:threads-1-int8", 1.9),
    Target("int8 simd128 decode / 1-thread probe", "run:simd128-int8", "roofline:1-thread", 0.7),
)

PROBE_THREADS = (1, 2)


def measured_lanes(lanes: list[Lane]) -> tuple[list[Lane], Lane]:
    """The wasm lanes with a `bench` entry (lanes.toml order) and the one native lane."""
    wasm = [lane for lane in lanes if lane.bench is not None and lane.kind == "wasm"]
    native = [lane for lane in lanes if lane.bench is not None and lane.kind == "native"]
    if not wasm or len(native) != 1:
        raise BenchError("lanes.toml must give `bench` to wasm lanes and to one native lane",
                         where="manifests/lanes.toml")  # fmt: skip
    return wasm, native[0]


def build_kernel_harness(repo_root: Path, lane: Lane) -> Path:
    """tests/lanes/harness compiled with `lane`'s target features (kernels only, never shipped)."""
    scratch = repo_root / "build" / ".scratch" / "harness"
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(scratch / "home"),
        "CARGO_HOME": str(scratch / "cargo-home"),
        "CARGO_TARGET_DIR": str(scratch / lane.id),
        "RUSTC": "/usr/bin/rustc",
        "CARGO_ENCODED_RUSTFLAGS": "\x1f".join([*lane.rustflags, "-C", f"linker={lane.linker}"]),
        "CARGO_NET_OFFLINE": "true",
    }
    argv = [
        "/usr/bin/cargo",
        "build",
        "--release",
        "--locked",
        "--offline",
        "--target",
        lane.target,
    ]
    done = subprocess.run(
        argv,
        cwd=repo_root / HARNESS_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if done.returncode != 0:
        raise BenchError(
            f"kernel harness build for {lane.id} failed:\n{done.stderr[-3000:]}",
            where=str(HARNESS_DIR),
        )
    return scratch / lane.id / lane.target / "release" / "tinyrustlm_kernel_harness.wasm"


def _model_bytes(path: Path) -> bytes:
    try:
        return read_regular_file(path, "model")  # never a FIFO or device, never unbounded
    except VerifyError as exc:
        raise PipelineError(f"{exc.message} [{exc.error_id}]", where=str(path)) from None


def bench_model(repo_root: Path, preset: str = MODEL_PRESET) -> tuple[Path, str]:
    """build/models/PRESET.trlm (re-packed when missing or not the preset's bytes)."""
    data = pack(PRESETS[preset], MODEL_SEED)
    digest = hashlib.sha256(data).hexdigest()
    path = repo_root / "build" / "models" / f"{preset}.trlm"
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
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
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


def _with_spread(target: dict[str, Any], key: str, samples: list[float]) -> None:
    s = spread(samples)
    target[key], target[f"{key}_min"], target[f"{key}_max"] = s["median"], s["min"], s["max"]
    target[f"{key}_samples"] = s["samples"]


def summarize(reps: list[dict[str, Any]], weights: int, n_prompt: int) -> dict[str, Any]:
    """Medians and spreads of the repetitions (each: the runner's document with the native run
    appended to `runs`), effective bandwidth, roofline fractions and the targets."""
    kernels: dict[str, dict[str, Any]] = {}
    for lane, shapes in reps[0]["kernels"].items():
        kernels[lane] = {}
        for shape, first in shapes.items():
            m: dict[str, Any] = {"weight_bytes": first["weight_bytes"]}
            for key in ("gbps", "ms_per_matvec"):
                _with_spread(m, key, [r["kernels"][lane][shape][key] for r in reps])
            kernels[lane][shape] = m
    bandwidth: dict[str, Any] = {}
    for threads in reps[0]["bandwidth_gbps"]:
        bandwidth[threads] = {}
        _with_spread(bandwidth[threads], "gbps", [r["bandwidth_gbps"][threads] for r in reps])
    best = max(bandwidth.values(), key=lambda b: b["gbps"]) if bandwidth else None
    roof: dict[str, Any] = {}
    if best:
        roof = {
            "roofline_tokens_per_s": best["gbps"] * 1e9 / weights,
            "roofline_tokens_per_s_min": best["gbps_min"] * 1e9 / weights,
            "roofline_tokens_per_s_max": best["gbps_max"] * 1e9 / weights,
        }
    one = bandwidth.get("1")
    if one:
        roof |= {
            "roofline_1thread_tokens_per_s": one["gbps"] * 1e9 / weights,
            "roofline_1thread_tokens_per_s_min": one["gbps_min"] * 1e9 / weights,
            "roofline_1thread_tokens_per_s_max": one["gbps_max"] * 1e9 / weights,
        }
    runs, prefill_runs = [], []
    for i, first in enumerate(reps[0]["runs"]):
        series = [r["runs"][i] for r in reps]
        run = {k: first[k] for k in ("name", "workers") if k in first}
        run |= {k: first[k] for k in ("lane", "module_sha256") if k in first}
        _with_spread(run, "tokens_per_s", [1000.0 / r["decode_ms"] for r in series])
        run["decode_ms_median"] = spread([r["decode_ms"] for r in series])["median"]
        run["effective_gbps"] = run["tokens_per_s"] * weights / 1e9
        roofline = roof.get("roofline_tokens_per_s")
        run["roofline_fraction"] = run["tokens_per_s"] / roofline if roofline else None
        runs.append(run)
        pre: dict[str, Any] = {k: run[k] for k in ("name", "workers", "module_sha256") if k in run}
        pre["prompt_tokens"] = n_prompt
        _with_spread(pre, "tokens_per_s", [n_prompt * 1000.0 / r["prefill_ms"] for r in series])
        _with_spread(pre, "prefill_ms", [r["prefill_ms"] for r in series])
        _with_spread(pre, "ttft_ms", [r["ttft_ms"] for r in series])
        prefill_runs.append(pre)
    doc: dict[str, Any] = {
        "kernels": kernels,
        "bandwidth": bandwidth,
        "bandwidth_gbps": best["gbps"] if best else None,
        **roof,
        "runs": runs,
        "prefill_runs": prefill_runs,
    }
    doc["targets"] = target_rows(figures_of(doc), TARGETS)
    return doc


def _range(obj: dict[str, Any], key: str, fmt: str = ".1f") -> str:
    return f"{obj[key]:{fmt}} ({obj[f'{key}_min']:{fmt}}-{obj[f'{key}_max']:{fmt}})"


def table(doc: dict[str, Any]) -> str:
    model, machine = doc["model"], doc["machine"]
    reps = doc["method"]["reps"]
    lines = [
        f"bench model: {model['preset']} ({model['weight_bytes_per_token'] / 1e6:.1f} MB of "
        f"weights per token, context {model['context']}); medians of {reps} interleaved "
        f"repetitions (min-max); load {machine['load_average']}",
        "",
        f"{'read bandwidth':<24}{'GB/s':>24}",
    ]
    for threads, b in doc["bandwidth"].items():
        lines.append(f"{threads + ' thread(s)':<24}{_range(b, 'gbps'):>24}")
    if doc.get("roofline_tokens_per_s"):
        lines.append(f"{'roofline tok/s':<24}{_range(doc, 'roofline_tokens_per_s', '.0f'):>24}")
    if doc.get("roofline_1thread_tokens_per_s"):
        one = _range(doc, "roofline_1thread_tokens_per_s", ".0f")
        lines.append(f"{'roofline 1 thread tok/s':<24}{one:>24}")
    lines += ["", f"{'q8 matvec kernel':<36}{'GB/s':>24}"]
    lines += [
        f"{lane + ' ' + shape:<36}{_range(m, 'gbps', '.2f'):>24}"
        for lane, shapes in doc["kernels"].items()
        for shape, m in shapes.items()
    ]
    lines += ["", f"{'decode':<16}{'tok/s':>24}{'ms/token':>10}{'eff. GB/s':>11}{'roofline':>10}"]
    for r in doc["runs"]:
        frac = r["roofline_fraction"]
        lines.append(
            f"{r['name']:<16}{_range(r, 'tokens_per_s'):>24}{r['decode_ms_median']:>10.2f}"
            f"{r['effective_gbps']:>11.2f}{'' if frac is None else f'{frac:>9.0%}':>10}"
        )
    n = doc["method"]["prompt_tokens"]
    lines += ["", f"{f'prefill ({n} tokens)':<24}{'tok/s':>24}{'time to first token ms':>28}"]
    for r in doc["prefill_runs"]:
        lines.append(f"{r['name']:<24}{_range(r, 'tokens_per_s'):>24}{_range(r, 'ttft_ms'):>28}")
    lines += ["", f"{'target':<34}{'want':>7}{'got':>8}{'range':>16}  met"]
    for t in doc["targets"]:
        got = "-" if t["measured"] is None else f"{t['measured']:.2f}"
        rng = "" if t["measured_range"] is None else "{:.2f}-{:.2f}".format(*t["measured_range"])
        lines.append(f"{t['target']:<34}{t['at_least']:>7.2f}{got:>8}{rng:>16}  {t['met']}")
    lines.append("modules: " + ", ".join(f"{k} {v[:16]}" for k, v in doc["modules"].items()))
    return "\n".join(lines)


def _runner_config(
    repo_root: Path, tokens: int
) -> tuple[dict[str, Any], Lane, Path, dict[str, str]]:
    """The runner's configuration, the native lane and its binary, each tier's model SHA-256."""
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
    }
    digests = {tier: digest for tier, (_, digest) in models.items()}
    return config, native_lane, artifacts[native_lane.id], digests


def run_bench(repo_root: Path, tokens: int, reps: int, say: Any = print) -> dict[str, Any]:
    if reps < MIN_REPS:
        raise BenchError(f"--reps {reps} < {MIN_REPS}: a median needs repetitions", where="--reps")
    say("building lanes and kernel harnesses (cached when unchanged) ...")
    config, native_lane, native_binary, digests = _runner_config(repo_root, tokens)
    assert native_lane.bench is not None  # measured_lanes picked it for its `bench`
    native_name = native_lane.bench.runs[0].name
    load_before = os.getloadavg()
    samples: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        cfg_path = Path(tmp) / "bench.json"
        cfg_path.write_text(json.dumps(config))
        for rep in range(reps):
            # one repetition = every figure once, wasm lanes then native: drift and load
            # bursts spread over all figures instead of biasing one
            say(f"repetition {rep + 1}/{reps} ...")
            done = subprocess.run(
                [str(nodejs.executable()), str(RUNNER), str(cfg_path)],
                capture_output=True,
                text=True,
                timeout=3600,
                check=False,
            )
            if done.returncode != 0:
                raise BenchError(f"bench runner failed:\n{done.stderr[-3000:]}", where=str(RUNNER))
            raw = parse_output(done.stdout, "node bench output")
            for tier, model_path in config["models"].items():
                name = native_name + ("" if tier == "f32" else INT8_SUFFIX)
                raw["runs"].append(native_run(native_binary, Path(model_path), tokens, name))
            samples.append(raw)
    weights = weight_bytes_per_token()
    modules = {r["name"]: r["module_sha256"] for r in samples[0]["runs"] if "module_sha256" in r}
    modules[native_name] = hashlib.sha256(native_binary.read_bytes()).hexdigest()
    modules[native_name + INT8_SUFFIX] = modules[native_name]  # one binary runs both tiers
    for run in samples[0]["runs"]:
        run.setdefault("module_sha256", modules.get(run["name"]))
    preset = PRESETS[MODEL_PRESET]
    return {
        "schema": SCHEMA,
        "version": 2,
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
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tokens", type=int, default=32, help="decode steps per repetition")
    parser.add_argument(
        "--reps", type=int, default=MIN_REPS, help=f"interleaved repetitions (>= {MIN_REPS})"
    )
    parser.add_argument(
        "--compare", type=Path, metavar="OLD.json", help="a saved run to compare the new one with"
    )


def _load_old(path: Path) -> dict[str, Any]:
    doc = load_json(path, "json")  # a regular file, bounded, strict JSON (typed errors)
    if not isinstance(doc, dict) or not str(doc.get("schema", "")).startswith("tinyrustlm.bench."):
        raise BenchError("not a tinyrustlm.bench document", where=f"{path}: schema")
    return doc


def run(args: argparse.Namespace) -> int:
    old = _load_old(args.compare) if args.compare else None  # refuse before measuring
    doc = run_bench(REPO_ROOT, args.tokens, args.reps)
    BenchDocument.model_validate(doc)  # the schema'd format, before anything is written
    out = REPO_ROOT / "build" / "bench"
    text = json.dumps(doc, indent=2, sort_keys=True).encode() + b"\n"
    stamp = doc["generated_utc"].replace(":", "").replace("-", "")
    write_atomic(out / f"lanes-{stamp}.json", text)
    write_atomic(out / "lanes-latest.json", text)
    print(table(doc))
    if old is not None:
        print(f"\ncompared with {args.compare}:")
        print(compare_table(compare(old, doc)))
    print(f"\nwrote {out / 'lanes-latest.json'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.bench", description=__doc__)
    add_arguments(parser)
    try:
        return run(parser.parse_args(argv))
    except PipelineError as e:
        print(e.diagnostics(), file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
