"""CI's seeded sample of the model mutation campaign through the scalar lane (integration:
the lane is built with the pinned toolchain)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz import model_mutation

pytestmark = pytest.mark.integration
SAMPLE = 400


def test_model_mutation_sample_holds(scalar_wasm: Path) -> None:
    result = model_mutation.run(21, SAMPLE, module=scalar_wasm)
    assert result.count == SAMPLE and result.failed == 0, result.examples
    outcomes = {o for per in result.outcomes.values() for o in per}
    assert "Ok+Ok" in outcomes and "Bounds" in outcomes and "InvalidModel" in outcomes


def test_a_wrong_result_is_a_failure(scalar_wasm: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Plant the bug: if every named case expected `Ok`, the campaign must notice."""
    from tests.crates.runtime import malformed

    wrong = tuple(malformed.Case(c.name, c.mutate, "Ok") for c in malformed.CASES)
    monkeypatch.setattr(model_mutation, "CASES", wrong)
    result = model_mutation.run(21, 80, module=scalar_wasm)
    assert result.failed > 0 and {e.outcome for e in result.examples} == {"wrong-result"}
