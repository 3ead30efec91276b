"""Shared pytest fixtures: the repository root, and one real build of every lane per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clones import clone_head, run_build

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def built_clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clean clone of HEAD with every lane built by the real pinned toolchain.

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


@pytest.fixture(scope="session")
def released_bundle(built_clone: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A full release (development key) of the built clone: dist/tinyrustlm-<version>/."""
    from pipeline.release.steps import ReleaseRequest, run_release

    request = ReleaseRequest(repo_root=built_clone, dist=tmp_path_factory.mktemp("dist"), env={})
    return run_release(request, say=lambda line: None).bundle
