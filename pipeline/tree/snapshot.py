"""A source tree read once: paths, git facts, version, lanes, the toolchain lock and its one
digest, the JS host files and the crate and Python closures.

Every step of a build, release or rebuild takes this frozen `Tree` instead of reading the
checkout again, so one run sees one version of each file (and digests the bytes it parsed).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pipeline import paths
from pipeline.toolchain.lockfile import ToolchainLock, read_lock
from pipeline.tree.lanes import LanesFile, load_lanes
from pipeline.tree.sources import (
    CrateSource,
    GitFacts,
    PythonRequirement,
    crate_sources,
    git_facts,
    project_version,
    python_requirements,
)


@dataclass(frozen=True)
class SourceFile:
    """A file of the tree, by its path relative to the repository root."""

    path: str
    data: bytes

    @property
    def name(self) -> str:
        return Path(self.path).name


@dataclass(frozen=True)
class Tree:
    root: Path  # absolute
    git: GitFacts
    version: str  # [project].version of pyproject.toml
    lanes: LanesFile
    lock: ToolchainLock
    lock_sha256: str  # of the exact bytes `lock` was parsed from
    js_files: tuple[SourceFile, ...]  # crates/wasm/js/*.js, sorted
    crates: tuple[CrateSource, ...]
    python: tuple[PythonRequirement, ...]

    def path(self, relative: str | PurePosixPath) -> Path:
        return self.root / relative

    @property
    def lock_path(self) -> Path:
        return self.root / paths.LOCK_FILE

    @property
    def lanes_path(self) -> Path:
        return self.root / paths.LANES_FILE

    @property
    def workspace(self) -> Path:
        return self.root / self.lanes.workspace

    @property
    def build_dir(self) -> Path:
        return self.root / paths.BUILD_DIR


def js_source_files(root: Path) -> tuple[SourceFile, ...]:
    """crates/wasm/js/*.js, sorted; an absent folder means none yet."""
    folder = root / paths.JS_SOURCE_DIR
    if not folder.is_dir():
        return ()
    return tuple(
        SourceFile(p.relative_to(root).as_posix(), p.read_bytes())
        for p in sorted(folder.glob("*.js"))
    )


def read_tree(root: Path) -> Tree:
    """Read the checkout at `root` once (each reader names the file it could not use)."""
    root = root.resolve()
    lock, lock_sha256 = read_lock(root / paths.LOCK_FILE)
    return Tree(
        root=root,
        git=git_facts(root),
        version=project_version(root),
        lanes=load_lanes(root / paths.LANES_FILE),
        lock=lock,
        lock_sha256=lock_sha256,
        js_files=js_source_files(root),
        crates=tuple(crate_sources(root)),
        python=tuple(python_requirements(root)),
    )
