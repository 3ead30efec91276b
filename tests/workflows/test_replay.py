"""release.yml replayed here (tests/workflows/replay.py) makes the very bundle that
`./nox -s release` makes from the same commit and key. Six lane builds, each in its own
clean clone, then the reference release in another: integration, and slow."""

from __future__ import annotations

import filecmp
import os
import subprocess
from pathlib import Path

import pytest

from pipeline.documents.keys import generate_key_files
from tests.clones import clone_head

from .replay import Replay

pytestmark = [pytest.mark.integration, pytest.mark.replay]
REPO = Path(__file__).resolve().parents[2]
RELEASE_ARGS = ["--conformance", "--conformance-require", "chromium,firefox,webkit"]


def _tree(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_the_replayed_release_is_the_nox_release(tmp_path: Path) -> None:
    keys = generate_key_files(tmp_path / "keys", "replay", "release")
    pem = keys.private_pem.read_text(encoding="utf-8")
    replay = Replay(
        REPO / ".github" / "workflows" / "release.yml",
        tmp_path / "replay",
        secrets={"TINYRUSTLM_RELEASE_KEY_PEM": pem},
    )
    results: dict[str, set[str]] = {}
    for r in replay.run():
        results.setdefault(r.name.split(" ")[0], set()).add(r.status)
    assert results == {
        "plan": {"passed"},
        "build": {"passed"},
        "smoke": {"passed"},  # under qemu and wine here: no arm64 or Windows hardware
        "assemble": {"passed"},
        "github-release": {"skipped"},  # tags only; needs GitHub
        "publish": {"skipped"},
        "pages": {"skipped"},
    }
    built = [r.name for r in replay.results if r.name.startswith("build ")]
    assert len(built) == 6
    (replayed,) = (tmp_path / "replay" / "artifacts" / "bundle").glob("tinyrustlm-*")

    clone = clone_head(tmp_path / "reference")  # the very commit the replay ran
    subprocess.run(
        ["git", "-C", str(clone), "checkout", "-q", "--detach", replay.commit], check=True
    )
    home = tmp_path / "reference-home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}  # the machine's (certificates, pip), its own HOME
    subprocess.run(
        ["./nox", "-s", "release", "--", "--key", str(keys.private_pem), *RELEASE_ARGS],
        cwd=clone,
        env=env,
        check=True,
    )
    (reference,) = (clone / "dist").glob("tinyrustlm-*")
    assert _tree(replayed) == _tree(reference)
    _, mismatch, errors = filecmp.cmpfiles(replayed, reference, _tree(reference), shallow=False)
    assert (mismatch, errors) == ([], [])
