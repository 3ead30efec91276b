"""tests/mutants/js_run.py: Stryker's JSON report read into per-file scores, equivalents by
the mutated text, and the floor per file (hand-made reports; no Stryker run)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.mutants import js_run

SOURCE = "const a = x < 1;\nif (ok &&\n    ready) go();\n"
PATH = str(js_run.REPO_ROOT / "crates/wasm/js/trust.js")


def _mutant(
    status: str, mutator: str, start: tuple[int, int], end: tuple[int, int], replacement: str
) -> dict[str, Any]:
    return {
        "mutatorName": mutator,
        "replacement": replacement,
        "status": status,
        "location": {
            "start": {"line": start[0], "column": start[1]},
            "end": {"line": end[0], "column": end[1]},
        },
    }


LESS = _mutant("Survived", "EqualityOperator", (1, 11), (1, 16), "x <= 1")
AND = _mutant("NoCoverage", "LogicalOperator", (2, 5), (3, 10), "ok || ready")


def test_a_mutant_is_named_by_its_text_not_its_line() -> None:
    rel = "crates/wasm/js/trust.js"
    assert js_run.mutant_name(rel, SOURCE, LESS) == f"{rel}: EqualityOperator `x < 1` -> `x <= 1`"
    assert (
        js_run.mutant_name(rel, SOURCE, AND)
        == f"{rel}: LogicalOperator `ok && ready` -> `ok || ready`"
    )


def test_scores_count_timeouts_as_killed_and_skip_what_is_no_mutant() -> None:
    mutants = [
        _mutant("Killed", "BooleanLiteral", (1, 1), (1, 2), "x"),
        _mutant("Timeout", "BooleanLiteral", (1, 1), (1, 2), "y"),
        _mutant("CompileError", "BooleanLiteral", (1, 1), (1, 2), "z"),
        LESS,
        AND,
    ]
    report = {"files": {PATH: {"source": SOURCE, "mutants": mutants}}}
    equivalent = {"crates/wasm/js/trust.js: EqualityOperator `x < 1` -> `x <= 1`": "why"}
    row = js_run.score(report, equivalent)["files"]["crates/wasm/js/trust.js"]
    assert (row["total"], row["killed"], row["equivalent"]) == (4, 2, 1)
    assert row["score"] == round(100 * 2 / 3, 1)
    assert row["survivors"] == [
        "crates/wasm/js/trust.js: LogicalOperator `ok && ready` -> `ok || ready` "
        "(NoCoverage, line 2)"
    ]


def test_an_equivalent_killed_or_gone_is_stale() -> None:
    killed = {**LESS, "status": "Killed"}
    report = {"files": {PATH: {"source": SOURCE, "mutants": [killed]}}}
    listed = {
        "crates/wasm/js/trust.js: EqualityOperator `x < 1` -> `x <= 1`": "killed now",
        "crates/wasm/js/trust.js: gone": "no such mutant",
    }
    assert js_run.score(report, listed)["stale_equivalents"] == sorted(listed)


def test_the_listed_equivalents_are_well_formed() -> None:
    for name in js_run.js_equivalents():
        assert name.startswith(("crates/wasm/js/trust.js: ", "crates/wasm/js/fetch.js: ")), name
        assert " -> `" in name, name


def _row(score: float, survivors: int = 0) -> dict[str, Any]:
    return {"score": score, "survivors": ["x"] * survivors}


def test_a_file_under_its_floor_fails_naming_its_score_and_floor() -> None:
    floors = {"crates/wasm/js/fetch.js": 90.0, "crates/wasm/js/trust.js": 90.0}
    held = {"crates/wasm/js/fetch.js": _row(90.0), "crates/wasm/js/trust.js": _row(97.3)}
    assert js_run.under_floor(held, floors) == []
    under = {**held, "crates/wasm/js/fetch.js": _row(89.9, 12)}
    assert js_run.under_floor(under, floors) == [
        "crates/wasm/js/fetch.js: 89.9% is under its floor of 90% (12 surviving; kill them, "
        "or list a reviewed equivalent in equivalent.toml)"
    ]


def test_a_file_without_a_floor_or_a_floor_without_its_file_fails() -> None:
    floors = {"crates/wasm/js/trust.js": 90.0}
    files = {"crates/wasm/js/session.js": _row(100.0)}
    assert js_run.under_floor(files, floors) == [
        "crates/wasm/js/trust.js: not mutated, but it has a floor of 90%",
        "crates/wasm/js/session.js: mutated, but it has no floor in floors.json",
    ]


def test_the_floors_are_the_mutated_files_each_at_90_or_more() -> None:
    floors = js_run.js_floors()
    config = json.loads(js_run.CONFIG.read_text(encoding="utf-8"))
    assert sorted(floors) == sorted(config["mutate"])
    assert all(f >= 90 for f in floors.values()), floors  # issue 36


@pytest.mark.parametrize("bad", [{"a.js": 101}, {"a.js": True}, {"a.js": "90"}, ["a.js"], None])
def test_a_malformed_floor_table_is_refused(tmp_path: Path, bad: object) -> None:
    path = tmp_path / "floors.json"
    path.write_text(json.dumps({"floors": bad}))
    with pytest.raises(SystemExit, match="floors is a table of file -> percentage"):
        js_run.js_floors(path)


def test_the_run_fails_when_a_file_is_under_its_floor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """run() end to end with Stryker replaced by a report of 8 killed and 2 surviving (80%)."""
    path = str(js_run.REPO_ROOT / "crates/wasm/js/fetch.js")
    mutants = [_mutant("Killed", "BooleanLiteral", (1, 1), (1, 2), "x")] * 8 + [LESS, AND]
    report = tmp_path / "mutation.json"
    floors = tmp_path / "floors.json"
    floors.write_text(json.dumps({"floors": {"crates/wasm/js/fetch.js": 90}}))

    def stryker(argv: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        report.write_text(json.dumps({"files": {path: {"source": SOURCE, "mutants": mutants}}}))
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(js_run, "install", lambda: tmp_path / "stryker.js")
    monkeypatch.setattr(js_run, "REPORT", report)
    monkeypatch.setattr(js_run, "FLOORS", floors)
    monkeypatch.setattr(js_run, "js_equivalents", dict)
    monkeypatch.setattr("tests.mutants.js_run.subprocess.run", stryker)
    status, result = js_run.run(1)
    out = capsys.readouterr().out
    assert status == 1
    assert result["under_floor"] == [
        "crates/wasm/js/fetch.js: 80.0% is under its floor of 90% (2 surviving; kill them, "
        "or list a reviewed equivalent in equivalent.toml)"
    ]
    assert "under the mutation floor" in out and result["under_floor"][0] in out
