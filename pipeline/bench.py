"""`nox -s bench`: lane benchmarks, all in one run on this machine (results are never asserted).

Measures, side by side: q8 matvec GB/s of the scalar and simd128 kernels (tests/lanes/harness
built with each lane's flags), end-to-end decode tokens/s of the `bench` model on the scalar,
simd128 and threads lanes (1 and 2 workers, node) and the native scalar binary, and a one-thread
read-bandwidth probe; the roofline is bandwidth / weight bytes read per token. Writes
build/bench/lanes-<utc>.json and build/bench/lanes-latest.json (`tinyrustlm.bench.v1`) and
prints a table with the issue's targets.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.atomicio import write_atomic
from pipeline.errors import PipelineError
from pipeline.inputs import parse_output
from pipeline.lanebuild.driver import build_lanes
from pipeline.lanebuild.lanes import Lane, load_lanes
from pipeline.modelpack import PRESETS, pack, tensor_plan
from verify.errors import VerifyError
from verify.inputs import read_regular_file

REPO_ROOT = Path(__file__).resolve().parent.parent
SCHEMA = "tinyrustlm.bench.v1"
HARNESS_DIR = Path("tests/lanes/harness")
RUNNER = Path(__file__).resolve().parent / "bench_lanes.mjs"
MODEL_PRESET, MODEL_SEED = "bench", 7


class BenchError(PipelineError):
    """A benchmark step could not run (missing tool, failed build, runner error)."""


@dataclass(frozen=True)
class Target:
    """One target of the issue: `measured` is the ratio named by `numerator / denominator`."""

    name: str
    numerator: str
    denominator: str
    at_least: float


# q8 matvec shapes: one bench-model matrix read from cache (w_gate, 2.9 MB) and one streamed
# from memory (72 MiB, as decode streams the whole model every token).
MATVEC_SHAPES = (
    {"name": "w_gate-2816x1024", "rows": 2816, "cols": 1024, "reps": 40},
    {"name": "stream-16384x4096", "rows": 16384, "cols": 4096, "reps": 4},
)

# The targets (policy as data): run/kernel names refer to the result rows below.
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
    Target("threads(2) / threads(1) decode", "run:threads-2", "run:threads-1", 1.7),
    Target("threads(2) decode / roofline", "run:threads-2", "roofline", 0.6),
)

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


def bench_model(repo_root: Path) -> tuple[Path, str]:
    """build/models/bench.trlm (re-packed when missing or not the preset's bytes)."""
    data = pack(PRESETS[MODEL_PRESET], MODEL_SEED)
    digest = hashlib.sha256(data).hexdigest()
    path = repo_root / "build" / "models" / f"{MODEL_PRESET}.trlm"
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


def native_decode(binary: Path, model: Path, tokens: int, rounds: int, name: str
                  ) -> dict[str, Any]:  # fmt: skip
    """Median decode step time of the native scalar binary (best of `rounds`)."""
    medians = []
    for _ in range(rounds):
        done = subprocess.run(
            [
                str(binary),
                "run",
                "--model",
                str(model),
                "--prompt",
                "Hello, world",
                "--seed",
                "0",
                "--max-tokens",
                str(tokens),
                "--temperature",
                "0",
                "--json",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode != 0:
            raise BenchError(f"native run failed: {done.stderr[-2000:]}", where=str(binary))
        decode_ms = parse_output(done.stdout, f"{binary} output")["decode_ms"]
        steps = sorted(decode_ms[1:])  # step 0 has no forward pass
        medians.append(steps[len(steps) // 2])
    ms = min(medians)
    return {
        "name": name,
        "workers": 0,
        "decode_ms_median": ms,
        "tokens_per_s": 1000.0 / ms,
        "rounds_ms": medians,
    }


def _ratio(rows: dict[str, float], t: Target) -> float | None:
    num, den = rows.get(t.numerator), rows.get(t.denominator)
    return None if not num or not den else num / den


def summarize(raw: dict[str, Any], native: dict[str, Any], weights: int) -> dict[str, Any]:
    """Adds effective bandwidth, roofline fractions and the targets to the runner's numbers."""
    bandwidth = raw["bandwidth_gbps"]
    roofline = bandwidth * 1e9 / weights if bandwidth else None
    runs = [*raw["runs"], native]
    for run in runs:
        run["effective_gbps"] = run["tokens_per_s"] * weights / 1e9
        run["roofline_fraction"] = run["tokens_per_s"] / roofline if roofline else None
    rows: dict[str, float] = {f"run:{r['name']}": r["tokens_per_s"] for r in runs}
    rows |= {
        f"kernel:{lane}:{shape}": m["gbps"]
        for lane, shapes in raw["kernels"].items()
        for shape, m in shapes.items()
    }
    if roofline:
        rows["roofline"] = roofline
    targets = []
    for t in TARGETS:
        measured = _ratio(rows, t)
        targets.append(
            {
                "target": t.name,
                "at_least": t.at_least,
                "measured": measured,
                "met": None if measured is None else measured >= t.at_least,
            }
        )
    return {
        "kernels": raw["kernels"],
        "bandwidth_gbps": bandwidth,
        "roofline_tokens_per_s": roofline,
        "runs": runs,
        "targets": targets,
    }


def table(doc: dict[str, Any]) -> str:
    model, machine = doc["model"], doc["machine"]
    lines = [
        f"bench model: {model['preset']} ({model['weight_bytes_per_token'] / 1e6:.1f} MB of "
        f"weights per token); one-thread read bandwidth {doc['bandwidth_gbps']:.1f} GB/s -> "
        f"roofline {doc['roofline_tokens_per_s']:.0f} tok/s; load {machine['load_average']}",
        "",
        f"{'q8 matvec kernel':<36}{'GB/s':>8}",
    ]
    lines += [
        f"{lane + ' ' + shape:<36}{m['gbps']:>8.2f}"
        for lane, shapes in doc["kernels"].items()
        for shape, m in shapes.items()
    ]
    lines += ["", f"{'decode':<16}{'tok/s':>8}{'ms/token':>10}{'eff. GB/s':>11}{'roofline':>10}"]
    for r in doc["runs"]:
        frac = r["roofline_fraction"]
        lines.append(
            f"{r['name']:<16}{r['tokens_per_s']:>8.1f}{r['decode_ms_median']:>10.2f}"
            f"{r['effective_gbps']:>11.2f}{'' if frac is None else f'{frac:>9.0%}':>10}"
        )
    lines += ["", f"{'target':<34}{'want':>7}{'got':>8}  met"]
    for t in doc["targets"]:
        got = "-" if t["measured"] is None else f"{t['measured']:.2f}"
        lines.append(f"{t['target']:<34}{t['at_least']:>7.2f}{got:>8}  {t['met']}")
    return "\n".join(lines)


def run_bench(repo_root: Path, tokens: int, rounds: int, say: Any = print) -> dict[str, Any]:
    if shutil.which("node") is None:
        raise BenchError("node is not installed", where="PATH")
    wasm_lanes, native_lane = measured_lanes(load_lanes(repo_root / "manifests/lanes.toml").lane)
    say("building lanes (cached when unchanged) ...")
    ids = [lane.id for lane in (*wasm_lanes, native_lane)]
    index = build_lanes(repo_root, lanes=ids, say=lambda _line: None)
    artifacts = {e.lane: repo_root / e.artifact for e in index.lanes}
    say("building the kernel harness for the lanes that name `kernels` ...")
    harness = {
        lane.bench.kernels: build_kernel_harness(repo_root, lane)
        for lane in wasm_lanes
        if lane.bench is not None and lane.bench.kernels is not None
    }
    model, digest = bench_model(repo_root)
    config = {
        "model": str(model),
        "tokens": tokens,
        "warmup": 4,
        "rounds": rounds,
        "prompt": "Hello, world",
        "harness": {k: str(v) for k, v in harness.items()},
        "runs": [
            {"name": run.name, "lane": str(artifacts[lane.id]), "workers": run.workers}
            for lane in wasm_lanes
            if lane.bench is not None
            for run in lane.bench.runs
        ],
        "matvec": list(MATVEC_SHAPES),
        "probe_bytes": 256 << 20,
    }
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        cfg_path = Path(tmp) / "bench.json"
        cfg_path.write_text(json.dumps(config))
        say("running the wasm lanes in node ...")
        done = subprocess.run(
            ["node", str(RUNNER), str(cfg_path)],
            capture_output=True,
            text=True,
            timeout=3600,
            check=False,
        )
    if done.returncode != 0:
        raise BenchError(f"bench runner failed:\n{done.stderr[-3000:]}", where=str(RUNNER))
    raw = parse_output(done.stdout, "node bench output")
    say("running the native scalar binary ...")
    assert native_lane.bench is not None  # measured_lanes picked it for its `bench`
    native = native_decode(artifacts[native_lane.id], model, tokens, rounds,
                           native_lane.bench.runs[0].name)  # fmt: skip
    weights = weight_bytes_per_token()
    doc = {
        "schema": SCHEMA,
        "version": 1,
        "generated_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "node": raw["node"],
            "load_average": [round(x, 2) for x in (*load_before, *os.getloadavg())],
        },
        "model": {
            "preset": MODEL_PRESET,
            "seed": MODEL_SEED,
            "sha256": digest,
            "weight_bytes_per_token": weights,
        },
        "method": {
            "tokens": tokens,
            "rounds": rounds,
            "statistic": "best round's median step",
            "matvec": config["matvec"],
            "probe_bytes": config["probe_bytes"],
        },
        **summarize(raw, native, weights),
    }
    return doc


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tokens", type=int, default=32, help="decode steps per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per measurement (best kept)")


def run(args: argparse.Namespace) -> int:
    doc = run_bench(REPO_ROOT, args.tokens, args.rounds)
    out = REPO_ROOT / "build" / "bench"
    text = json.dumps(doc, indent=2, sort_keys=True).encode() + b"\n"
    stamp = doc["generated_utc"].replace(":", "").replace("-", "")
    write_atomic(out / f"lanes-{stamp}.json", text)
    write_atomic(out / "lanes-latest.json", text)
    print(table(doc))
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
