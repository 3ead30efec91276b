"""`nox -s mutants`: mutation testing of verify/ with mutmut (the modules and the fast test
subset are `[tool.mutmut]` in pyproject.toml), printing the score per file and every surviving
mutant by file, and writing them with the wall time to mutants/summary.json; then the
planted-bug regression list (tests/mutants/planted.py), which must be caught whole. The
mutation score is reported, not gated; a surviving mutant reviewed as equivalent is listed
with its reason in tests/mutants/equivalent.toml and counted apart.

    python -m tests.mutants.run [--full | --only GLOB ...] [--planted-only | --mutmut-only]
                                [--max-children N] [--js | --js-only]

Default (quick): only verify/bundle/dsse.py and verify/canonical.py are mutated (about 380
mutants, a few minutes); `--full` mutates every listed module (about 1,850 mutants, 955 of
them in the bundle verifier); `--only 'verify.bundle.*'` mutates the mutants whose
names match (one file, or one function: 'verify.bundle.document_check.x_check_sbom__*').
`--js` also mutates the loader's trust, fetch and cache code with Stryker (tests/mutants/js_run.py;
about 1,500 mutants), `--js-only` that alone; its files join the summary's `files`.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
import tomllib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from tests.mutants import js_run, planted

REPO_ROOT = Path(__file__).resolve().parents[2]
QUICK = ("verify.bundle.dsse.*", "verify.canonical.*")
LOG = REPO_ROOT / "mutants" / "run.log"
SUMMARY = REPO_ROOT / "mutants" / "summary.json"  # this run's scores per file and wall time
# surviving mutants reviewed as equivalent, each with its reason (keep it short)
EQUIVALENT = Path(__file__).with_name("equivalent.toml")
RESULT = re.compile(r"^\s+(\S+): (.+)$")
KILLED = {"killed", "caught by type check"}
NOT_RUN = {"not checked", "skipped"}


def module_of(mutant: str) -> str:
    """`verify.wasm.reader.xǁReaderǁu32__mutmut_3` -> `verify/wasm/reader.py`."""
    dotted = re.split(r"\.x[_ǁ]", mutant, maxsplit=1)[0]
    path = Path(*dotted.split("."))
    return f"{path}.py" if (REPO_ROOT / f"{path}.py").is_file() else f"{path}/__init__.py"


def mutmut(args: list[str], log: Path | None = None) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "mutmut", *args]
    if log is None:
        return subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    with log.open("w") as out:
        return subprocess.run(
            argv, cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT, text=True, check=False
        )


@dataclass(frozen=True)
class Equivalent:
    """A surviving mutant reviewed as equivalent: no input can tell it from the original."""

    name: str
    reason: str


def equivalents(path: Path = EQUIVALENT) -> dict[str, Equivalent]:
    rows = tomllib.loads(path.read_text(encoding="utf-8")).get("mutant", [])
    found = {row["name"]: Equivalent(row["name"], row["reason"]) for row in rows}
    if len(found) != len(rows) or not all(e.reason.strip() for e in found.values()):
        raise SystemExit(f"{path}: every mutant once, each with its reason")
    return found


def score(statuses: dict[str, str], equivalent: dict[str, Equivalent]) -> dict[str, Any]:
    """The summary of a run: totals, per file, survivors; reviewed equivalents that survived
    are counted apart (and stay in the total, so the raw score is also given)."""
    ran = {k: v for k, v in statuses.items() if v not in NOT_RUN}
    files: dict[str, dict[str, Any]] = {}
    for name, status in sorted(ran.items()):
        row = files.setdefault(
            module_of(name), {"total": 0, "killed": 0, "equivalent": 0, "survivors": []}
        )
        row["total"] += 1
        if status in KILLED:
            row["killed"] += 1
        elif name in equivalent:
            row["equivalent"] += 1
        else:
            row["survivors"].append(f"{name} ({status})")
    for row in files.values():
        row["score"] = round(100 * row["killed"] / max(1, row["total"] - row["equivalent"]), 1)
    total = len(ran)
    killed = sum(r["killed"] for r in files.values())
    equal = sum(r["equivalent"] for r in files.values())
    return {
        "total": total,
        "killed": killed,
        "equivalent": equal,
        "score": round(100 * killed / max(1, total - equal), 1),
        "raw_score": round(100 * killed / max(1, total), 1),
        "statuses": dict(sorted(Counter(statuses.values()).items())),
        "files": files,
        # a listed equivalent that was killed or is no longer a mutant: the list is stale
        "stale_equivalents": sorted(
            n for n in equivalent if n in statuses and statuses[n] in KILLED
        ),
    }


def run_mutmut(full: bool, max_children: int, only: Sequence[str] = ()) -> int:
    # mutmut keeps each mutant's result in mutants/ and, in a run not naming mutants, lets an
    # earlier result stand even when the tests have changed since: every run starts afresh
    shutil.rmtree(LOG.parent, ignore_errors=True)
    LOG.parent.mkdir()
    globs = list(only) or ([] if full else list(QUICK))
    print(
        f"== mutmut over {', '.join(globs) or 'every listed module'} "
        f"(log: {LOG.relative_to(REPO_ROOT)})",
        flush=True,
    )
    started = time.monotonic()
    done = mutmut(["run", "--max-children", str(max_children), *globs], LOG)
    wall = time.monotonic() - started
    if done.returncode != 0:
        print(LOG.read_text()[-3000:])
        print(f"mutmut run failed (exit {done.returncode})")
        return 1
    listed = mutmut(["results", "--all", "true"])
    statuses: dict[str, str] = {}
    for line in listed.stdout.splitlines():
        match = RESULT.match(line)
        if match and (not globs or any(fnmatchcase(match.group(1), g) for g in globs)):
            statuses[match.group(1)] = match.group(2)
    equivalent = equivalents()
    summary = {
        "schema": "tinyrustlm.mutants.v1",
        "mode": "only" if only else "full" if full else "quick",
        "globs": globs,
        "max_children": max_children,
        "wall_seconds": round(wall, 1),
        **score(statuses, equivalent),
    }
    print(
        f"\nmutation score: {summary['killed']}/{summary['total']} killed, "
        f"{summary['equivalent']} reviewed equivalent ({EQUIVALENT.name}): "
        f"{summary['score']:.1f}% ({summary['raw_score']:.1f}% counting equivalents as "
        f"surviving); statuses: {summary['statuses']}; mutmut took {wall / 60:.1f} min "
        f"with {max_children} children (summary: {SUMMARY.relative_to(REPO_ROOT)})"
    )
    for path, row in summary["files"].items():
        print(
            f"  {path}: {row['score']:.1f}% ({row['killed']}/{row['total']} killed, "
            f"{row['equivalent']} equivalent, {len(row['survivors'])} surviving)"
        )
    for path, row in summary["files"].items():
        if row["survivors"]:
            print(
                f"\nsurviving in {path} ({len(row['survivors'])}; `mutmut show NAME` prints "
                "the diff):"
            )
            for name in row["survivors"]:
                print(f"  {name}")
    summary["stale_equivalents"] += sorted(
        n
        for n in equivalent
        if n not in statuses and (not globs or any(fnmatchcase(n, g) for g in globs))
    )
    SUMMARY.write_text(json.dumps(summary, indent=1) + "\n")
    if summary["stale_equivalents"]:
        print(f"\nlisted as equivalent but killed or gone (remove from {EQUIVALENT.name}):")
        for name in summary["stale_equivalents"]:
            print(f"  {name}")
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--full", action="store_true", help="mutate every listed module")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--planted-only", action="store_true")
    only.add_argument("--mutmut-only", action="store_true")
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="GLOB",
        help="mutate only these mutant names (repeatable), e.g. 'verify.bundle.*'",
    )
    js = parser.add_mutually_exclusive_group()
    js.add_argument(
        "--js", action="store_true", help="also the loader's trust.js and fetch.js (Stryker)"
    )
    js.add_argument("--js-only", action="store_true", help="only the loader (Stryker)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    status = 0
    if args.js_only:
        shutil.rmtree(LOG.parent, ignore_errors=True)
        LOG.parent.mkdir()
    elif not args.planted_only:
        status |= run_mutmut(args.full, args.max_children, args.only)
    loader: dict[str, Any] = {}
    if args.js or args.js_only:
        js_status, loader = js_run.run(args.max_children)
        status |= js_status
    if not (args.mutmut_only or args.js_only):
        print("\n== planted bugs (tests/mutants/planted.toml)", flush=True)
        status |= planted.main([])
    wall = time.monotonic() - started
    print(f"\nnox -s mutants took {wall / 60:.1f} min in all")
    if args.js_only:
        SUMMARY.write_text(json.dumps({"schema": "tinyrustlm.mutants.v1", "mode": "js"}))
    if (not args.planted_only or args.js_only) and SUMMARY.is_file():
        summary = json.loads(SUMMARY.read_text())
        summary["session_wall_seconds"] = round(wall, 1)
        ran_planted = not (args.mutmut_only or args.js_only)
        summary["planted"] = "not run" if not ran_planted else "caught" if not status else "failed"
        if loader:
            summary["files"] = {**summary.get("files", {}), **loader["files"]}
            summary["js"] = {
                "tool": "stryker",
                "wall_seconds": loader["wall_seconds"],
                "stale_equivalents": loader["stale_equivalents"],
                "under_floor": loader["under_floor"],
            }
        SUMMARY.write_text(json.dumps(summary, indent=1) + "\n")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
