"""CI's seeded sample of the parser mutation campaign (the full run is `nox -s fuzz`)."""

from __future__ import annotations

import pytest

from tests.fuzz import parser_mutation

SAMPLE = 300  # cases per seed: a few seconds, wasm-tools included


@pytest.mark.parametrize("seed", [11, 12], ids=["seed-11", "seed-12"])
def test_parser_mutation_sample_holds(seed: int) -> None:
    result = parser_mutation.run(seed, SAMPLE, compare_every=5, include_lanes=False)
    assert result.count == SAMPLE
    assert result.examples == [] and result.failed == 0
    # Both verdicts are exercised, and the comparison really ran.
    assert sum(result.compared.values()) > SAMPLE // 5
    assert {"accepted", "malformed"} <= {o for per in result.outcomes.values() for o in per}


def test_a_structure_mismatch_is_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plant the bug: a parser that accepts everything must fail the campaign."""
    monkeypatch.setattr(parser_mutation, "inventory_bytes", lambda data: None)
    result = parser_mutation.run(11, 60, include_lanes=False)
    assert result.failed > 0
    assert {e.outcome for e in result.examples} == {"structure-mismatch"}


def test_batched_verdicts_are_validate_s_verdicts() -> None:
    """Every batched (`wasm-tools wast`) verdict of a sample asked of `validate` alone too."""
    result = parser_mutation.run(13, 120, include_lanes=False, batch=40, cross_check_every=1)
    assert result.failed == 0
    checks = result.outcomes[parser_mutation.REFERENCE]
    assert checks.get("agree", 0) + checks.get("asked-validate", 0) == sum(result.compared.values())
    assert checks.get("differs", 0) == 0 and checks.get("agree", 0) > 100
    assert result.compared.get("agree-invalid", 0) > 0 and result.compared.get("agree-valid", 0) > 0


def test_a_wrong_batched_verdict_is_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plant the bug: a batch runner that calls every module valid must fail the campaign."""
    monkeypatch.setattr(
        parser_mutation, "wasm_tools_verdicts", lambda tool, modules: [(True, "")] * len(modules)
    )
    result = parser_mutation.run(13, 60, include_lanes=False, cross_check_every=1)
    assert result.failed > 0
    assert "reference-disagrees" in {e.outcome for e in result.examples}
