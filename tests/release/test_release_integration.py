"""The real release on this repository: real toolchain check, build, inspection, smoke.

Slow (it builds every lane with the pinned toolchain when the cache is cold), hence marked.
The tree may hold uncommitted work while developing, so the release allows a dirty tree;
CI runs this on a clean clone.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest

from pipeline.release import ReleaseContext, run_release
from verify.bundle.verifier import verify_bundle
from verify.trusted_keys import load_trusted_keys

REPO_ROOT = Path(__file__).resolve().parents[2]


def _tree(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.mark.integration
@pytest.mark.slow
def test_real_release_verifies_and_reproduces(tmp_path: Path) -> None:
    bundles = []
    for name in ("first", "second"):
        ctx = ReleaseContext(repo_root=REPO_ROOT, dist=tmp_path / name, allow_dirty=True, env={})
        run_release(ctx, say=lambda line: None)
        assert ctx.bundle is not None
        bundles.append(ctx.bundle)
    trusted = load_trusted_keys(REPO_ROOT / ".dev-keys/development.trusted-keys.json")
    verdict = verify_bundle(bundles[0], trusted, allow_dev_key=True, now=int(time.time()))
    assert verdict.key_class == "development"
    assert _tree(bundles[0]) == _tree(bundles[1])
