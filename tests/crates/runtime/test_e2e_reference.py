"""The end-to-end token goldens against the independent Python forward pass and sampler
(forward_ref with the scalar kernel set, sampler_ref): a regenerated golden cannot absorb a
runtime or sampler bug. No build; a few seconds per record."""

from __future__ import annotations

from functools import cache

import pytest

from pipeline.modelpack import PRESETS, pack
from tests.crates.runtime import forward_ref, sampler_ref
from tests.crates.runtime.f32ref import from_bits
from tests.crates.runtime.test_golden_vectors import load
from verify.formats.golden import GoldenVector, U32Expected, U32Input

E2E = load("e2e_decode")


@cache
def small_model() -> forward_ref.Model:
    return forward_ref.load_model(pack(PRESETS["small"], 7))


def reference_run(
    vector: GoldenVector, kernels: forward_ref.Kernels, model: forward_ref.Model | None = None
) -> forward_ref.Generated:
    p = vector.params

    def f(name: str) -> float:
        value = p[name]
        assert isinstance(value, str)
        return from_bits(value)

    seed, stream, top_k = p["seed"], p["stream"], p["top_k"]
    assert isinstance(seed, int) and isinstance(stream, int) and isinstance(top_k, int)
    prompt = vector.inputs["prompt_tokens"]
    assert isinstance(prompt, U32Input)
    config = sampler_ref.Config(f("temperature"), top_k, f("top_p"), f("repetition_penalty"))
    return forward_ref.generate(
        model or small_model(),
        kernels,
        prompt.values,
        config,
        seed,
        stream,
        vector.shape["max_tokens"],
    )


@pytest.mark.slow
@pytest.mark.parametrize("vector", E2E, ids=[v.id for v in E2E])
def test_e2e_golden_tokens_match_the_python_reference(vector: GoldenVector) -> None:
    assert isinstance(vector.expected, U32Expected)
    assert reference_run(vector, forward_ref.ORACLE).tokens == vector.expected.values
