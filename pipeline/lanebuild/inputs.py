"""What a lane's build depends on, as digests: the cache key and the build record's inputs."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from pipeline.errors import TabledError
from pipeline.io.digest import sha256_file
from pipeline.lanebuild.records import BuildInputs
from pipeline.tree.lanes import Lane, LanesFile
from pipeline.tree.sources import tree_digest


class LaneBuildError(TabledError):
    """A lane that cannot be built as lanes.toml and the lock describe it."""

    table: ClassVar[Mapping[str, str]] = {
        "build.linker-not-pinned": (
            "pin the lane's linker in toolchain.lock (tinyrustlm-release toolchain lock) or fix "
            "lanes.toml"
        ),
        "build.cargo-lock-missing": "restore crates/Cargo.lock from git: builds run with --locked",
    }


# The driver's own code is part of every lane's cache key: any change to how this package
# plans, runs, post-links or smoke-tests a lane makes old cache entries miss (no hand-bumped
# version constant to forget). The wasmtime smoke runs through the Wasm host, digested with it.
DRIVER_DIR = Path(__file__).resolve().parent
WASM_HOST = DRIVER_DIR.parent / "wasmhost.py"
_SKIPPED_DIRS = {"target", ".git"}


def source_files(root: Path) -> list[str]:
    """Every file under `root` that a build can read (build outputs and VCS data excluded),
    tracked or not: an untracked source file changes the build just the same."""
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and not _SKIPPED_DIRS.intersection(p.relative_to(root).parts)
    )


def driver_digest(folder: Path | None = None) -> str:
    """SHA-256 over `name  sha256` lines of every .py file of the driver package, then of the
    Wasm host its smoke runs through."""
    root = folder or DRIVER_DIR
    lines = [f"{p.name}  {sha256_file(p)}\n" for p in sorted(root.glob("*.py"))]
    lines.append(f"../{WASM_HOST.name}  {sha256_file(WASM_HOST)}\n")
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def lane_inputs(lane: Lane, workspace: Path, lock_sha256: str, sources: str) -> BuildInputs:
    cargo_lock = workspace / "Cargo.lock"
    if not cargo_lock.is_file():
        raise LaneBuildError(
            "crates/Cargo.lock is missing (builds run with --locked)",
            where=str(cargo_lock),
            error_id="build.cargo-lock-missing",
        )
    parts = {
        "sources_sha256": sources,
        "cargo_lock_sha256": sha256_file(cargo_lock),
        "lane_entry_sha256": lane.digest(),
        "toolchain_lock_sha256": lock_sha256,
    }
    key = "\n".join(f"{k}={v}" for k, v in sorted(parts.items())) + f"\ndriver={driver_digest()}\n"
    return BuildInputs(**parts, input_digest=hashlib.sha256(key.encode()).hexdigest())


def tree_inputs(lanes_file: LanesFile, workspace: Path, lock_sha256: str) -> dict[str, BuildInputs]:
    """Every lane's inputs for this tree (the sources digested once): the build's cache keys,
    and what a handed-over record must have been built from."""
    sources = tree_digest(workspace, source_files(workspace))
    return {lane.id: lane_inputs(lane, workspace, lock_sha256, sources) for lane in lanes_file.lane}
