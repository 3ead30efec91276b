"""The integer tier (crates/core/CONTRACT.md §10) restated from the contract text in numpy, not
from the Rust code: the activation quantizer and the integer block dot of q8/q4 weight codes.

Independence: the rounding rule is evaluated in float64 (exact for every f32 quotient the
quantizer forms), not by the Rust kernel's truncate-and-compare; the block sums are int64 dot
products, not i32 loops. f32 steps the contract names (`amax / 127`, `x_j / d`, the three
per-block operations) are single numpy float32 operations, one rounding each."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

F32 = np.float32
BLOCK = 32
QMAX = 127

Codes = npt.NDArray[np.int8]
Vec = npt.NDArray[np.float32]


class NonFinite(ValueError):
    """The vector holds NaN or ±inf: the contract's `NumericalFailure`."""


def round_half_away(q: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """Nearest integer, ties away from zero (2.5 -> 3, -2.5 -> -3), in float64 (exact here)."""
    return (np.sign(q) * np.floor(np.abs(q) + 0.5)).astype(np.int64)


def quantize(x: Vec) -> tuple[Codes, Vec]:
    """(codes [⌈n/32⌉ * 32] int8, scales [⌈n/32⌉] f32) of one vector, per §10 steps 1-5."""
    x = np.asarray(x, dtype=F32)
    if not np.all(np.isfinite(x)):
        raise NonFinite("non-finite activation")
    n = x.size
    blocks = -(-n // BLOCK)
    codes = np.zeros(blocks * BLOCK, dtype=np.int8)
    scales = np.zeros(blocks, dtype=F32)
    with np.errstate(under="ignore"):
        for b in range(blocks):
            xs = x[b * BLOCK : min(b * BLOCK + BLOCK, n)]
            amax = np.max(np.abs(xs))  # 1. exact
            d = F32(amax) / F32(QMAX)  # 2. one f32 division
            if d == F32(0):  # 3. zero block
                continue
            scales[b] = d
            q = (xs / d).astype(np.float64)  # 4. one f32 division each, then exact rounding
            c = np.clip(round_half_away(q), -QMAX, QMAX)
            codes[b * BLOCK : b * BLOCK + xs.size] = c.astype(np.int8)
    return codes, scales


def weight_codes(layout: str, row: bytes, blocks: int) -> tuple[npt.NDArray[np.int64], Vec]:
    """(codes [blocks, 32], scales [blocks]) of one stored q8/q4 row (CONTRACT §1)."""
    width = 4 + (BLOCK if layout == "q8" else BLOCK // 2)
    raw = np.frombuffer(row, np.uint8).reshape(blocks, width)
    scales = raw[:, :4].copy().view("<f4").reshape(blocks).astype(F32)
    body = raw[:, 4:]
    if layout == "q8":
        codes = body.view(np.int8).astype(np.int64)
    else:
        codes = np.empty((blocks, BLOCK), dtype=np.int64)
        codes[:, 0::2] = (body & 0x0F).astype(np.int64) - 8
        codes[:, 1::2] = (body >> 4).astype(np.int64) - 8
    return codes, scales


def row_dot(layout: str, row: bytes, codes: Codes, scales: Vec) -> np.float32:
    """acc = 0; per block ascending: acc = acc + (s_w * s_a) * f32(isum) (§10 "The integer dot")."""
    blocks = scales.size
    wc, ws = weight_codes(layout, row, blocks)
    isum = (wc * codes.reshape(blocks, BLOCK).astype(np.int64)).sum(axis=1)
    return block_order(ws, scales, isum)


def block_order(ws: Vec, scales: Vec, isum: npt.NDArray[np.int64]) -> np.float32:
    """The per-row f32 steps over blocks ascending: acc = acc + (s_w * s_a) * f32(isum_b)."""
    assert np.all(np.abs(isum) < 2**24)
    acc = F32(0)
    with np.errstate(all="ignore"):
        for b in range(ws.size):
            acc = F32(acc + F32(F32(ws[b] * scales[b]) * F32(isum[b])))
    return acc
