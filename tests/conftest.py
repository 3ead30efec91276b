"""Shared pytest fixtures: the repository root, and one real build of every lane per session."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def repo_root() -> Path:
    return REPO_ROOT


def clone_head(destination: Path) -> Path:
    """A fresh clone of this repository's HEAD (what CI sees), at `destination`."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(REPO_ROOT), str(destination)],
                   check=True)
    return destination


def run_build(clone: Path, env_overrides: dict[str, str] | None = None,
              umask: int = 0o022) -> subprocess.CompletedProcess[str]:
    """`tinyrustlm-release build` of every lane in `clone`, with the clone's own code."""
    env = {**os.environ, "PYTHONPATH": str(clone), **(env_overrides or {})}
    return subprocess.run([sys.executable, "-m", "pipeline.cli", "build", "--repo", str(clone)],
                          cwd=clone, env=env, capture_output=True, text=True, umask=umask)


@pytest.fixture(scope="session")
def built_clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clean clone of HEAD with all six lanes built by the real pinned toolchain.

    Shared by the integration tests (reproducibility, verification of real artifacts,
    release) so the slow build happens once per test session.
    """
    if not Path("/usr/bin/rustc").exists():
        pytest.skip("pinned toolchain not installed: run `tinyrustlm-release toolchain install`")
    clone = clone_head(tmp_path_factory.mktemp("first") / "tinyrustlm")
    done = run_build(clone)
    if done.returncode != 0:
        pytest.fail(f"build of a clean clone failed:\n{done.stdout}\n{done.stderr[-4000:]}")
    return clone
