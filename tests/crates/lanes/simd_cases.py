"""Golden inputs for the simd128 kernels, off the k/256 grid: seeded full-precision f32 values
(products carry ~48 significant bits, so every addition rounds and every association order
can give different bits), for every vectorised kernel and every tail length. Deterministic
(PCG32 from f32ref); the expected bits come from `tests/crates/runtime/simd128ref.py`."""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.crates.runtime import f32ref, simd128ref
from tests.crates.runtime.f32ref import BLOCK, Pcg32, f32, from_bits, to_bits

SEED = 0x5EED_0017
EPS_BITS = "0x3727c5ac"  # 1e-5
# f32 kernels: every tail length 1 .. 2x the vector width, and longer ones
F32_LENGTHS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 31, 33, 64, 257)
# q8/q4: every tail length 1 .. 2x the block; 5 rows (odd: the two-row kernel's last row)
QUANT_COLS = (*range(1, 2 * BLOCK + 1), 96, 1024)
RMSNORM_REPEATS = 4  # one rounding of the sum of squares seldom survives sqrt and 1/x
ATTENTION_SHAPES = ((1, 1, 1), (4, 2, 3), (6, 2, 9))  # (n_heads, n_kv_heads, n_pos)
ATTENTION_HEAD_DIMS = (1, 2, 3, 4, 5, 6, 7, 8, 20, 64)


@dataclass(frozen=True)
class Case:
    id: str
    operator: str
    shape: dict[str, int]
    params: dict[str, str] = field(default_factory=dict)
    floats: dict[str, list[float]] = field(default_factory=dict)
    raw: dict[str, bytes] = field(default_factory=dict)

    def document(self) -> dict[str, Any]:
        """The case as drive.mjs reads it (golden-vector input kinds)."""
        inputs: dict[str, Any] = {
            k: {"kind": "f32_bits", "values": [to_bits(v) for v in vs]}
            for k, vs in self.floats.items()
        }
        inputs.update({k: {"kind": "bytes_hex", "hex": v.hex()} for k, v in self.raw.items()})
        return {
            "id": self.id,
            "operator": self.operator,
            "shape": self.shape,
            "params": self.params,
            "inputs": inputs,
        }


class _Inputs:
    def __init__(self, seed: int) -> None:
        self.rng = Pcg32(seed, 17)

    def unit(self) -> float:
        """Full-precision f32 in [-1, 1): 32 random bits rounded to f32."""
        return f32(self.rng.next_u32() / 2**31 - 1.0)

    def vec(self, n: int) -> list[float]:
        return [self.unit() for _ in range(n)]

    def wide(self, n: int) -> list[float]:
        """As `vec`, times 2^-8 .. 2^7: a sum of squares then depends on its order."""
        return [f32(self.unit() * 2.0 ** (self.rng.next_u32() % 16 - 8)) for _ in range(n)]

    def packed(self, rows: int, cols: int, q4: bool) -> bytes:
        out = bytearray()
        for _ in range(rows):
            for b in range(-(-cols // BLOCK)):
                out += struct.pack("<f", f32(self.rng.next_u32() / 2**32 / 128))
                n = min(BLOCK, cols - b * BLOCK)
                codes = [self.rng.next_u32() & 0xFF if j < n else 0 for j in range(BLOCK)]
                if q4:
                    out += bytes(
                        (codes[2 * i] & 15) | ((codes[2 * i + 1] & 15) << 4)
                        for i in range(BLOCK // 2)
                    )
                else:
                    out += bytes(codes)
        return bytes(out)


def cases() -> list[Case]:
    g = _Inputs(SEED)
    out: list[Case] = []
    for op, q4 in (("q8_matvec", False), ("q4_matvec", True)):
        for cols in QUANT_COLS:
            rows = 5 if cols <= 2 * BLOCK else 3
            out.append(
                Case(
                    f"{op}.cols-{cols}",
                    op,
                    {"rows": rows, "cols": cols},
                    floats={"x": g.vec(cols)},
                    raw={"w": g.packed(rows, cols, q4)},
                )
            )
    for n in F32_LENGTHS:
        out.append(
            Case(
                f"f32_matvec.cols-{n}",
                "f32_matvec",
                {"rows": 3, "cols": n},
                floats={"w": g.vec(3 * n), "x": g.vec(n)},
            )
        )
        for k in range(RMSNORM_REPEATS):
            out.append(
                Case(
                    f"rmsnorm.n-{n}.{k}",
                    "rmsnorm",
                    {"n": n},
                    {"eps": EPS_BITS},
                    floats={"x": g.wide(n), "weight": g.vec(n)},
                )
            )
        out.append(
            Case(f"add_assign.n-{n}", "add_assign", {"n": n}, floats={"x": g.vec(n), "y": g.vec(n)})
        )
    for d in ATTENTION_HEAD_DIMS:
        for nh, nkv, pos in ATTENTION_SHAPES:
            kv = pos * nkv * d
            out.append(
                Case(
                    f"attention.d{d}-h{nh}-kv{nkv}-p{pos}",
                    "attention",
                    {"n_heads": nh, "n_kv_heads": nkv, "head_dim": d, "n_pos": pos},
                    floats={"q": g.vec(nh * d), "keys": g.vec(kv), "values": g.vec(kv)},
                )
            )
    return out


Model = Callable[[Case, simd128ref.Reduce], list[float]]


def _attention_inputs(
    c: Case,
) -> tuple[Sequence[float], Sequence[float], Sequence[float], int, int, int, int]:
    """q, keys, values and the shape, in the argument order of both attention models."""
    f, s = c.floats, c.shape
    return f["q"], f["keys"], f["values"], s["n_heads"], s["n_kv_heads"], s["head_dim"], s["n_pos"]


# operator -> the documented simd128 result, with a choice of lane reduction
SIMD_MODEL: dict[str, Model] = {
    "q8_matvec": lambda c, r: simd128ref.quant_matvec(
        c.raw["w"], c.floats["x"], c.shape["rows"], False, r
    ),
    "q4_matvec": lambda c, r: simd128ref.quant_matvec(
        c.raw["w"], c.floats["x"], c.shape["rows"], True, r
    ),
    "f32_matvec": lambda c, r: simd128ref.f32_matvec(
        c.floats["w"], c.floats["x"], c.shape["rows"], r
    ),
    "rmsnorm": lambda c, r: simd128ref.rmsnorm(
        c.floats["x"], c.floats["weight"], from_bits(c.params["eps"]), r
    ),
    "attention": lambda c, r: simd128ref.attention(*_attention_inputs(c), r),
    "add_assign": lambda c, r: simd128ref.add_assign(c.floats["x"], c.floats["y"]),
}

# operator -> the scalar oracle (left to right), to show the inputs are off the grid
ORACLE: dict[str, Callable[[Case], Sequence[float]]] = {
    "q8_matvec": lambda c: f32ref.quant_matvec(c.raw["w"], c.floats["x"], c.shape["rows"], False),
    "q4_matvec": lambda c: f32ref.quant_matvec(c.raw["w"], c.floats["x"], c.shape["rows"], True),
    "f32_matvec": lambda c: f32ref.f32_matvec(c.floats["w"], c.floats["x"], c.shape["rows"]),
    "rmsnorm": lambda c: f32ref.rmsnorm(
        c.floats["x"], c.floats["weight"], from_bits(c.params["eps"])
    ),
    "attention": lambda c: f32ref.attention(*_attention_inputs(c)),
    "add_assign": lambda c: simd128ref.add_assign(c.floats["x"], c.floats["y"]),
}


def expected_bits(
    case: Case,
    reduce: simd128ref.Reduce = simd128ref.reduce_pairwise,
) -> list[str]:
    return [to_bits(v) for v in SIMD_MODEL[case.operator](case, reduce)]
