"""The mutation summary (`mutants/summary.json`): scores per file, reviewed equivalents
counted apart and the list itself kept honest. Fast: mutmut does not run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mutants import run

STATUSES = {
    "verify.canonical.x_parse__mutmut_1": "killed",
    "verify.canonical.x_parse__mutmut_2": "survived",
    "verify.canonical.x_parse__mutmut_3": "not checked",
    "verify.bundle.dsse.x_pae__mutmut_1": "killed",
    "verify.bundle.dsse.x_pae__mutmut_2": "caught by type check",
    "verify.bundle.dsse.x_pae__mutmut_3": "timeout",
    "verify.bundle.dsse.x_pae__mutmut_4": "survived",
}


def test_per_file_scores_and_equivalents() -> None:
    equivalent = {
        "verify.bundle.dsse.x_pae__mutmut_4": run.Equivalent("x", "no observable difference")
    }
    summary = run.score(STATUSES, equivalent)
    assert (summary["total"], summary["killed"], summary["equivalent"]) == (6, 3, 1)
    assert (summary["score"], summary["raw_score"]) == (60.0, 50.0)
    assert summary["files"] == {
        "verify/bundle/dsse.py": {
            "total": 4, "killed": 2, "equivalent": 1, "score": 66.7,
            "survivors": ["verify.bundle.dsse.x_pae__mutmut_3 (timeout)"],
        },
        "verify/canonical.py": {
            "total": 2, "killed": 1, "equivalent": 0, "score": 50.0,
            "survivors": ["verify.canonical.x_parse__mutmut_2 (survived)"],
        },
    }  # fmt: skip
    assert summary["stale_equivalents"] == []


def test_a_killed_equivalent_is_stale() -> None:
    equivalent = {"verify.canonical.x_parse__mutmut_1": run.Equivalent("x", "thought so")}
    summary = run.score(STATUSES, equivalent)
    assert summary["stale_equivalents"] == ["verify.canonical.x_parse__mutmut_1"]
    assert summary["equivalent"] == 0


def test_the_reviewed_list_parses(tmp_path: Path) -> None:
    assert all(e.reason for e in run.equivalents().values())
    listed = tmp_path / "equivalent.toml"
    listed.write_text('[[mutant]]\nname = "a"\nreason = " "\n')
    with pytest.raises(SystemExit):
        run.equivalents(listed)
    listed.write_text('[[mutant]]\nname = "a"\nreason = "r"\n' * 2)
    with pytest.raises(SystemExit):
        run.equivalents(listed)
