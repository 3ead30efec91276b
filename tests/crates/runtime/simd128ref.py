"""An independent Python statement of the simd128 lane's DOCUMENTED reduction trees
(crates/core/CONTRACT.md §8, "SIMD128 kernels"), written from the contract, not from
kernels/simd128.rs. With f32ref's exact f32 emulation, every result here is the bit pattern the
simd128 (and threads) lane must produce.

- Lane order: lane l takes the terms i ≡ l (mod 4) ascending, then `(l0 + l1) + (l2 + l3)`;
  for f32 dots the n mod 4 last terms are then added left to right.
- q8/q4 matvec: per whole 32-element block the block sum in lanes is
  `((p0+p1)+(p2+p3)) + ((p4+p5)+(p6+p7))` (p_g = products of elements 4g..4g+3), codes taken
  as `code * 2^24`; `lanes = lanes + splat(scale_b) * block_sum` over blocks ascending; then
  `reduce(lanes * 2^-24)`; then the partial final block through the scalar block routine:
  `acc = acc + scale * block_sum_scalar`.
- RMSNorm: the sum of squares is such a dot; the scaling is elementwise `(x * inv) * w`.
- Attention: scores are such dots (times 1/sqrt(d_h)); softmax and the value accumulation
  `o = o + p * v` are the oracle's exact operations.
- RoPE, softmax, SiLU, add_assign: the oracle's (f32ref) operations.

`Tree` names the alternative association orders a wrong kernel might use, so a test can show
that the golden inputs tell them apart (on a k/256 grid every order gives the same sum).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence

from tests.crates.runtime import f32ref
from tests.crates.runtime.f32ref import BLOCK, f32

LANES = 4
CODE_SCALE = 2.0**24  # codes enter the lanes as code * 2^24 (exact)
UNSCALE = 2.0**-24

Reduce = Callable[[Sequence[float]], float]


def reduce_pairwise(lanes: Sequence[float]) -> float:
    """THE documented lane reduction: (l0 + l1) + (l2 + l3)."""
    return f32(f32(lanes[0] + lanes[1]) + f32(lanes[2] + lanes[3]))


def reduce_sequential(lanes: Sequence[float]) -> float:
    """((l0 + l1) + l2) + l3: NOT the contract; used to show the inputs discriminate."""
    return f32(f32(f32(lanes[0] + lanes[1]) + lanes[2]) + lanes[3])


def lane_dot(a: Sequence[float], b: Sequence[float], reduce: Reduce = reduce_pairwise) -> float:
    """f32 dot in lane order: lanes over whole quadruples, reduce, then the tail in order."""
    n = min(len(a), len(b))
    whole = n // LANES * LANES
    lanes = [0.0] * LANES
    for q in range(0, whole, LANES):
        for lane in range(LANES):
            lanes[lane] = f32(lanes[lane] + f32(a[q + lane] * b[q + lane]))
    acc = reduce(lanes)
    for i in range(whole, n):
        acc = f32(acc + f32(a[i] * b[i]))
    return acc


def f32_matvec(
    w: Sequence[float], x: Sequence[float], rows: int, reduce: Reduce = reduce_pairwise
) -> list[float]:
    cols = len(x)
    return [lane_dot(w[r * cols : (r + 1) * cols], x, reduce) for r in range(rows)]


def _codes(block: bytes, q4: bool) -> list[int]:
    if q4:
        return [((block[4 + j // 2] >> (4 * (j % 2))) & 0x0F) - 8 for j in range(BLOCK)]
    return list(struct.unpack("<32b", block[4 : 4 + BLOCK]))


def _scale(block: bytes) -> float:
    return float(struct.unpack("<f", block[:4])[0])


def quant_matvec(
    w: bytes, x: Sequence[float], rows: int, q4: bool, reduce: Reduce = reduce_pairwise
) -> list[float]:
    cols = len(x)
    block_bytes = 4 + (BLOCK // 2 if q4 else BLOCK)
    blocks = -(-cols // BLOCK)
    whole = cols // BLOCK
    out = []
    for r in range(rows):
        row = w[r * blocks * block_bytes : (r + 1) * blocks * block_bytes]
        lanes = [0.0] * LANES
        for b in range(whole):
            block = row[b * block_bytes : (b + 1) * block_bytes]
            codes = _codes(block, q4)
            scale = _scale(block)
            for lane in range(LANES):
                # p_g, lane l: element 4g + l of the block, code as code * 2^24
                p = [
                    f32(f32(codes[4 * g + lane] * CODE_SCALE) * x[b * BLOCK + 4 * g + lane])
                    for g in range(8)
                ]
                block_sum = f32(
                    f32(f32(p[0] + p[1]) + f32(p[2] + p[3]))
                    + f32(f32(p[4] + p[5]) + f32(p[6] + p[7]))
                )
                lanes[lane] = f32(lanes[lane] + f32(scale * block_sum))
        acc = reduce([f32(v * UNSCALE) for v in lanes])
        if whole < blocks:  # the partial block: the scalar block routine, left to right
            block = row[whole * block_bytes : (whole + 1) * block_bytes]
            codes = _codes(block, q4)
            s = 0.0
            for j in range(cols - whole * BLOCK):
                s = f32(s + f32(codes[j] * x[whole * BLOCK + j]))
            acc = f32(acc + f32(_scale(block) * s))
        out.append(acc)
    return out


def rmsnorm(
    x: Sequence[float], weight: Sequence[float], eps: float, reduce: Reduce = reduce_pairwise
) -> list[float]:
    ss = lane_dot(x, x, reduce)
    mean = f32(ss / len(x))
    inv = f32(1.0 / f32(math.sqrt(f32(mean + eps))))
    return [f32(f32(v * inv) * w) for v, w in zip(x, weight, strict=True)]


def attention(
    q: Sequence[float],
    keys: Sequence[float],
    values: Sequence[float],
    n_heads: int,
    n_kv_heads: int,
    head_dim: int,
    n_pos: int,
    reduce: Reduce = reduce_pairwise,
) -> list[float]:
    """The oracle's attention with lane-order score dots (values accumulate as the oracle's)."""
    return f32ref.attention(
        q, keys, values, n_heads, n_kv_heads, head_dim, n_pos,
        dot=lambda a, b: lane_dot(a, b, reduce),
    )  # fmt: skip


def add_assign(x: Sequence[float], y: Sequence[float]) -> list[float]:
    return [f32(a + b) for a, b in zip(x, y, strict=True)]
