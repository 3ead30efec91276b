"""The integer tier's kernels (CONTRACT.md §10, §12) in the scalar, simd128 and relaxed-SIMD kernel
harnesses (wasmtime; the relaxed one with wasmtime's relaxed SIMD deterministic and with the
host's native semantics): the quantizer against the independent numpy reference
(tests/crates/runtime/int8ref.py) on the contract's worked examples and edge values (all-zero
block, ±max, rounding ties, subnormals, non-finite refused); and the integer q8/q4 rows — the
oracle, the lane's matvec and the lane's prefill tile — bit-identical to each other and to the
reference for every tail length 1..64 of a row, rows 1..9 (every remainder of the SIMD set's
groups of four rows) and tiles of 1..16 tokens and past them (17, 25, 40: every remainder of its
groups of 8 tokens); and the extreme codes (q8 -128, -127 and 127, q4 -8 and 7) against all-
positive, all-negative, alternating and all-zero activation blocks."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import wasmtime

from pipeline.wasmhost import engine
from tests.crates.runtime import int8ref

# (lane, wasmtime's relaxed SIMD: None off, True deterministic, False the host's semantics)
LANES = [
    ("scalar-wasm32", None),
    ("simd128-wasm32", None),
    ("relaxed-simd128-wasm32", True),
    ("relaxed-simd128-wasm32", False),
]
LANE_IDS = ["scalar", "simd128", "relaxed-deterministic", "relaxed-native"]
NUMERICAL_FAILURE = 18
F32 = np.float32
TINY = float(np.float32(2.0**-149))  # the least subnormal


class Harness:
    """pipeline/bench/harness in wasmtime: h_alloc'd windows, h_quantize, h_int_rows."""

    def __init__(self, path: Path, relaxed_deterministic: bool | None) -> None:
        self.store = wasmtime.Store(engine(True, relaxed_deterministic))
        module = wasmtime.Module.from_file(self.store.engine, str(path))
        self.instance = wasmtime.Instance(self.store, module, [])
        memory = self.instance.exports(self.store)["memory"]
        assert isinstance(memory, wasmtime.Memory)
        self.memory = memory

    def call(self, name: str, *args: int) -> int:
        f = self.instance.exports(self.store)[name]
        assert isinstance(f, wasmtime.Func)
        r = f(self.store, *args)
        return int(r) if r is not None else 0

    def put(self, data: bytes) -> int:
        ptr = self.call("h_alloc", max(len(data), 1))
        self.memory.write(self.store, data, ptr)
        return ptr

    def get(self, ptr: int, n: int) -> bytes:
        return bytes(self.memory.read(self.store, ptr, ptr + n))

    def quantize(self, x: np.ndarray) -> tuple[int, bytes, bytes]:
        x = np.asarray(x, dtype="<f4")
        blocks = -(-x.size // 32)
        codes, scales = self.put(bytes(blocks * 32)), self.put(bytes(blocks * 4))
        rc = self.call("h_quantize", self.put(x.tobytes()), x.size, codes, scales)
        return rc, self.get(codes, blocks * 32), self.get(scales, blocks * 4)

    def rows(
        self,
        kernel_set: int,
        layout: int,
        w: bytes,
        codes: bytes,
        scales: bytes,
        cols: int,
        tokens: int,
        rows: int,
        r0: int = 0,
    ) -> tuple[int, list[int]]:
        """h_int_rows: set 0 the oracle, 1 the lane's matvec, 2 its tile over rows r0.."""
        out = self.put(struct.pack("<f", float("nan")) * (tokens * rows))
        args = (
            kernel_set,
            layout,
            self.put(w),
            len(w),
            self.put(codes),
            self.put(scales),
            cols,
            tokens,
            rows,
            r0,
            out,
        )
        return self.call("h_int_rows", *args), list(
            struct.unpack(f"<{tokens * rows}I", self.get(out, 4 * tokens * rows))
        )


@pytest.fixture(scope="module", params=LANES, ids=LANE_IDS)
def lane(request: pytest.FixtureRequest, harness: Callable[[str], Path]) -> Harness:
    lane_id, relaxed = request.param
    h = Harness(harness(lane_id), relaxed)
    assert h.call("h_simd") == (lane_id != "scalar-wasm32")
    return h


def _bits(a: np.ndarray) -> bytes:
    return np.asarray(a, dtype="<f4").tobytes()


# (name, vector) — the contract's worked examples and the edge values the issue lists
EDGES: list[tuple[str, list[float]]] = [
    ("all-zero block", [0.0] * 32),
    ("all-zero tail block", [0.0] * 5),
    ("negative zeros", [-0.0] * 7),
    ("ties at d = 1", [127.0, -127.0, 63.5, -63.5, 0.5, 1.5, -0.5, 0.0, 2.5, -2.5, 126.5]),
    ("ties at d = 2", [254.0, 1.0, -1.0, 3.0, -3.0, 5.0, 251.0]),
    (
        "just below a tie",
        [127.0, float(np.nextafter(F32(0.5), F32(0))), float(np.nextafter(F32(2.5), F32(0)))],
    ),
    ("d = 1/127", [1.0, 0.3]),
    ("plus/minus max", [float(np.finfo(F32).max), -float(np.finfo(F32).max), 1.0]),
    ("subnormal clamp", [190 * TINY, TINY]),
    ("subnormal underflow to a zero block", [63 * TINY, -TINY]),
    ("subnormal smallest scale", [64 * TINY, -3 * TINY]),
    ("mixed blocks", [1e-30] * 32 + [0.0] * 32 + [-1e30, 1.0] + [5.0] * 3),
]


@pytest.mark.integration
@pytest.mark.parametrize(("name", "x"), EDGES, ids=[e[0] for e in EDGES])
def test_quantizer_edge_values_equal_the_reference(
    lane: Harness, name: str, x: list[float]
) -> None:
    rc, codes, scales = lane.quantize(np.array(x, dtype=F32))
    ref_codes, ref_scales = int8ref.quantize(np.array(x, dtype=F32))
    assert rc == 0, name
    assert codes == ref_codes.tobytes(), f"{name}: codes {list(np.frombuffer(codes, np.int8))[:12]}"
    assert scales == _bits(ref_scales), name


def _whole_blocks(x: list[float]) -> np.ndarray:
    """`x` zero-padded to a whole block, then again reversed and negated: whole blocks only, so
    the SIMD quantizer's block path (not the oracle it runs for a tail block) quantizes it."""
    block = np.array(x + [0.0] * (-len(x) % 32), dtype=F32)
    return np.concatenate([block, -block[::-1]])


@pytest.mark.integration
@pytest.mark.parametrize(("name", "x"), EDGES, ids=[e[0] for e in EDGES])
def test_quantizer_edge_values_in_whole_blocks_equal_the_reference(
    lane: Harness, name: str, x: list[float]
) -> None:
    v = _whole_blocks(x)
    rc, codes, scales = lane.quantize(v)
    ref_codes, ref_scales = int8ref.quantize(v)
    assert rc == 0, name
    assert codes == ref_codes.tobytes(), f"{name}: codes {list(np.frombuffer(codes, np.int8))[:12]}"
    assert scales == _bits(ref_scales), name


@pytest.mark.integration
def test_the_contracts_worked_examples(lane: Harness) -> None:
    _, codes, scales = lane.quantize(np.array(EDGES[3][1], dtype=F32))
    assert list(np.frombuffer(codes, np.int8)[:11]) == [127, -127, 64, -64, 1, 2, -1, 0, 3, -3, 127]
    assert np.frombuffer(scales, "<f4")[0] == 1.0
    _, codes, scales = lane.quantize(np.array([1.0, 0.3], dtype=F32))
    assert list(np.frombuffer(codes, np.int8)[:3]) == [127, 38, 0]
    assert struct.unpack("<I", scales)[0] == 0x3C010204
    _, codes, scales = lane.quantize(np.array([190 * TINY, TINY], dtype=F32))
    assert (
        list(np.frombuffer(codes, np.int8)[:2]) == [127, 1] and struct.unpack("<I", scales)[0] == 1
    )
    _, codes, scales = lane.quantize(np.array([63 * TINY], dtype=F32))
    assert struct.unpack("<I", scales)[0] == 0 and set(codes) == {0}
    # the integer dot example: q8 block (scale 0.5, codes [2, -3, 0...]) . [1.0, 0.3]
    w = struct.pack("<f", 0.5) + bytes([2, 256 - 3]) + bytes(30)
    _, codes, scales = lane.quantize(np.array([1.0, 0.3], dtype=F32))
    for kernel_set in (0, 1, 2):
        rc, got = lane.rows(kernel_set, 1, w, codes, scales, cols=2, tokens=1, rows=1)
        assert rc == 0 and got == [int(np.float32(0.5511811).view(np.uint32))], kernel_set
    assert int8ref.row_dot(
        "q8", w, np.frombuffer(codes, np.int8), np.frombuffer(scales, "<f4")
    ) == F32(0.5511811)


@pytest.mark.integration
@pytest.mark.parametrize(
    "bad", [float("nan"), float("inf"), float("-inf")], ids=["nan", "inf", "-inf"]
)
def test_non_finite_activations_are_refused(lane: Harness, bad: float) -> None:
    x = np.array([1.0] * 40 + [bad] + [2.0], dtype=F32)
    assert lane.quantize(x)[0] == NUMERICAL_FAILURE
    with pytest.raises(int8ref.NonFinite):
        int8ref.quantize(x)
    # in a whole block (the SIMD quantizer's block path), at every lane of an f32x4
    for at in (32, 37, 46, 63):
        x = np.ones(64, dtype=F32)
        x[at] = bad
        assert lane.quantize(x)[0] == NUMERICAL_FAILURE, at


@pytest.mark.integration
def test_random_vectors_quantize_like_the_reference(lane: Harness) -> None:
    rng = np.random.default_rng(25)
    for n in [*range(1, 66), 97, 1024, 2816]:
        scale = F32(2.0) ** rng.integers(-20, 20)
        x = (rng.standard_normal(n) * scale).astype(F32)
        rc, codes, scales = lane.quantize(x)
        ref_codes, ref_scales = int8ref.quantize(x)
        assert rc == 0 and codes == ref_codes.tobytes() and scales == _bits(ref_scales), n


def _weights(rng: np.random.Generator, layout: str, rows: int, cols: int) -> bytes:
    blocks = -(-cols // 32)
    body = 32 if layout == "q8" else 16
    out = bytearray()
    for _ in range(rows * blocks):
        out += struct.pack(
            "<f", float(rng.uniform(2.0**-9, 2.0**-3)) * (1 if rng.random() < 0.8 else -1)
        )
        out += rng.integers(
            0, 256, body, dtype=np.uint8
        ).tobytes()  # tail padding too: never matters
    return bytes(out)


@pytest.mark.integration
@pytest.mark.parametrize("layout", ["q8", "q4"])
def test_integer_rows_are_bit_identical_for_every_tail_row_count_and_tile(
    lane: Harness, layout: str
) -> None:
    rng = np.random.default_rng(7 if layout == "q8" else 8)
    kind = 1 if layout == "q8" else 2
    # every tail 1..64 with rows 1..9 and tiles 1..16; then tiles past the SIMD set's token
    # groups of 8 (17: three groups, the last of one token; 25, 40: remainders 1 and 0)
    shapes = [(cols, 1 + cols % 9, 1 + cols % 16) for cols in [*range(1, 65), 100, 1024]]
    shapes += [(33, 5, 17), (100, 8, 25), (64, 4, 40), (1024, 9, 17)]
    # past the relaxed tile's chunks of 16 row quads (64 rows; 133: two chunks, a third of one
    # quad and a row remainder), and past its 128 prepared blocks (4200 columns: 132 blocks)
    shapes += [(40, 70, 17), (100, 133, 9), (4200, 5, 3)]
    for cols, rows, tokens in shapes:
        w = _weights(rng, layout, rows, cols)
        xs = (rng.standard_normal((tokens, cols)) * 2.0 ** float(rng.integers(-6, 6))).astype(F32)
        qs = [int8ref.quantize(x) for x in xs]
        codes = b"".join(c.tobytes() for c, _ in qs)
        scales = b"".join(_bits(s) for _, s in qs)
        row_bytes = len(w) // rows
        want = [
            int(
                int8ref.row_dot(layout, w[r * row_bytes : (r + 1) * row_bytes], c, s).view(
                    np.uint32
                )
            )
            for c, s in qs
            for r in range(rows)
        ]
        where = f"{layout} cols {cols} rows {rows} tokens {tokens}"
        for kernel_set in (0, 1, 2):
            rc, got = lane.rows(kernel_set, kind, w, codes, scales, cols, tokens, rows)
            assert rc == 0 and got == want, f"{where}: set {kernel_set}"
        # a tile over rows r0.. only (the threads lane's row partitions)
        r0 = rows // 2
        rc, got = lane.rows(2, kind, w, codes, scales, cols, tokens, rows, r0)
        assert rc == 0
        for t in range(tokens):
            assert got[t * rows + r0 : (t + 1) * rows] == want[t * rows + r0 : (t + 1) * rows], (
                where
            )


def _extreme_weights(layout: str, codes: list[int], rows: int, blocks: int) -> bytes:
    """rows x blocks blocks of scale 2^-4 whose codes cycle through `codes` (q8 codes, or q4
    codes -8..7 stored as nibble = code + 8)."""
    out = bytearray()
    for r in range(rows):
        for b in range(blocks):
            cs = [codes[(r + b + j) % len(codes)] for j in range(32)]
            out += struct.pack("<f", 0.0625)
            if layout == "q8":
                out += bytes(c & 0xFF for c in cs)
            else:
                out += bytes((cs[2 * i] + 8) | ((cs[2 * i + 1] + 8) << 4) for i in range(16))
    return bytes(out)


# activation blocks (32 values each) whose codes are the extremes: +-127 everywhere
ACTIVATIONS: list[tuple[str, list[float]]] = [
    ("all +127", [1.0] * 32),
    ("all -127", [-1.0] * 32),
    ("alternating +-127", [(-1.0) ** j for j in range(32)]),
    ("all zero", [0.0] * 32),
    ("one -127, rest 0", [0.0] * 31 + [-1.0]),
]
# weight code cycles: the extremes of each layout, alone and mixed
WEIGHTS: list[tuple[str, str, list[int]]] = [
    ("q8", "-128", [-128]),
    ("q8", "-127", [-127]),
    ("q8", "127", [127]),
    ("q8", "-128 127", [-128, 127]),
    ("q8", "127 -128 -127 0", [127, -128, -127, 0]),
    ("q4", "-8", [-8]),
    ("q4", "7", [7]),
    ("q4", "-8 7", [-8, 7]),
    ("q4", "7 -8 0 -1", [7, -8, 0, -1]),
]


@pytest.mark.integration
@pytest.mark.parametrize(
    ("layout", "name", "codes"), WEIGHTS, ids=[f"{w[0]} {w[1]}" for w in WEIGHTS]
)
def test_extreme_codes_are_bit_identical(
    lane: Harness, layout: str, name: str, codes: list[int]
) -> None:
    kind = 1 if layout == "q8" else 2
    rows, blocks, tokens = 9, 3, len(ACTIVATIONS) ** 2  # every ordered pair over 2 blocks + tail
    cols = blocks * 32 - 5
    w = _extreme_weights(layout, codes, rows, blocks)
    xs = [
        np.array((a + b + c)[:cols], dtype=F32)
        for _, a in ACTIVATIONS
        for _, b in ACTIVATIONS
        for c in [ACTIVATIONS[1][1]]
    ]
    qs = [int8ref.quantize(x) for x in xs]
    assert {int(v) for c, _ in qs for v in c} >= {-127, 0, 127}
    codes_b = b"".join(c.tobytes() for c, _ in qs)
    scales_b = b"".join(_bits(s) for _, s in qs)
    row_bytes = len(w) // rows
    want = [
        int(int8ref.row_dot(layout, w[r * row_bytes : (r + 1) * row_bytes], c, s).view(np.uint32))
        for c, s in qs
        for r in range(rows)
    ]
    for kernel_set in (0, 1, 2):
        rc, got = lane.rows(kernel_set, kind, w, codes_b, scales_b, cols, tokens, rows)
        assert rc == 0 and got == want, f"{layout} {name}: set {kernel_set}"
