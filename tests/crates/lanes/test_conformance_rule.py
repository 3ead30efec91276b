"""The conformance rule and the tiers the golden vectors declare (fast: no build)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from tests.crates.lanes.conformance import conforms, ulp_distance
from verify.formats.golden import GoldenVector, Tolerance

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
TIER = Tolerance(abs=2.0**-14, rel=2.0**-16, max_ulp=64)
# operators whose SIMD kernels reduce in lanes: the only ones allowed to differ from scalar
REDUCTIONS = {"q8_matvec", "q4_matvec", "f32_matvec", "rmsnorm", "attention"}


def bits(x: float) -> int:
    return int(struct.unpack("<I", struct.pack("<f", x))[0])


ONE = bits(1.0)
CASES = [
    ("equal-bits-no-tier", ONE, ONE, None, True),
    ("one-ulp-no-tier", ONE + 1, ONE, None, False),
    ("64-ulp-within", ONE + 64, ONE, TIER, True),
    ("abs-floor-near-zero", bits(1e-5), bits(-1e-5), TIER, True),
    ("far-relative", bits(1.001), ONE, TIER, False),
    ("nan-never", 0x7FC0_0000, ONE, TIER, False),
    ("nan-equal-bits", 0x7FC0_0000, 0x7FC0_0000, None, True),
    ("inf-vs-max", bits(float("inf")), 0x7F7F_FFFF, TIER, False),
    ("signed-zeros-differ-bitwise", 0x8000_0000, 0, None, False),
    ("signed-zeros-within-tier", 0x8000_0000, 0, TIER, True),
]


@pytest.mark.parametrize(
    ("got", "oracle", "tier", "ok"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_rule(got: int, oracle: int, tier: Tolerance | None, ok: bool) -> None:
    assert conforms(got, oracle, tier) is ok


@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [(0, 0x8000_0000, 0), (1, 0x8000_0001, 2), (ONE, ONE + 5, 5), (0x7FC0_0000, ONE, 2**32)],
    ids=["zeros", "smallest-subnormals", "five", "nan"],
)
def test_ulp_distance(a: int, b: int, distance: int) -> None:
    assert ulp_distance(a, b) == distance


def _records() -> list[GoldenVector]:
    out: list[GoldenVector] = []
    for path in sorted(GOLDEN.glob("*.json")):
        out += [GoldenVector.model_validate(r) for r in json.loads(path.read_text())]
    return out


def test_only_reductions_declare_a_tier() -> None:
    """Elementwise kernels, the sampler and token sequences stay bit-exact in every lane."""
    records = _records()
    assert records
    for r in records:
        if r.operator in REDUCTIONS:
            assert r.alternate_tolerance is not None, r.id
            assert r.alternate_tolerance.max_ulp > 0, r.id
        else:
            assert r.alternate_tolerance is None, r.id
