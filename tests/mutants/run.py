"""`nox -s mutants`: mutation testing of verify/ with mutmut (the modules and the fast test
subset are `[tool.mutmut]` in pyproject.toml), printing the score and every surviving mutant
by file; then the planted-bug regression list (tests/mutants/planted.py), which must be
caught whole. The mutation score is reported, not gated.

    python -m tests.mutants.run [--full] [--planted-only | --mutmut-only] [--max-children N]

Default (quick): only verify/bundle/dsse.py and verify/canonical.py are mutated (about 380
mutants: under 4 minutes on two shared cores); `--full` mutates every listed module (about 1,800
mutants, 920 of them in the bundle verifier, whose tests each need a bundle: about 30 a minute on
two loaded cores, so roughly an hour).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from fnmatch import fnmatchcase
from pathlib import Path

from tests.mutants import planted

REPO_ROOT = Path(__file__).resolve().parents[2]
QUICK = ("verify.bundle.dsse.*", "verify.canonical.*")
LOG = REPO_ROOT / "mutants" / "run.log"
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


def run_mutmut(full: bool, max_children: int, only: Sequence[str] = ()) -> int:
    LOG.parent.mkdir(exist_ok=True)
    globs = list(only) or ([] if full else list(QUICK))
    print(
        f"== mutmut over {', '.join(globs) or 'every listed module'} "
        f"(log: {LOG.relative_to(REPO_ROOT)})",
        flush=True,
    )
    done = mutmut(["run", "--max-children", str(max_children), *globs], LOG)
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
    counts = Counter(statuses.values())
    ran = {k: v for k, v in statuses.items() if v not in NOT_RUN}
    killed = sum(v in KILLED for v in ran.values())
    survivors: dict[str, list[str]] = defaultdict(list)
    for name, status in sorted(ran.items()):
        if status not in KILLED:
            survivors[module_of(name)].append(f"{name} ({status})")
    per_file = Counter(module_of(n) for n in ran)
    per_file_killed = Counter(module_of(n) for n, s in ran.items() if s in KILLED)
    print(
        f"\nmutation score: {killed}/{len(ran)} killed"
        f" ({100 * killed / max(1, len(ran)):.1f}%); statuses: {dict(sorted(counts.items()))}"
    )
    for path in sorted(per_file):
        print(
            f"  {path}: {per_file_killed[path]}/{per_file[path]} killed, "
            f"{len(survivors[path])} surviving"
        )
    for path, names in sorted(survivors.items()):
        print(f"\nsurviving in {path} ({len(names)}; `mutmut show NAME` prints the diff):")
        for name in names:
            print(f"  {name}")
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
        help="mutate only these mutant names (repeatable), e.g. 'verify.bundle.verifier.*'",
    )
    args = parser.parse_args(argv)
    status = 0
    if not args.planted_only:
        status |= run_mutmut(args.full, args.max_children, args.only)
    if not args.mutmut_only:
        print("\n== planted bugs (tests/mutants/planted.toml)", flush=True)
        status |= planted.main([])
    return status


if __name__ == "__main__":
    raise SystemExit(main())
