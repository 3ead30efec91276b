"""Benchmark (not a test): the loader's SHA-256 of a model, MB/s per engine and size, in node
and in headless Chromium (issue 33, item 7: >= 500 MB/s in the browser).

    python -m pipeline.bench.hashing [--runs 5] [--sizes-mib 1,16,64] [--no-browser]

The same page code (hash_page/measure.mjs, over crates/wasm/js/sha256.js as the loader ships
it) runs in node and in Chromium (served from 127.0.0.1 with COOP/COEP by the conformance
harness, so a SharedArrayBuffer exists as in a threads lane). Engines: `js-streaming`
(Sha256.update over 64 KiB chunks: the hash while a download streams), `webcrypto-whole`
(sha256Whole: what the loader uses once the model is contiguous), `webcrypto-whole-shared`
(the same over a SharedArrayBuffer view, copy included); in Chromium (the Cache API; node has
none) a cached load: `cached-read-into-memory` (the loader's store entry read into an unshared
Wasm memory), `cached-webcrypto-in-place` (the cached load's one hash, where the copy landed)
and `cached-js-prepass` (the streaming pre-pass a cached load made before any lane until issue
33 item 7). Every digest is checked against WebCrypto's. Each figure is the median of --runs
runs (after one warm-up) with min..max. Writes build/bench/hash-latest.json (with LIMITS, the
cases no engine here lifts to 500 MB/s); wall-clock numbers are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pipeline.bench.errors import BenchError
from pipeline.bench.stats import spread
from pipeline.conformance import browsers, harness
from pipeline.errors import PipelineError
from pipeline.io import process
from pipeline.io.atomic import write_atomic
from pipeline.toolchain import nodejs

REPO = Path(__file__).resolve().parents[2]
PAGE = Path(__file__).resolve().parent / "hash_page"
SHA256_JS = REPO / "crates/wasm/js/sha256.js"
OUT = REPO / "build" / "bench"
SCHEMA = "tinyrustlm.bench-hash.v1"
TIMEOUT_SECONDS = 600.0
_NODE_DRIVER = """
const [measure, plan] = process.argv.slice(1);
const { measure: run } = await import(measure);
const rows = await run({ ...JSON.parse(plan), shared: true });
process.stdout.write(JSON.stringify({ rows }));
"""


# Where the loader hashes a model with the streaming JS hash (~100-160 MB/s) whatever this bench
# shows: platform limits, not the loader's choice (README, "Benchmarks").
LIMITS = (
    "threads lanes (shared Wasm memory): crypto.subtle.digest refuses a SharedArrayBuffer view "
    "and a copy would cost +1x the model's size (webcrypto-whole-shared times that copy), so "
    "the model is hashed with the streaming JS hash while it arrives, cached or not",
    "pages without crypto.subtle (an insecure context, e.g. plain http: off localhost): no "
    "WebCrypto at all, so every model is hashed with the streaming JS hash",
)


def _figures(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"engine": r["engine"], "bytes": int(r["bytes"]), "mb_per_s": spread(r["mb_per_s"])}
        for r in rows
    ]


def run_node(plan: dict[str, Any]) -> dict[str, Any]:
    """The page code in node (the loader's modules laid out as the page serves them)."""
    with tempfile.TemporaryDirectory(prefix="trlm-hash-") as tmp:
        (Path(tmp) / "js").mkdir()
        (Path(tmp) / "page").mkdir()
        shutil.copy(SHA256_JS, Path(tmp) / "js/sha256.js")
        shutil.copy(PAGE / "measure.mjs", Path(tmp) / "page/measure.mjs")
        exe = str(nodejs.executable())
        page = (Path(tmp) / "page/measure.mjs").as_uri()
        argv = [exe, "--input-type=module", "-e", _NODE_DRIVER, "--", page, json.dumps(plan)]
        done = process.run(argv, timeout=TIMEOUT_SECONDS)
        version = process.run([exe, "--version"])
    if done.returncode != 0:
        raise BenchError(f"the node hash bench failed: {done.stderr[-2000:]}", where="node")
    return {"version": version.stdout.strip(), "figures": _figures(json.loads(done.stdout)["rows"])}


def run_chromium(plan: dict[str, Any]) -> dict[str, Any]:
    """The page in headless Chromium, cross-origin isolated (a SharedArrayBuffer exists)."""
    b = browsers.browser("chromium")
    exe = b.executable()
    if exe is None:
        raise BenchError("Chromium is not installed", where="chromium", hint="pass --no-browser")
    routes: dict[str, harness.Route] = {
        harness.PAGE_ROOT + "index.html": PAGE / "index.html",
        harness.PAGE_ROOT + "measure.mjs": PAGE / "measure.mjs",
        harness.PAGE_ROOT + "plan.json": json.dumps(plan).encode(),
        "/js/sha256.js": SHA256_JS,
    }
    profile = Path(tempfile.mkdtemp(prefix="trlm-hash-"))  # short: Chromium's socket path
    try:
        version = browsers.browser_version(b, exe, profile)
        run = harness.run_page(
            b, exe, routes, isolated=True, timeout=TIMEOUT_SECONDS, workdir=profile
        )
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    if run.error is not None or run.done is None:
        raise BenchError(f"the Chromium hash page failed: {run.error}", where=str(PAGE))
    return {
        "version": version,
        "user_agent": str(run.done.get("userAgent", "")),
        "figures": _figures(run.done["rows"]),
    }


def table(doc: dict[str, Any]) -> str:
    lines = [f"{'engine':<10} {'hash':<26} {'MiB':>5}  {'MB/s median':>11}  min..max"]
    for name, run in doc["engines"].items():
        for f in run["figures"]:
            s = f["mb_per_s"]
            lines.append(
                f"{name:<10} {f['engine']:<26} {f['bytes'] >> 20:>5}  {s['median']:>11.0f}  "
                f"{s['min']:.0f}..{s['max']:.0f}"
            )
    lines.append("\nnot lifted by any engine here (platform limits: the streaming JS hash):")
    lines.extend(f"  - {limit}" for limit in doc.get("limits", LIMITS))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes-mib", default="1,16,64")
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args(argv)
    try:
        sizes = [int(s) << 20 for s in args.sizes_mib.split(",")]
        if args.runs < 1 or not sizes or min(sizes) <= 0:
            raise ValueError(args.sizes_mib)
    except ValueError:
        print("--runs >= 1 and --sizes-mib a comma list of positive integers", file=sys.stderr)
        return 2
    plan = {"sizes": sizes, "runs": args.runs}
    try:
        engines = {"node": run_node(plan)}
        if not args.no_browser:
            engines["chromium"] = run_chromium(plan)
    except PipelineError as e:
        print(e.diagnostics(), file=sys.stderr)
        return e.exit_code
    doc = {
        "schema": SCHEMA,
        "generated_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "runs": args.runs,
        "engines": engines,
        "limits": list(LIMITS),
    }
    write_atomic(OUT / "hash-latest.json", json.dumps(doc, indent=2, sort_keys=True).encode())
    print(table(doc))
    print(f"\nwrote {OUT / 'hash-latest.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
