"""The default release's conformance report, kept for an unchanged re-release (issue 36).

Every release runs the node matrix over every lane and tier (about 70 s here). Its report is a
function of what the loader is given (every file of the bundle as signed so far: artifacts, JS,
documents, the manifest and its signature), the harness that drives it (the conformance code,
the model packer), the pinned toolchain (node's version among it), the engines and the case
count. A release whose inputs are all unchanged reuses the report it wrote last time and says
so; any change runs the matrix again. The report is re-read strictly when reused (a damaged or
foreign file is never signed: it is run again), and it is the signed document either way, so
`verify bundle` judges a reused report exactly as a fresh one.

Kept under `build/conformance/<key>.json`; `release --force` does not clear it (the key already
holds everything the report depends on), deleting the folder does.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline import paths
from pipeline.io.atomic import write_atomic
from pipeline.io.digest import sha256_file
from verify.canonical import canonical_json
from verify.errors import VerifyError
from verify.formats.conformance import read_report
from verify.inputs import read_regular_file

PROTOCOL = 1  # bumped when what a reused report must match changes
CACHE_FOLDER = "conformance"  # under the build folder (paths.BUILD_DIR)
# what drives the matrix besides the bundle: every file under these, and these files
HARNESS_FOLDERS = ("pipeline/conformance",)
HARNESS_FILES = ("pipeline/modelpack.py", "pipeline/release/conformance.py", "toolchain.lock")


@dataclass(frozen=True)
class Matrixed:
    report: bytes
    reused: bool


def harness_digests(repo_root: Path) -> dict[str, str]:
    """Repository path -> SHA-256 of every harness file (sorted; caches and bytecode left out)."""
    paths = [
        p
        for folder in HARNESS_FOLDERS
        for p in (repo_root / folder).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    ]
    paths += [repo_root / name for name in HARNESS_FILES]
    return {p.relative_to(repo_root).as_posix(): sha256_file(p) for p in sorted(paths)}


def matrix_key(
    files: Mapping[str, bytes], harness: Mapping[str, str], engines: Sequence[str], cases: int
) -> str:
    """The report's identity: everything it is a function of."""
    return hashlib.sha256(
        canonical_json(
            {
                "protocol": PROTOCOL,
                "bundle": {name: hashlib.sha256(data).hexdigest() for name, data in files.items()},
                "harness": dict(harness),
                "engines": list(engines),
                "cases": cases,
            }
        )
    ).hexdigest()


def _kept(path: Path) -> bytes | None:
    try:
        data = read_regular_file(path, "json")
        read_report(data, str(path))  # strict: a damaged or foreign file is not reused
    except (VerifyError, ValueError):  # pydantic's ValidationError is a ValueError
        return None
    return data


def matrix_once(
    repo_root: Path,
    files: Mapping[str, bytes],
    engines: Sequence[str],
    cases: int,
    run: Callable[[], bytes],
) -> Matrixed:
    """The kept report for these inputs, else `run()`'s (then kept for the next release)."""
    key = matrix_key(files, harness_digests(repo_root), engines, cases)
    path = repo_root / paths.BUILD_DIR / CACHE_FOLDER / f"{key}.json"
    if path.exists():
        kept = _kept(path)
        if kept is not None:
            return Matrixed(kept, reused=True)
    report = run()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, report)
    return Matrixed(report, reused=False)
