"""`nox -s mutants -- --js`: mutation testing of the loader's trust, fetch and cache code
(crates/wasm/js/trust.js, fetch.js) with Stryker, pinned in tests/mutants/js (package.json and
its lock; `npm ci` from the npm registry, apart from tests/jstools so lint's install stays
small). The tests are the node:test files of tests/js/unit (each file one process, Stryker's tap
runner, coverage per file); the report is mutants/js/mutation.json (Stryker's JSON report).

The score per file goes into mutants/summary.json beside mutmut's: killed (Stryker's Killed and
Timeout: the tests stopped the mutant) over the mutants Stryker ran (Survived and NoCoverage
count against it; CompileError, RuntimeError and Ignored are not mutants of the behaviour). A
surviving mutant reviewed as equivalent is listed in tests/mutants/equivalent.toml as a
`[[js_mutant]]` named "FILE: MUTATOR `ORIGINAL` -> `REPLACEMENT`" (the mutated text, not its line,
so the name survives edits elsewhere in the file) with its reason, and counted apart.

Each mutated file has a floor (tests/mutants/js/floors.json, data): a file whose score is under
its floor, a mutated file without a floor or a floored file Stryker did not mutate fails the run,
naming the file, its score and its floor.
"""

from __future__ import annotations

import json
import subprocess
import time
import tomllib
from pathlib import Path
from typing import Any

from pipeline.toolchain import nodejs
from tests.jstools import npm

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(__file__).with_name("js")
CONFIG = PACKAGE / "stryker.config.json"
REPORT = REPO_ROOT / "mutants" / "js" / "mutation.json"
EQUIVALENT = Path(__file__).with_name("equivalent.toml")
FLOORS = PACKAGE / "floors.json"
DETECTED = {"Killed", "Timeout"}
NOT_MUTANTS = {"CompileError", "RuntimeError", "Ignored"}


def install() -> Path:
    """`npm ci` from the lock unless node_modules already holds exactly it; Stryker's CLI."""
    stamp = PACKAGE / "node_modules/.package-lock.json"
    lock = PACKAGE / "package-lock.json"
    if not stamp.is_file() or stamp.stat().st_mtime < lock.stat().st_mtime:
        done = npm("ci", "--ignore-scripts", "--no-audit", "--no-fund", cwd=PACKAGE)
        if done.returncode != 0:
            raise RuntimeError(f"npm ci in {PACKAGE} failed:\n{done.stdout}\n{done.stderr}")
    return PACKAGE / "node_modules/@stryker-mutator/core/bin/stryker.js"


def js_equivalents(path: Path = EQUIVALENT) -> dict[str, str]:
    rows = tomllib.loads(path.read_text(encoding="utf-8")).get("js_mutant", [])
    found = {row["name"]: row["reason"] for row in rows}
    if len(found) != len(rows) or not all(r.strip() for r in found.values()):
        raise SystemExit(f"{path}: every js_mutant once, each with its reason")
    return found


def js_floors(path: Path | None = None) -> dict[str, float]:
    """File -> the lowest score it may have (a percentage: a number in [0, 100], not a bool)."""
    path = path or FLOORS
    floors = json.loads(path.read_text(encoding="utf-8")).get("floors")
    if not isinstance(floors, dict) or not all(
        isinstance(f, int | float) and not isinstance(f, bool) and 0 <= f <= 100
        for f in floors.values()
    ):
        raise SystemExit(f"{path}: floors is a table of file -> percentage (0 to 100)")
    return {str(name): float(f) for name, f in floors.items()}


def under_floor(files: dict[str, dict[str, Any]], floors: dict[str, float]) -> list[str]:
    """Why the run fails its floors (none: it holds them): a file under its floor, a mutated
    file without one, a floored file that was not mutated."""
    failing = []
    for path, floor in sorted(floors.items()):
        row = files.get(path)
        if row is None:
            failing.append(f"{path}: not mutated, but it has a floor of {floor:g}%")
        elif row["score"] < floor:
            failing.append(
                f"{path}: {row['score']:.1f}% is under its floor of {floor:g}% "
                f"({len(row['survivors'])} surviving; kill them, or list a reviewed equivalent "
                f"in {EQUIVALENT.name})"
            )
    failing += [
        f"{p}: mutated, but it has no floor in {FLOORS.name}"
        for p in sorted(files)
        if p not in floors
    ]
    return failing


def mutant_name(path: str, source: str, mutant: dict[str, Any]) -> str:
    """`crates/wasm/js/trust.js: EqualityOperator `a < b` -> `a <= b``: the mutated text."""
    lines = source.split("\n")
    start, end = mutant["location"]["start"], mutant["location"]["end"]
    if start["line"] == end["line"]:
        original = lines[start["line"] - 1][start["column"] - 1 : end["column"] - 1]
    else:
        first = lines[start["line"] - 1][start["column"] - 1 :]
        last = lines[end["line"] - 1][: end["column"] - 1]
        original = "\n".join([first, *lines[start["line"] : end["line"] - 1], last])
    squash = " ".join(original.split())
    replacement = " ".join(str(mutant.get("replacement", "")).split())
    return f"{path}: {mutant['mutatorName']} `{squash}` -> `{replacement}`"


def score(report: dict[str, Any], equivalent: dict[str, str]) -> dict[str, Any]:
    """Per file: total, killed, equivalent, survivors (name, status, line), score; and the
    listed equivalents that were killed or are no longer mutants (the list is stale)."""
    files: dict[str, dict[str, Any]] = {}
    seen: dict[str, set[str]] = {}
    for path, entry in sorted(report["files"].items()):
        rel = Path(path).resolve().relative_to(REPO_ROOT).as_posix()
        row = files.setdefault(rel, {"total": 0, "killed": 0, "equivalent": 0, "survivors": []})
        for mutant in entry["mutants"]:
            if mutant["status"] in NOT_MUTANTS:
                continue
            name = mutant_name(rel, entry["source"], mutant)
            seen.setdefault(name, set()).add(mutant["status"])
            row["total"] += 1
            if mutant["status"] in DETECTED:
                row["killed"] += 1
            elif name in equivalent:
                row["equivalent"] += 1
            else:
                line = mutant["location"]["start"]["line"]
                row["survivors"].append(f"{name} ({mutant['status']}, line {line})")
    for row in files.values():
        row["score"] = round(100 * row["killed"] / max(1, row["total"] - row["equivalent"]), 1)
    stale = sorted(n for n in equivalent if n not in seen or seen[n] <= DETECTED)
    return {"files": files, "stale_equivalents": stale}


def run(concurrency: int) -> tuple[int, dict[str, Any]]:
    """Stryker over the loader; (exit status, {"files", "stale_equivalents", "wall_seconds"})."""
    stryker = install()
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.unlink(missing_ok=True)
    print(f"== Stryker over the loader ({CONFIG.relative_to(REPO_ROOT)})", flush=True)
    started = time.monotonic()
    argv = [str(nodejs.executable()), str(stryker), "run", str(CONFIG)]
    argv += ["--concurrency", str(concurrency), "--reporters", "json,progress-append-only"]
    done = subprocess.run(argv, cwd=REPO_ROOT, check=False)
    wall = time.monotonic() - started
    if done.returncode != 0 or not REPORT.is_file():
        print(f"Stryker failed (exit {done.returncode})")
        return 1, {}
    result = score(json.loads(REPORT.read_text(encoding="utf-8")), js_equivalents())
    result["wall_seconds"] = round(wall, 1)
    for path, row in result["files"].items():
        print(
            f"  {path}: {row['score']:.1f}% ({row['killed']}/{row['total']} killed, "
            f"{row['equivalent']} equivalent, {len(row['survivors'])} surviving)"
        )
    for path, row in result["files"].items():
        if row["survivors"]:
            print(f"\nsurviving in {path} ({len(row['survivors'])}):")
            for name in row["survivors"]:
                print(f"  {name}")
    status = 0
    if result["stale_equivalents"]:
        print(f"\nlisted as equivalent but killed or gone (remove from {EQUIVALENT.name}):")
        for name in result["stale_equivalents"]:
            print(f"  {name}")
        status = 1
    result["under_floor"] = under_floor(result["files"], js_floors())
    if result["under_floor"]:
        print(f"\nunder the mutation floor ({FLOORS}):")
        for why in result["under_floor"]:
            print(f"  {why}")
        status = 1
    return status, result
