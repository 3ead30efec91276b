"""The planted-bug list stays applicable: every patch (and its scaffolding) finds its text in
today's tree exactly as often as it says, and names tests that exist. Fast: nothing runs; the
bugs themselves run under `nox -s mutants`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.mutants import planted

BUGS = planted.load()
REPO_ROOT = Path(__file__).resolve().parents[2]


def test_twenty_three_bugs_with_unique_ids() -> None:
    # issue 17's twelve, issue 25's three (the integer tier), issue 26's eight (boundaries)
    assert len(BUGS) == 23 and len({b.id for b in BUGS}) == 23


@pytest.mark.parametrize("bug", BUGS, ids=[b.id for b in BUGS])
def test_patch_applies_to_this_tree(bug: planted.Bug) -> None:
    for edit in (planted.Edit(bug.file, bug.find, bug.replace, bug.count), *bug.also):
        text = (REPO_ROOT / edit.file).read_text(encoding="utf-8")
        assert text.count(edit.find) == edit.count, f"{edit.file}: stale `find`"
        assert edit.find != edit.replace
    paths = [t for t in bug.tests if t.startswith("tests/")]
    assert paths and all((REPO_ROOT / p).exists() for p in paths)


def test_a_planted_bug_is_committed_so_a_clone_of_head_carries_it(tmp_path: Path) -> None:
    """The loader, conformance and release tests clone HEAD: the bug must be in HEAD."""
    bug = BUGS[0]
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", "--shared", str(REPO_ROOT), str(clone)], check=True)
    assert planted.plant(bug, clone) is None
    status = subprocess.run(
        ["git", "-C", str(clone), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert status == ""
    second = tmp_path / "second"  # what tests/clones.py does
    subprocess.run(["git", "clone", "--quiet", str(clone), str(second)], check=True)
    assert bug.replace in (second / bug.file).read_text(encoding="utf-8")
