"""The integer tier's golden vectors (tests/golden/int8_*.json, made by the scalar oracle)
against the independent numpy statement of CONTRACT.md §10 (tests/crates/runtime/int8ref.py): the
quantizer (edge values and every length 1..64), the integer q8/q4 rows (every tail 1..64),
and the `small-int8` model's token sequences through forward_ref's INT8 kernel set."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from pipeline.modelpack import PRESETS, pack
from tests.crates.runtime import forward_ref, int8ref
from tests.crates.runtime.test_e2e_reference import reference_run
from tests.crates.runtime.test_golden_vectors import load, raw
from verify.formats.golden import (
    F32Expected,
    F32Input,
    GoldenVector,
    ResultExpected,
    U32Expected,
)

NUMERICAL_FAILURE = 18
QUANTIZE = load("int8_quantize")
ROWS = load("int8_q8_matvec") + load("int8_q4_matvec")
E2E = load("int8_e2e_decode")


def _x(v: GoldenVector) -> np.ndarray:
    item = v.inputs["x"]
    assert isinstance(item, F32Input)
    return np.array([int(b, 16) for b in item.values], dtype=np.uint32).view(np.float32)


@pytest.mark.parametrize("vector", QUANTIZE, ids=[v.id for v in QUANTIZE])
def test_quantizer_golden_matches_the_reference(vector: GoldenVector) -> None:
    x = _x(vector)
    if isinstance(vector.expected, ResultExpected):
        assert vector.expected.code == NUMERICAL_FAILURE
        with pytest.raises(int8ref.NonFinite):
            int8ref.quantize(x)
        return
    assert isinstance(vector.expected, U32Expected)
    codes, scales = int8ref.quantize(x)
    want: list[int] = []
    for b, s in enumerate(scales):
        want.append(int(np.float32(s).view(np.uint32)))
        want += [int(c) & 0xFF for c in codes[b * 32 : (b + 1) * 32]]
    assert vector.expected.values == want


def test_every_quantizer_length_and_tail_is_covered() -> None:
    lengths = {v.shape["n"] for v in QUANTIZE if v.id.startswith("int8_quantize.len-")}
    assert lengths == set(range(1, 65))
    for op in ("int8_q8_matvec", "int8_q4_matvec"):
        assert sorted(v.shape["cols"] for v in load(op)) == list(range(1, 65))
    assert all(v.alternate_tolerance is None for v in QUANTIZE + ROWS + E2E), "the tier is exact"


@pytest.mark.parametrize("vector", ROWS, ids=[v.id for v in ROWS])
def test_integer_rows_golden_match_the_reference(vector: GoldenVector) -> None:
    assert isinstance(vector.expected, F32Expected)
    layout = "q8" if vector.operator == "int8_q8_matvec" else "q4"
    codes, scales = int8ref.quantize(_x(vector))
    w, rows = raw(vector, "w"), vector.shape["rows"]
    row_bytes = len(w) // rows
    got = []
    for r in range(rows):
        value = int8ref.row_dot(layout, w[r * row_bytes : (r + 1) * row_bytes], codes, scales)
        got.append(f"0x{int(value.view(np.uint32)):08x}")
    assert got == vector.expected.values


@cache
def _int8_model() -> forward_ref.Model:
    return forward_ref.load_model(pack(PRESETS["small-int8"], 7))


@pytest.mark.slow
@pytest.mark.parametrize("vector", E2E, ids=[v.id for v in E2E])
def test_int8_e2e_golden_tokens_match_the_python_reference(vector: GoldenVector) -> None:
    assert isinstance(vector.expected, U32Expected)
    assert reference_run(vector, forward_ref.INT8, _int8_model()).tokens == vector.expected.values
