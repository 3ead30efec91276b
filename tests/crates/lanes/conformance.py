"""The conformance rule of crates/core/src/kernels/tolerance.rs, restated for the lane tests.

A lane value conforms to the oracle's when the bits are equal, or (with a tier) both are
finite and |v - e| <= abs + rel * |e|, or they are at most max_ulp representable f32 apart.
No tier (`alternate_tolerance: null`) means bit-exact.
"""

from __future__ import annotations

import math
import struct

from verify.formats.golden import Tolerance


def f32(bits: int) -> float:
    return float(struct.unpack("<f", struct.pack("<I", bits))[0])


def _ordered(bits: int) -> int:
    return -(bits & 0x7FFF_FFFF) if bits & 0x8000_0000 else bits


def ulp_distance(a_bits: int, b_bits: int) -> int:
    """Representable f32 values between two bit patterns; NaN is infinitely far."""
    if math.isnan(f32(a_bits)) or math.isnan(f32(b_bits)):
        return 2**32
    return abs(_ordered(a_bits) - _ordered(b_bits))


def conforms(got_bits: int, oracle_bits: int, tier: Tolerance | None) -> bool:
    if got_bits == oracle_bits:
        return True
    if tier is None:
        return False
    got, oracle = f32(got_bits), f32(oracle_bits)
    if not (math.isfinite(got) and math.isfinite(oracle)):
        return False
    within = abs(got - oracle) <= tier.abs + tier.rel * abs(oracle)
    return within or ulp_distance(got_bits, oracle_bits) <= tier.max_ulp
