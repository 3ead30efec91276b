"""Fresh clones of this repository and builds inside them, for integration tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


def clone_head(destination: Path, source: Path = REPO_ROOT) -> Path:
    """A fresh clone of `source`'s HEAD (by default this repository: what CI sees)."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["git", "clone", "--quiet", "--no-hardlinks", str(source), str(destination)], check=True
    )
    return destination


def run_build(
    clone: Path,
    env_overrides: dict[str, str] | None = None,
    umask: int = 0o022,
    lanes: list[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`tinyrustlm-release build` in `clone` (every lane by default), with the clone's code."""
    env = {**os.environ, "PYTHONPATH": str(clone), **(env_overrides or {})}
    selected = [arg for lane in lanes or [] for arg in ("--lane", lane)]
    return subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "build", "--repo", str(clone), *selected],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        umask=umask,
    )


# A bundle released from this checkout (signed with its .dev-keys) can stand in for the
# session's full release while working on the loader or the conformance matrix.
BUNDLE_ENV = "TINYRUSTLM_LOADER_BUNDLE"


def bundle_and_dev_keys(request: pytest.FixtureRequest) -> tuple[Path, Path]:
    """(the bundle under test, the .dev-keys folder of the development key that signed it)."""
    override = os.environ.get(BUNDLE_ENV)
    if override:
        return Path(override), REPO_ROOT / ".dev-keys"
    bundle: Path = request.getfixturevalue("released_bundle")
    clone: Path = request.getfixturevalue("built_clone")
    return bundle, clone / ".dev-keys"
