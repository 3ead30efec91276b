"""Run the planted-bug regression list (tests/mutants/planted.toml): each bug alone in a
fresh clone of HEAD, its tests run there, and they must fail. Prints one line per bug and a
summary; exit 0 only if every bug was caught.

    python -m tests.mutants.planted [--list] [ID ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
LIST = Path(__file__).with_name("planted.toml")
LOGS = REPO_ROOT / "mutants" / "planted"  # one pytest log per bug (git-ignored)
TIMEOUT_S = 3600
# pytest's exit code when tests ran and some failed (or errored): the only "caught"
PYTEST_TESTS_FAILED = 1


@dataclass(frozen=True)
class Edit:
    file: str
    find: str
    replace: str
    count: int = 1


@dataclass(frozen=True)
class Bug:
    id: str
    what: str
    file: str
    find: str
    replace: str
    tests: tuple[str, ...]
    count: int = 1
    prepare: tuple[tuple[str, ...], ...] = ()
    # scaffolding, not the bug: lets the run reach the tests under study (e.g. past a build
    # step that would already refuse the artifact)
    also: tuple[Edit, ...] = ()


@dataclass(frozen=True)
class Outcome:
    bug: Bug
    verdict: str  # caught | SURVIVED | STALE (patch no longer applies) | BROKEN
    detail: str
    seconds: float


def load(path: Path = LIST) -> list[Bug]:
    rows = tomllib.loads(path.read_text(encoding="utf-8"))["bug"]
    bugs = [
        Bug(
            id=r["id"],
            what=r["what"],
            file=r["file"],
            find=r["find"],
            replace=r["replace"],
            tests=tuple(r["tests"]),
            count=r.get("count", 1),
            prepare=tuple(tuple(c) for c in r.get("prepare", ())),
            also=tuple(Edit(**e) for e in r.get("also", ())),
        )
        for r in rows
    ]
    ids = [b.id for b in bugs]
    if len(ids) != len(set(ids)):
        raise SystemExit(f"{path}: duplicate ids")
    return bugs


def _edit(edit: Edit, clone: Path) -> str | None:
    path = clone / edit.file
    if not path.is_file():
        return f"{edit.file} does not exist"
    text = path.read_text(encoding="utf-8")
    found = text.count(edit.find)
    if found != edit.count:
        return f"{edit.file}: `find` occurs {found} times, expected {edit.count}"
    path.write_text(text.replace(edit.find, edit.replace), encoding="utf-8")
    return None


def apply(bug: Bug, clone: Path) -> str | None:
    """Plant the bug (and its scaffolding); the reason it cannot be planted, or None."""
    for edit in (Edit(bug.file, bug.find, bug.replace, bug.count), *bug.also):
        problem = _edit(edit, clone)
        if problem is not None:
            return problem
    return None


def plant(bug: Bug, clone: Path) -> str | None:
    """Apply the bug and COMMIT it in the clone: the loader, conformance and release tests
    clone HEAD (tests/clones.py), so an uncommitted bug would never reach them."""
    problem = apply(bug, clone)
    if problem is not None:
        return problem
    git = ["git", "-C", str(clone), "-c", "user.name=planted", "-c", "user.email=planted@invalid"]
    subprocess.run([*git, "commit", "--quiet", "--all", "-m", f"planted: {bug.id}"], check=True)
    return None


def _tail(done: subprocess.CompletedProcess[str], lines: int = 3) -> str:
    out = (done.stdout + done.stderr).strip().splitlines()
    return " | ".join(out[-lines:])


def _failed_tests(output: str) -> str:
    """The `FAILED`/`ERROR` summary lines pytest prints (`-ra`): which test caught it."""
    lines = [
        ln.split(" - ")[0] for ln in output.splitlines() if ln.startswith(("FAILED ", "ERROR "))
    ]
    return "; ".join(lines[:3])


def run_one(bug: Bug, workdir: Path, revision: str) -> Outcome:
    started = time.monotonic()
    clone = workdir / bug.id
    subprocess.run(
        ["git", "clone", "--quiet", "--shared", "--no-checkout", str(REPO_ROOT), str(clone)],
        check=True,
    )
    subprocess.run(["git", "-C", str(clone), "checkout", "--quiet", revision], check=True)
    problem = plant(bug, clone)
    if problem is not None:
        return Outcome(bug, "STALE", problem, time.monotonic() - started)
    # the clone's modules, never the editable install's (PYTHONPATH precedes both)
    env = {**os.environ, "PYTHONPATH": str(clone)}
    for argv in bug.prepare:
        cmd = [sys.executable if a == "{python}" else a for a in argv]
        done = subprocess.run(
            cmd, cwd=clone, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
        )
        if done.returncode != 0:
            return Outcome(
                bug,
                "BROKEN",
                f"prepare {' '.join(argv)}: {_tail(done)}",
                time.monotonic() - started,
            )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", *bug.tests],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    seconds = time.monotonic() - started
    LOGS.mkdir(parents=True, exist_ok=True)
    (LOGS / f"{bug.id}.log").write_text(done.stdout + done.stderr)
    if done.returncode == PYTEST_TESTS_FAILED:
        return Outcome(bug, "caught", f"{_tail(done, 1)} [{_failed_tests(done.stdout)}]", seconds)
    if done.returncode == 0:
        return Outcome(bug, "SURVIVED", _tail(done, 1), seconds)
    return Outcome(bug, "BROKEN", f"pytest exit {done.returncode}: {_tail(done)}", seconds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("ids", nargs="*", help="only these bugs (default: all)")
    parser.add_argument("--list", action="store_true", help="list the bugs and stop")
    args = parser.parse_args(argv)
    bugs = load()
    if args.list:
        for b in bugs:
            print(f"{b.id:36} {b.what}")
        return 0
    unknown = set(args.ids) - {b.id for b in bugs}
    if unknown:
        parser.error(f"unknown bug ids: {', '.join(sorted(unknown))}")
    chosen = [b for b in bugs if not args.ids or b.id in args.ids]
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    if dirty.strip():
        print("note: uncommitted changes are not in the clones (they test HEAD)")
    revision = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    print(f"testing {revision[:12]}; logs in {LOGS.relative_to(REPO_ROOT)}/")
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="planted-") as tmp:
        for bug in chosen:
            print(f"-- {bug.id}: {bug.what}", flush=True)
            outcome = run_one(bug, Path(tmp), revision)
            outcomes.append(outcome)
            print(f"   {outcome.verdict} in {outcome.seconds:.0f}s: {outcome.detail}", flush=True)
    caught = sum(o.verdict == "caught" for o in outcomes)
    print(f"\nplanted bugs: {caught}/{len(outcomes)} caught")
    for o in outcomes:
        print(f"  {o.verdict:8} {o.bug.id}")
    return 0 if caught == len(outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
