"""tests/mutants/js_run.py: Stryker's JSON report read into per-file scores, equivalents by
the mutated text (hand-made reports; no Stryker run)."""

from __future__ import annotations

from typing import Any

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
