"""Two clones at different paths, with different HOME, TZ and umask, build identical bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.reproduce import compare_files
from tests.clones import clone_head, run_build

pytestmark = pytest.mark.integration


def _artifacts(clone: Path) -> dict[str, Path]:
    index = json.loads((clone / "build" / "index.json").read_text(encoding="utf-8"))
    return {entry["lane"]: clone / entry["artifact"] for entry in index["lanes"]}


def test_six_lanes_are_bit_identical_across_clones(
    built_clone: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # Cloned from the first clone: the same commit, even if this repository moved on since.
    other = clone_head(tmp_path_factory.mktemp("second") / "a" / "much" / "deeper" / "checkout",
                       source=built_clone)
    home = tmp_path_factory.mktemp("home")
    done = run_build(other, {"HOME": str(home), "TZ": "Pacific/Kiritimati", "LANG": "de_DE.UTF-8"},
                     umask=0o077)
    assert done.returncode == 0, done.stderr[-3000:]
    first, second = _artifacts(built_clone), _artifacts(other)
    assert sorted(first) == sorted(second)
    assert len(first) == 6
    differences = {lane: compare_files(first[lane], second[lane]) for lane in first}
    assert {lane: d for lane, d in differences.items() if d} == {}
    # Content addressing: the same bytes get the same file name.
    assert {lane: p.name for lane, p in first.items()} == {
        lane: p.name for lane, p in second.items()}


def test_a_noop_rebuild_is_served_from_the_cache(built_clone: Path) -> None:
    done = run_build(built_clone)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.count("cached (inputs unchanged)") == 6
