"""The SIMD lanes' vectorised `exp_det` (kernels/simd128.rs `exp4`, in softmax and SiLU·up)
against the scalar oracle bit for bit, in the simd128 and relaxed-SIMD kernel harnesses
(wasmtime): every range of exp_det (NaN, ±inf, the overflow and underflow thresholds and their
neighbours, k = 128 and k = -126, ±0, subnormals) and a dense sweep, at every lane of an f32x4
and in the scalar tail."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests.crates.lanes.test_int8_kernels import Harness

F32 = np.float32
LANES = [("simd128-wasm32", None), ("relaxed-simd128-wasm32", True)]


@pytest.fixture(scope="module", params=LANES, ids=["simd128", "relaxed"])
def lane(request: pytest.FixtureRequest, harness: Callable[[str], Path]) -> Harness:
    lane_id, relaxed = request.param
    return Harness(harness(lane_id), relaxed)


def _edges() -> np.ndarray:
    over, under = F32(88.72283), F32(-87.33654)
    picks = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, float("inf"), float("-inf"), 2.0**-149, -(2.0**-149)]
    for v in (over, under, F32(88.0296919), F32(-87.0), F32(88.5), F32(-86.9)):
        picks += [float(v), float(np.nextafter(v, F32(0))), float(np.nextafter(v, F32(200)))]
        picks += [float(np.nextafter(v, F32(-200)))]
    rng = np.random.default_rng(32)
    sweep = np.linspace(-100.0, 100.0, 4001, dtype=F32)
    wide = (rng.standard_normal(2000) * 30).astype(F32)
    return np.concatenate([np.array(picks, dtype=F32), sweep, wide]).astype(F32)


def _silu(lane: Harness, kernel_set: int, gate: np.ndarray, up: np.ndarray) -> np.ndarray:
    g = lane.put(gate.astype("<f4").tobytes())
    rc = lane.call("h_silu_mul", kernel_set, g, lane.put(up.astype("<f4").tobytes()), gate.size)
    assert rc == 0
    return np.frombuffer(lane.get(g, 4 * gate.size), "<u4").copy()


@pytest.mark.integration
@pytest.mark.parametrize("shift", [0, 1, 2, 3])
def test_silu_mul_equals_the_oracle_bit_for_bit(lane: Harness, shift: int) -> None:
    x = np.concatenate([np.zeros(shift, dtype=F32), _edges()])  # every value in every lane
    up = np.ones_like(x)
    got, want = _silu(lane, 1, x, up), _silu(lane, 0, x, up)
    nan = np.isnan(want.view(F32))
    assert np.array_equal(np.isnan(got.view(F32)), nan)
    bad = np.flatnonzero(got[~nan] != want[~nan])
    assert bad.size == 0, [
        (float(x[~nan][i]), hex(got[~nan][i]), hex(want[~nan][i])) for i in bad[:5]
    ]


@pytest.mark.integration
@pytest.mark.parametrize("n", [2, 3, 4, 5, 7, 8, 9, 64, 333])
def test_softmax_equals_the_oracle_bit_for_bit(lane: Harness, n: int) -> None:
    rng = np.random.default_rng(n)
    for spread in (1.0, 10.0, 60.0, 200.0):
        s = (rng.standard_normal(n) * spread).astype(F32)
        s[rng.integers(0, n)] = -np.inf  # exp of -inf - max is +0
        out = []
        for kernel_set in (0, 1):
            p = lane.put(s.astype("<f4").tobytes())
            assert lane.call("h_softmax", kernel_set, p, n) == 0
            out.append(lane.get(p, 4 * n))
        assert out[1] == out[0], (n, spread)
