"""`tinyrustlm-release conformance BUNDLE --trusted-keys FILE [--allow-dev-key] [--engines ...]
[--cases N] --out FILE`.

Runs the conformance matrix on a bundle folder, on a model of each kernel tier (`small`, f32;
`small-int8`, the integer tier), and writes `tinyrustlm.conformance-report.v3`
(and the HTML matrix beside it). The browsers and node run every lane through the bundle's
js/loader.js, which verifies the signed manifest against the trusted keys; the signature is
checked here first (`TrustRefused`, exit 3, before any engine starts). Exit 0 when no row
failed, 1 when one did (the report is written either way: a failure is recorded, never
hidden), 3 on bad input.

A long run of one row (a rare failure, e.g. WebKit not isolated on one lane, int8):
`--engines webkit --lanes LANE --tiers int8 --isolation off --cases 5000 --timeout 7200`.
Such a report covers part of the matrix: a diagnostic, not one to sign.
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
from collections import Counter
from dataclasses import replace
from pathlib import Path

from pipeline.conformance import cases as case_gen
from pipeline.conformance.html import render
from pipeline.conformance.matrix import (
    ALL_ENGINES,
    LOADER_ENGINES,
    ModelFile,
    Options,
    run_matrix,
    run_speed,
)
from pipeline.conformance.subject import Subject, from_bundle
from pipeline.conformance.trust import check_signed_manifest, load_trust
from pipeline.errors import EXIT_CHECK_FAILED, EXIT_OK, EXIT_USAGE, PipelineError
from pipeline.io.atomic import write_atomic
from pipeline.modelpack import PRESETS, pack
from verify.formats.conformance import MODEL_TIERS, ConformanceReport, ModelTier
from verify.shell.arguments import add_trust_arguments
from verify.shell.progress import counted_lines, progress_bar
from verify.shell.result import Outcome

MODEL_SEED = 1
# tier -> the model preset its rows run (the same weights; format v1 and v2: CONTRACT.md §10)
TIER_MODELS: dict[ModelTier, str] = {"f32": "small", "int8": "small-int8"}


class UsageError(PipelineError):
    """Bad command-line values (argparse's own exit code)."""

    error_id = "conformance.usage"
    default_hint = "see `tinyrustlm-release conformance --help` for the accepted values"

    exit_code = EXIT_USAGE


def engine_names(text: str, allowed: tuple[str, ...], flag: str) -> list[str]:
    """A comma-separated list of known names, none empty (usage error otherwise)."""
    names = [n.strip() for n in text.split(",")] if text.strip() else []
    unknown = [n or "(empty)" for n in names if n not in allowed]
    if unknown or not names:
        what = f"unknown {', '.join(unknown)}" if unknown else "an empty list"
        raise UsageError(
            f"{flag}: {what}", where=flag, hint=f"a comma-separated list of {', '.join(allowed)}"
        )
    return names


def model_file(preset: str, folder: Path) -> tuple[Path, str]:
    data = pack(PRESETS[preset], MODEL_SEED)
    path = folder / f"{preset}.trlm"
    path.write_bytes(data)
    return path, hashlib.sha256(data).hexdigest()


def report_bytes(report: ConformanceReport) -> bytes:
    return (report.model_dump_json(by_alias=True, indent=2) + "\n").encode("utf-8")


ISOLATION = {"both": (True, False), "on": (True,), "off": (False,)}


def conformance(
    subject: Subject, opts: Options, tiers: tuple[str, ...] = MODEL_TIERS
) -> ConformanceReport:
    with tempfile.TemporaryDirectory(prefix="tinyrustlm-conformance-") as tmp:
        work = Path(tmp)
        models = [
            ModelFile(tier, p, *model_file(p, work))
            for tier, p in TIER_MODELS.items()
            if tier in tiers
        ]
        report = run_matrix(subject, models, opts, work)
        speed = []
        for preset in opts.speed_models:
            path, _ = model_file(preset, work)
            speed += run_speed(subject, path, preset, opts, work)
    return report.model_copy(update={"speed": speed})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("bundle", type=Path, help="a release bundle folder")
    add_trust_arguments(
        parser,
        "the loader verifies the manifest with it (needed unless only wasmtime/native run)",
        required=False,
    )
    parser.add_argument(
        "--engines",
        default=",".join(ALL_ENGINES),
        help=f"comma-separated (default: {','.join(ALL_ENGINES)})",
    )
    parser.add_argument(
        "--cases",
        type=int,
        default=case_gen.DEFAULT_CASES,
        help=f"number of seeded cases (default {case_gen.DEFAULT_CASES})",
    )
    parser.add_argument("--seed", type=int, default=case_gen.DEFAULT_SEED, help="case seed")
    parser.add_argument(
        "--lanes",
        default="",
        metavar="IDS",
        help="only these lanes' rows (comma-separated; the loader is still denied every other "
        "lane): with --tiers, --isolation and a large --cases, a long run of one row",
    )
    parser.add_argument(
        "--tiers",
        default=",".join(MODEL_TIERS),
        help=f"model tiers to run (default: {','.join(MODEL_TIERS)})",
    )
    parser.add_argument(
        "--isolation",
        choices=sorted(ISOLATION),
        default="both",
        help="browsers: with COOP/COEP (on), without (off) or both (default)",
    )
    parser.add_argument(
        "--speed",
        default="",
        metavar="MODELS",
        help="also measure speed on these models (e.g. small,bench)",
    )
    parser.add_argument("--speed-runs", type=int, default=5, help="runs per speed median")
    parser.add_argument(
        "--timeout", type=float, default=900.0, help="bound on one browser run of the page, seconds"
    )
    parser.add_argument("--out", type=Path, required=True, help="report JSON to write")
    parser.add_argument(
        "--html", type=Path, default=None, help="HTML matrix to write (default: --out with .html)"
    )


def run(args: argparse.Namespace) -> Outcome:
    if args.cases < 1 or args.speed_runs < 1:
        raise UsageError("--cases and --speed-runs must be >= 1", where="command line")
    engines = engine_names(args.engines, ALL_ENGINES, "--engines")
    tiers = tuple(engine_names(args.tiers, MODEL_TIERS, "--tiers"))
    subject = from_bundle(args.bundle)
    lanes: list[str] = []
    if args.lanes:
        known = tuple(w.lane for w in subject.wasm) + tuple(n.lane for n in subject.native)
        lanes = engine_names(args.lanes, known, "--lanes")
    trust = None
    if args.trusted_keys is not None:
        trust, root = load_trust(args.trusted_keys, args.allow_dev_key)
        check_signed_manifest(args.bundle, root, args.allow_dev_key)
    elif any(e in LOADER_ENGINES for e in engines):
        raise UsageError(
            "--trusted-keys is required: the browsers and node run the lanes through "
            "js/loader.js, which verifies the signed manifest",
            where="--trusted-keys",
            hint="a release's keygen writes NAME.trusted-keys.json; a development build's "
            "is .dev-keys/development.trusted-keys.json (with --allow-dev-key)",
        )
    opts = Options(
        engines=engines,
        trust=trust,
        cases=args.cases,
        seed=args.seed,
        speed_models=engine_names(args.speed, tuple(PRESETS), "--speed") if args.speed else (),
        speed_runs=args.speed_runs,
        page_timeout=args.timeout,
        isolation=ISOLATION[args.isolation],
        lanes=lanes,
    )
    with progress_bar(args, "conformance") as bar:
        report = conformance(subject, replace(opts, say=counted_lines(opts.say, bar)), tiers)
    write_atomic(args.out, report_bytes(report))
    html = args.html or args.out.with_suffix(".html")
    write_atomic(html, render(report).encode("utf-8"))
    failed = [r for r in report.rows if r.outcome == "fail"]
    for r in report.rows:
        iso = "" if r.isolated is None else (" isolated" if r.isolated else " not-isolated")
        kinds = Counter(c.failure for c in r.results if c.failure is not None)
        why = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
        print(
            f"  {r.engine + iso:<24} {r.lane:<26} {r.tier:<5} {r.outcome:<8} "
            f"{r.cases_passed}/{r.cases_passed + r.cases_failed} {why} {r.detail[:60]}".rstrip()
        )
    for s in report.speed:
        print(
            f"  speed {s.engine:<9} {s.lane:<26} {s.model:<6} first token "
            f"{s.ttft_ms_median:9.1f} ms ({s.ttft_ms_min:.1f}-{s.ttft_ms_max:.1f}), decode "
            f"{s.decode_tps_median:8.1f} tok/s ({s.decode_tps_min:.1f}-{s.decode_tps_max:.1f})"
        )
    print(f"report {args.out}, matrix {html}: {len(report.rows)} rows, {len(failed)} failed")
    return Outcome(
        EXIT_CHECK_FAILED if failed else EXIT_OK,
        {
            "report": str(args.out),
            "html": str(html),
            "rows": len(report.rows),
            "failed": [
                {
                    "engine": r.engine,
                    "isolated": r.isolated,
                    "lane": r.lane,
                    "tier": r.tier,
                    "detail": r.detail,
                }
                for r in failed
            ],
        },
    )
