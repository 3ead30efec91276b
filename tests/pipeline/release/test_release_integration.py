"""The real release on this repository: real toolchain check, build, inspection, smoke.

Slow (it builds every lane with the pinned toolchain when the cache is cold), hence marked.
It releases from the session's clean clone (tests/conftest.py `built_clone`), whose lanes
are already built, so the build step is served from the cache.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest

from pipeline.release.steps import ReleaseRequest, run_release
from verify.bundle.trusted_keys import load_trusted_keys, trust_root_from_keys
from verify.bundle.verifier import BundleVerifier, Requirements


def _tree(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.mark.integration
@pytest.mark.slow
def test_real_release_verifies_and_reproduces(built_clone: Path, tmp_path: Path) -> None:
    bundles = []
    for name in ("first", "second"):
        request = ReleaseRequest(repo_root=built_clone, dist=tmp_path / name, env={})
        bundles.append(run_release(request, say=lambda line: None).bundle)
    trusted = load_trusted_keys(built_clone / ".dev-keys/development.trusted-keys.json")
    requires = Requirements(now=int(time.time()), allow_dev_key=True)
    verdict = BundleVerifier(trust_root_from_keys(trusted)).verify(bundles[0], requires)
    assert verdict.key_class == "development"
    assert _tree(bundles[0]) == _tree(bundles[1])
