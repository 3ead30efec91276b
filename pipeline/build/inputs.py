"""What a lane's build depends on, as digests: the cache key and the build record's inputs."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from pipeline.build.lanes import Lane
from pipeline.build.records import BuildInputs
from pipeline.errors import PipelineError

# Bump when the driver changes how it invokes cargo (argv/env): old cache entries then miss.
DRIVER_VERSION = "2"
_SKIPPED_DIRS = {"target", ".git"}


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def tree_digest(root: Path) -> str:
    """SHA-256 over sorted `relative-path  sha256` lines of every source file under `root`."""
    lines = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and not _SKIPPED_DIRS.intersection(rel.parts):
            lines.append(f"{rel.as_posix()}  {sha256_file(path)}\n")
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def lane_inputs(lane: Lane, workspace: Path, lock_path: Path, sources: str) -> BuildInputs:
    cargo_lock = workspace / "Cargo.lock"
    if not cargo_lock.is_file():
        raise PipelineError("crates/Cargo.lock is missing (builds run with --locked)",
                            where=str(cargo_lock))
    parts = {
        "sources_sha256": sources,
        "cargo_lock_sha256": sha256_file(cargo_lock),
        "lane_entry_sha256": lane.digest(),
        "toolchain_lock_sha256": sha256_file(lock_path),
    }
    key = "\n".join(f"{k}={v}" for k, v in sorted(parts.items())) + f"\ndriver={DRIVER_VERSION}\n"
    return BuildInputs(**parts, input_digest=hashlib.sha256(key.encode()).hexdigest())


def git_facts(repo_root: Path) -> tuple[str, int]:
    """(HEAD revision, committer time of HEAD): the source identity and SOURCE_DATE_EPOCH."""
    done = subprocess.run(["git", "log", "-1", "--format=%H %ct"], cwd=repo_root,
                          capture_output=True, text=True)
    fields = done.stdout.split()
    if done.returncode != 0 or len(fields) != 2:
        raise PipelineError("cannot read the last commit (SOURCE_DATE_EPOCH comes from it)",
                            where=str(repo_root), hint="build from a git checkout with a commit")
    return fields[0], int(fields[1])
