"""CONTRACT.md §12 "Exact by construction", checked on the independent numpy statement
(tests/crates/runtime/relaxedref.py): on the domain of the relaxed lanes' two constructions (q8
weight codes -128..127 and q4 codes -8..7 against activation codes -127..127) every semantics the
relaxed-SIMD specification allows gives the same products, pair sums inside i16 and the plain
integer block dot; outside that domain (a second-operand byte with its top bit set) they do not,
which is why the construction matters; and the integer tier's golden rows come out of the
constructions under every semantics."""

from __future__ import annotations

import numpy as np
import pytest

from tests.crates.runtime import int8ref, relaxedref
from tests.crates.runtime.relaxedref import SEMANTICS, Semantics
from tests.crates.runtime.test_golden_vectors import raw
from tests.crates.runtime.test_int8_golden import ROWS, _x
from verify.formats.golden import F32Expected, GoldenVector

W8 = np.arange(-128, 128, dtype=np.int64)  # every q8 weight code
W4 = np.arange(-8, 8, dtype=np.int64)  # every q4 weight code
X = np.arange(-127, 128, dtype=np.int64)  # every activation code (-128 never occurs)
SEM_IDS = [s.name for s in SEMANTICS]
I16 = (-32768, 32767)


def _table(a: np.ndarray, b: np.ndarray, sem: Semantics) -> np.ndarray:
    return relaxedref.products(a.ravel(), b.ravel(), sem).reshape(a.shape)


def _operands_q8() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, b, w * x) of every (w, x): a = w with x's sign moved on (ones' complement), b = |x|."""
    w, x = np.meshgrid(W8, X, indexing="ij")
    return np.where(x < 0, -w - 1, w), np.abs(x), w * x


@pytest.mark.parametrize("sem", SEMANTICS, ids=SEM_IDS)
def test_q8_products_are_the_same_in_every_semantics(sem: Semantics) -> None:
    a, b, wx = _operands_q8()
    assert a.min() >= -128 and a.max() <= 127, "a is a byte: -w - 1 never overflows"
    assert b.min() >= 0 and b.max() <= 127, "b is a 7-bit byte"
    p = _table(a, b, sem)
    # (w ^ s) * |x| = w * x - [x < 0] * |x|: the sum's correction is the token's own
    assert np.array_equal(p, wx - np.where(X < 0, -X, 0)[None, :])
    # every pair sum lies in [2 * min, 2 * max], inside i16: no wrap, no saturation
    assert (2 * p.min(), 2 * p.max()) == (-32512, 32258)
    assert I16[0] <= 2 * p.min() and 2 * p.max() <= I16[1]


@pytest.mark.parametrize("sem", SEMANTICS, ids=SEM_IDS)
def test_q4_products_are_the_same_in_every_semantics(sem: Semantics) -> None:
    x, n = np.meshgrid(X, W4 + 8, indexing="ij")  # a = the activation, b = the nibble 0..15
    p = _table(x, n, sem)
    assert np.array_equal(p, x * n)
    assert (2 * p.min(), 2 * p.max()) == (-3810, 3810)
    # the corrections' dots: sign (-1, 0) * |x| and x * 8
    s = _table(np.where(X < 0, -1, 0), np.abs(X), sem)
    assert np.array_equal(s, np.where(X < 0, X, 0))
    assert np.array_equal(_table(X, np.full_like(X, 8), sem), 8 * X)


def _blocks(rng: np.random.Generator) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    """(name, q8 codes, q4 codes, activation codes) of 32 each: the extremes, then random."""

    def full(v: int) -> np.ndarray:
        return np.full(32, v, np.int64)

    def alt(u: int, v: int) -> np.ndarray:
        return np.array([u, v] * 16, np.int64)

    out = [
        ("w -128, x -127", full(-128), full(-8), full(-127)),
        ("w -128, x 127", full(-128), full(-8), full(127)),
        ("w 127, x -127", full(127), full(7), full(-127)),
        ("w 127, x 127", full(127), full(7), full(127)),
        ("w -127, x -127", full(-127), full(-8), full(-127)),
        ("alternating", alt(-128, 127), alt(-8, 7), alt(-127, 127)),
        ("all-zero activations", full(-128), full(-8), full(0)),
        ("all-zero weights", full(0), full(0), full(-127)),
    ]
    for k in range(200):
        out.append(
            (
                f"random {k}",
                rng.integers(-128, 128, 32),
                rng.integers(-8, 8, 32),
                rng.integers(-127, 128, 32),
            )
        )
    return out


@pytest.mark.parametrize("sem", SEMANTICS, ids=SEM_IDS)
def test_the_constructions_are_the_integer_dot(sem: Semantics) -> None:
    for name, w8, w4, x in _blocks(np.random.default_rng(12)):
        assert relaxedref.q8_isum(w8, x, sem) == int((w8 * x).sum()), f"q8 {name}"
        assert relaxedref.q4_isum(w4 + 8, x, sem) == int((w4 * x).sum()), f"q4 {name}"


def test_outside_the_domain_the_semantics_disagree() -> None:
    # the spec tests' multiple-choice results (relaxed_dot_product.wast): b bytes -127 (top bit
    # set) against a bytes -128 give four different answers, each one semantics of the model
    # (which combines every choice freely: a superset of what engines may do)
    a = np.array([-128] * 4 + [0] * 12, np.int64)
    b = np.array([-127] * 4 + [0] * 12, np.int64)
    got = {int(relaxedref.dot_add(a, b, np.array([1, 2, 3, 4]), s)[0]) for s in SEMANTICS}
    assert got >= {-66047, -65535, 65025, 66049}
    # |w| as the 7-bit operand breaks at w = -128 (|-128| is the byte 0x80): not exact, and
    # the engines would disagree
    w, x = np.full(32, -128, np.int64), np.full(32, 127, np.int64)
    results = {relaxedref.magnitude_of_w_isum(w, x, s) for s in SEMANTICS}
    assert len(results) > 1 and int((w * x).sum()) in results
    # ... while it is exact on -127..127, like the one the lanes use
    w = np.full(32, -127, np.int64)
    assert {relaxedref.magnitude_of_w_isum(w, x, s) for s in SEMANTICS} == {int((w * x).sum())}


def test_the_contracts_worked_example() -> None:
    # CONTRACT §12: q8 codes [2, -3, -128, 127] against activation codes [127, 38, -127, -1]
    w = np.array([2, -3, -128, 127] + [0] * 28, np.int64)
    x = np.array([127, 38, -127, -1] + [0] * 28, np.int64)
    assert int((w * x).sum()) == 2 * 127 - 3 * 38 + 128 * 127 - 127 == 16269
    a = np.where(x < 0, -w - 1, w)
    assert list(a[:4]) == [2, -3, 127, -128]
    assert int((a * np.abs(x)).sum()) == 16141 and int(np.where(x < 0, -x, 0).sum()) == 128
    for sem in SEMANTICS:
        assert relaxedref.q8_isum(w, x, sem) == 16269
    # q4 codes [-8, 7, 0, -1] (nibbles [0, 15, 8, 7]) against the same activations
    n = np.array([0, 15, 8, 7] + [8] * 28, np.int64)
    assert int(((n - 8) * x).sum()) == -8 * 127 + 7 * 38 + 0 + 1 == -749
    assert int((n * x).sum()) == 15 * 38 - 8 * 127 - 7 and int(x.sum()) == 37
    for sem in SEMANTICS:
        assert relaxedref.q4_isum(n, x, sem) == -749


@pytest.mark.parametrize("vector", ROWS, ids=[v.id for v in ROWS])
def test_integer_golden_rows_through_every_semantics(vector: GoldenVector) -> None:
    assert isinstance(vector.expected, F32Expected)
    layout = "q8" if vector.operator == "int8_q8_matvec" else "q4"
    codes, scales = int8ref.quantize(_x(vector))
    w, rows = raw(vector, "w"), vector.shape["rows"]
    row_bytes = len(w) // rows
    for sem in (relaxedref.DETERMINISTIC, *SEMANTICS):
        values = [
            relaxedref.row_dot(layout, w[r * row_bytes : (r + 1) * row_bytes], codes, scales, sem)
            for r in range(rows)
        ]
        got = [f"0x{int(v.view(np.uint32)):08x}" for v in values]
        assert got == vector.expected.values, sem.name
