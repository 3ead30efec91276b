"""An independent Python statement of the scalar contract (crates/core/CONTRACT.md), used to
check the Rust oracle's golden vectors bit for bit.

f32 arithmetic is emulated by rounding each double result to f32: for +, -, *, / and sqrt
of f32 operands, double (53 bits >= 2*24 + 2) rounding then f32 rounding equals one correct
f32 rounding, so every `f32(a op b)` here is exactly the IEEE f32 operation.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence

BLOCK = 32
MASK64 = (1 << 64) - 1


def f32(x: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", x))[0])


def from_bits(text: str) -> float:
    return float(struct.unpack("<f", struct.pack("<I", int(text, 16)))[0])


def to_bits(x: float) -> str:
    return f"0x{struct.unpack('<I', struct.pack('<f', x))[0]:08x}"


class NumericalFailure(Exception):
    code = 18


class InvalidArgument(Exception):
    code = 1


# exp_det v1 constants (crates/core/src/math.rs), as f32.
LOG2E = f32(1.44269504)
LN2_C1 = f32(0.693359375)
LN2_C2 = f32(-2.12194440e-4)
POLY = [
    f32(v)
    for v in (
        1.98756915e-4,
        1.3981999507e-3,
        8.3334519073e-3,
        4.1665795894e-2,
        1.6666665459e-1,
        5.0000001201e-1,
    )
]
EXP_OVERFLOW = f32(88.72283)
EXP_UNDERFLOW = f32(-87.33654)


def exp_det(x: float) -> float:
    if math.isnan(x):
        return x
    if x > EXP_OVERFLOW:
        return math.inf
    if x < EXP_UNDERFLOW:
        return 0.0
    t = f32(f32(x * LOG2E) + 0.5)
    k = int(t)
    if k > t:
        k -= 1
    kf = float(k)
    r = f32(x - f32(kf * LN2_C1))
    r = f32(r - f32(kf * LN2_C2))
    rr = f32(r * r)
    p = POLY[0]
    for c in POLY[1:]:
        p = f32(f32(p * r) + c)
    y = f32(f32(f32(p * rr) + r) + 1.0)
    if k > 127:
        return f32(f32(y * 2.0**127) * 2.0)
    return f32(y * 2.0**k)


def silu(x: float) -> float:
    return f32(x / f32(1.0 + exp_det(-x)))


def _scale(block: bytes) -> float:
    return float(struct.unpack("<f", block[:4])[0])


def quant_matvec(w: bytes, x: Sequence[float], rows: int, q4: bool) -> list[float]:
    cols = len(x)
    block_bytes = 4 + (BLOCK // 2 if q4 else BLOCK)
    blocks = -(-cols // BLOCK)
    out = []
    for r in range(rows):
        acc = 0.0
        for b in range(blocks):
            block = w[(r * blocks + b) * block_bytes : (r * blocks + b + 1) * block_bytes]
            s = 0.0
            for j in range(min(BLOCK, cols - b * BLOCK)):
                if q4:
                    byte = block[4 + j // 2]
                    code = (byte & 0x0F if j % 2 == 0 else byte >> 4) - 8
                else:
                    code = struct.unpack("<b", block[4 + j : 5 + j])[0]
                s = f32(s + f32(code * x[b * BLOCK + j]))
            acc = f32(acc + f32(_scale(block) * s))
        out.append(acc)
    return out


def f32_matvec(w: Sequence[float], x: Sequence[float], rows: int) -> list[float]:
    cols = len(x)
    out = []
    for r in range(rows):
        acc = 0.0
        for c in range(cols):
            acc = f32(acc + f32(w[r * cols + c] * x[c]))
        out.append(acc)
    return out


def rmsnorm(x: Sequence[float], weight: Sequence[float], eps: float) -> list[float]:
    ss = 0.0
    for v in x:
        ss = f32(ss + f32(v * v))
    mean = f32(ss / len(x))
    inv = f32(1.0 / f32(math.sqrt(f32(mean + eps))))
    return [f32(f32(v * inv) * w) for v, w in zip(x, weight, strict=True)]


def rope(v: Sequence[float], cos: Sequence[float], sin: Sequence[float]) -> list[float]:
    out: list[float] = []
    for i, (c, s) in enumerate(zip(cos, sin, strict=True)):
        a, b = v[2 * i], v[2 * i + 1]
        out += [f32(f32(a * c) - f32(b * s)), f32(f32(a * s) + f32(b * c))]
    return out


def softmax(scores: Sequence[float]) -> list[float]:
    if not scores:
        raise InvalidArgument
    if any(math.isnan(s) for s in scores):
        raise NumericalFailure
    if len(scores) == 1:
        return [1.0]
    m = max(scores)
    if m == math.inf:
        share = f32(1.0 / sum(1 for s in scores if s == math.inf))
        return [share if s == math.inf else 0.0 for s in scores]
    if m == -math.inf:
        raise NumericalFailure
    e = [exp_det(f32(s - m)) for s in scores]
    z = 0.0
    for v in e:
        z = f32(z + v)
    if not z > 0.0 or z == math.inf:
        raise NumericalFailure
    return [f32(v / z) for v in e]


def dot_ltr(a: Sequence[float], b: Sequence[float]) -> float:
    """The oracle's dot product: f32 products added left to right."""
    acc = 0.0
    for x, y in zip(a, b, strict=True):
        acc = f32(acc + f32(x * y))
    return acc


def attention(
    q: Sequence[float],
    keys: Sequence[float],
    values: Sequence[float],
    n_heads: int,
    n_kv_heads: int,
    head_dim: int,
    n_pos: int,
    dot: Callable[[Sequence[float], Sequence[float]], float] = dot_ltr,
) -> list[float]:
    """Causal GQA attention; `dot` is the score reduction (the SIMD model passes its own)."""
    group, kv_dim = n_heads // n_kv_heads, n_kv_heads * head_dim
    scale = f32(1.0 / f32(math.sqrt(head_dim)))
    out: list[float] = []
    for h in range(n_heads):
        kv = (h // group) * head_dim
        qh = q[h * head_dim : (h + 1) * head_dim]
        scores = [
            f32(dot(qh, keys[t * kv_dim + kv : t * kv_dim + kv + head_dim]) * scale)
            for t in range(n_pos)
        ]
        p = softmax(scores)
        head = [0.0] * head_dim
        for t in range(n_pos):
            for i in range(head_dim):
                head[i] = f32(head[i] + f32(p[t] * values[t * kv_dim + kv + i]))
        out += head
    return out


class Pcg32:
    """The reference's PCG32: transition, seeding, u32 output."""

    def __init__(self, seed: int, stream: int) -> None:
        self.state, self.inc = 0, ((stream << 1) | 1) & MASK64
        self.next_u32()
        self.state = (self.state + seed) & MASK64
        self.next_u32()

    def next_u32(self) -> int:
        old = self.state
        self.state = (old * 6364136223846793005 + self.inc) & MASK64
        xorshifted = (((old >> 18) ^ old) >> 27) & 0xFFFFFFFF
        rot = old >> 59
        return ((xorshifted >> rot) | (xorshifted << ((-rot) & 31))) & 0xFFFFFFFF
