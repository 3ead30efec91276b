"""`tinyrustlm-release bench` (`nox -s bench`): run the lane bench (node, native, and Chromium
through js/loader.js unless `--no-browser`), write its document under build/bench/, print the
table and, with `--compare OLD.json`, each figure's ratio to a saved run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pipeline.bench.document import BenchDocument
from pipeline.bench.errors import BenchError
from pipeline.bench.lanes import MIN_REPS, REPO_ROOT, run_bench
from pipeline.bench.memory import memory_table
from pipeline.bench.stats import compare, compare_table
from pipeline.bench.summary import table
from pipeline.errors import PipelineError
from pipeline.io.atomic import write_atomic
from pipeline.io.inputs import load_json
from verify.shell.result import Outcome


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tokens", type=int, default=32, help="decode steps per repetition")
    parser.add_argument(
        "--reps", type=int, default=MIN_REPS, help=f"interleaved repetitions (>= {MIN_REPS})"
    )
    parser.add_argument(
        "--no-browser",
        action="store_true",
        help="leave out the Chromium runs (the bench model through js/loader.js, first load "
        "and cached), e.g. where Chromium is not installed",
    )
    parser.add_argument(
        "--compare", type=Path, metavar="OLD.json", help="a saved run to compare the new one with"
    )


def _load_old(path: Path) -> dict[str, Any]:
    doc = load_json(path, "json")  # a regular file, bounded, strict JSON (typed errors)
    if not isinstance(doc, dict) or not str(doc.get("schema", "")).startswith("tinyrustlm.bench."):
        raise BenchError("not a tinyrustlm.bench document", where=f"{path}: schema")
    return doc


def run(args: argparse.Namespace) -> Outcome:
    old = _load_old(args.compare) if args.compare else None  # refuse before measuring
    doc = run_bench(REPO_ROOT, args.tokens, args.reps, browser=not args.no_browser)
    BenchDocument.model_validate(doc)  # the schema'd format, before anything is written
    out = REPO_ROOT / "build" / "bench"
    text = json.dumps(doc, indent=2, sort_keys=True).encode() + b"\n"
    stamp = doc["generated_utc"].replace(":", "").replace("-", "")
    write_atomic(out / f"lanes-{stamp}.json", text)
    write_atomic(out / "lanes-latest.json", text)
    print(table(doc))
    print()
    print(memory_table(doc))
    if old is not None:
        print(f"\ncompared with {args.compare}:")
        print(compare_table(compare(old, doc)))
    print(f"\nwrote {out / 'lanes-latest.json'}")
    compared = None if args.compare is None else str(args.compare)
    return Outcome(0, {"document": str(out / "lanes-latest.json"), "compared_with": compared})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.bench.cli", description=__doc__)
    add_arguments(parser)
    try:
        return run(parser.parse_args(argv)).code
    except PipelineError as e:
        print(e.diagnostics(), file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
