"""The relaxed lanes' integer block dot (crates/core/CONTRACT.md §12) restated from the contract
text in numpy, not from the Rust code: every semantics the relaxed-SIMD specification allows for
`i32x4.relaxed_dot_i8x16_i7x16_add_s`, and the two constructions that keep its second operand in
[0, 127] — the q8 sign move and the q4 nibble offset — as sums the contract names.

The allowed semantics (the relaxed-SIMD overview's pseudo-code and the spec tests' `either`
results; the Wasm 3.0 numerics' `relaxed_dot_mul`):
- a byte b_i of the second operand with its top bit set is read as signed or as unsigned, and
  the first operand's byte beside it may then be read as unsigned too (the tests' "unsigned *
  unsigned" result); with the top bit clear a_i is signed and b_i is b_i;
- adjacent products are summed into an i16 that wraps, or saturates (x86 PMADDUBSW), or the
  four products of an i32 lane are summed exactly (x86 VPDPBUSD, no i16 step);
- the i16 pairs are then added pairwise into i32 lanes and added to c (i32, wrapping).
`SEMANTICS` combines every choice with every other: a superset of what engines may do, so
agreement over all of it implies agreement over the allowed ones.

Nothing here calls the Rust kernels; `tests/crates/runtime/test_relaxed_reference.py` checks that
every semantics agrees with the plain integer sum (`int8ref`) on the constructions' domain, and
that it would not outside it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from tests.crates.runtime import int8ref

I64 = npt.NDArray[np.int64]
BLOCK = 32

Interpretation = Literal["signed", "unsigned", "both unsigned"]
PairSum = Literal["wrap16", "saturate16", "exact32"]


@dataclass(frozen=True)
class Semantics:
    """One engine's choice for the relaxed integer dot."""

    high_b: Interpretation  # how a byte of b with its top bit set (and the a byte beside it) reads
    pairs: PairSum

    @property
    def name(self) -> str:
        return f"{self.high_b}/{self.pairs}"


HIGH_B: tuple[Interpretation, ...] = ("signed", "unsigned", "both unsigned")
PAIRS: tuple[PairSum, ...] = ("wrap16", "saturate16", "exact32")
SEMANTICS: tuple[Semantics, ...] = tuple(
    Semantics(h, p) for h, p in itertools.product(HIGH_B, PAIRS)
)
DETERMINISTIC = Semantics("signed", "saturate16")  # the spec's deterministic profile


def _wrap(v: I64, bits: int) -> I64:
    half = 1 << (bits - 1)
    return ((v + half) % (1 << bits)) - half


def products(a: I64, b: I64, sem: Semantics) -> I64:
    """a_i * b_i per byte: a and b given as the bytes' signed values (-128..127)."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    high = b < 0  # the top bit of b's byte
    if sem.high_b == "signed":
        bb, aa = b, a
    elif sem.high_b == "unsigned":
        bb, aa = np.where(high, b + 256, b), a
    else:
        bb, aa = np.where(high, b + 256, b), np.where(high & (a < 0), a + 256, a)
    return aa * bb


def dot_add(a: I64, b: I64, c: I64, sem: Semantics) -> I64:
    """i32x4.relaxed_dot_i8x16_i7x16_add_s(a, b, c) under `sem` (a, b: 16 bytes; c: 4 lanes)."""
    p = products(a, b, sem).reshape(4, 4)
    if sem.pairs == "exact32":
        lanes = p.sum(axis=1)
    else:
        pairs = p[:, 0::2] + p[:, 1::2]
        pairs = np.clip(pairs, -32768, 32767) if sem.pairs == "saturate16" else _wrap(pairs, 16)
        lanes = pairs.sum(axis=1)
    return _wrap(lanes + np.asarray(c, dtype=np.int64), 32)


# ---- the constructions (CONTRACT.md §12, "Exact by construction") ----------------------------


def q8_isum(w: I64, x: I64, sem: Semantics) -> int:
    """The q8 block dot of the relaxed lanes: b = |x|, a = w XOR s (s = 0xff where x < 0, i.e.
    a = -w - 1 there), the accumulator started at sum_{x<0} |x|; 32 codes each."""
    w, x = np.asarray(w, np.int64), np.asarray(x, np.int64)
    mag = np.abs(x)
    sign = np.where(x < 0, -1, 0)
    a = np.where(x < 0, -w - 1, w)  # the ones' complement: w ^ 0xff as a signed byte
    start = -(
        dot_add(sign[16:], mag[16:], dot_add(sign[:16], mag[:16], np.zeros(4, np.int64), sem), sem)
    )
    acc = dot_add(a[:16], mag[:16], start, sem)
    acc = dot_add(a[16:], mag[16:], acc, sem)
    return int(acc.sum())


def q4_isum(nibbles: I64, x: I64, sem: Semantics) -> int:
    """The q4 block dot of the relaxed lanes: b = the nibble n (code n - 8), a = the activation
    code, the accumulator started at -8 * sum(x); even elements meet the low nibbles."""
    n, x = np.asarray(nibbles, np.int64), np.asarray(x, np.int64)
    even, odd, lo, hi = x[0::2], x[1::2], n[0::2], n[1::2]
    eight = np.full(16, 8, np.int64)
    start = -dot_add(odd, eight, dot_add(even, eight, np.zeros(4, np.int64), sem), sem)
    return int(dot_add(odd, hi, dot_add(even, lo, start, sem), sem).sum())


def magnitude_of_w_isum(w: I64, x: I64, sem: Semantics) -> int:
    """The construction the relaxed lanes do NOT use: b = |w| and w's sign moved onto x. Exact
    for w in [-127, 127]; at w = -128, |w| = 128 is not a 7-bit byte (it reads as -128 or 128)."""
    w, x = np.asarray(w, np.int64), np.asarray(x, np.int64)
    b = np.where(w == -128, -128, np.abs(w))  # i8x16.abs(-128) == -128 (0x80)
    a = np.where(w < 0, -x, x)
    acc = dot_add(a[:16], b[:16], np.zeros(4, np.int64), sem)
    return int(dot_add(a[16:], b[16:], acc, sem).sum())


def row_dot(
    layout: str, row: bytes, codes: int8ref.Codes, scales: int8ref.Vec, sem: Semantics
) -> np.float32:
    """int8ref.row_dot with each block's isum from the relaxed construction under `sem`."""
    blocks = scales.size
    raw = np.frombuffer(row, np.uint8).reshape(blocks, -1)
    wc, ws = int8ref.weight_codes(layout, row, blocks)
    xc = np.asarray(codes, np.int64).reshape(blocks, BLOCK)
    isum = [
        q8_isum(wc[b], xc[b], sem) if layout == "q8" else q4_isum(_nibbles(raw[b, 4:]), xc[b], sem)
        for b in range(blocks)
    ]
    return int8ref.block_order(ws, scales, np.array(isum, np.int64))


def _nibbles(body: npt.NDArray[np.uint8]) -> I64:
    n = np.empty(BLOCK, np.int64)
    n[0::2] = body & 0x0F
    n[1::2] = body >> 4
    return n
