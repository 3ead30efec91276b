"""The sampler goldens against the independent Python sampler (sampler_ref.py): every record,
every draw, the error codes too. Fast: no build."""

from __future__ import annotations

import pytest

from tests.crates.runtime import sampler_ref
from tests.crates.runtime.f32ref import InvalidArgument, NumericalFailure, Pcg32, from_bits
from tests.crates.runtime.test_golden_vectors import floats, load
from verify.formats.golden import GoldenVector, ResultExpected, U32Expected

SAMPLER = load("sampler")


def config_of(v: GoldenVector) -> sampler_ref.Config:
    def f(name: str) -> float:
        value = v.params[name]
        assert isinstance(value, str)
        return from_bits(value)

    top_k = v.params["top_k"]
    assert isinstance(top_k, int)
    return sampler_ref.Config(f("temperature"), top_k, f("top_p"), f("repetition_penalty"))


def rng_of(v: GoldenVector) -> Pcg32:
    seed, stream = v.params["seed"], v.params["stream"]
    assert isinstance(seed, int) and isinstance(stream, int)
    return Pcg32(seed, stream)


@pytest.mark.parametrize("vector", SAMPLER, ids=[v.id for v in SAMPLER])
def test_sampler_golden_matches_the_python_sampler(vector: GoldenVector) -> None:
    logits = floats(vector, "logits")
    history_input = vector.inputs["history"]
    history = list(getattr(history_input, "values", []))
    config, rng = config_of(vector), rng_of(vector)
    draws = vector.shape["draws"]
    if isinstance(vector.expected, ResultExpected):
        with pytest.raises((NumericalFailure, InvalidArgument)) as caught:
            sampler_ref.sample(logits, history, config, rng)
        assert getattr(caught.value, "code", None) == vector.expected.code
        return
    assert isinstance(vector.expected, U32Expected)
    got = [sampler_ref.sample(logits, history, config, rng) for _ in range(draws)]
    assert got == vector.expected.values


def test_top_p_boundary_cases_discriminate() -> None:
    """Some golden draw keeps more than one token under top-p < 1: a sampler that keeps one
    token too few gives other tokens there (the goldens alone could absorb that bug)."""
    cut = [v for v in SAMPLER if config_of(v).top_p < 1 and config_of(v).temperature > 0]
    assert cut
    for v in cut:
        logits, history = floats(v, "logits"), list(getattr(v.inputs["history"], "values", []))
        rng = rng_of(v)
        tokens = {
            sampler_ref.sample(logits, history, config_of(v), rng) for _ in range(v.shape["draws"])
        }
        assert len(tokens) > 1, v.id
