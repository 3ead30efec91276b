"""One table of malformed-model mutations over a packed v1 model and the TrResult each must
give (names as in crates/core/src/result.rs). Shared by the native and wasm tests."""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

from pipeline.modelpack import DIR_ENTRY, HEADER

ENTRY_OFFSET = 16  # offset field inside a directory entry
ENTRY_BYTES = 24  # stored_bytes field


def entry_at(i: int) -> int:
    return HEADER.size + i * DIR_ENTRY.size


def put_u32(b: bytearray, at: int, v: int) -> None:
    b[at : at + 4] = struct.pack("<I", v)


def put_u64(b: bytearray, at: int, v: int) -> None:
    b[at : at + 8] = struct.pack("<Q", v)


def get_u64(b: bytearray, at: int) -> int:
    return int(struct.unpack_from("<Q", b, at)[0])


def _overflow_dims(b: bytearray) -> None:
    put_u32(b, 28, 0xFFFFFFFF)  # vocab
    put_u32(b, 20, 0xFFFFFFFF)  # d_model
    put_u32(b, entry_at(0) + 8, 0xFFFFFFFF)  # embedding rows
    put_u32(b, entry_at(0) + 12, 0xFFFFFFFF)  # embedding cols


def _shift(i: int, delta: int) -> Callable[[bytearray], None]:
    def mutate(b: bytearray) -> None:
        put_u64(b, entry_at(i) + ENTRY_OFFSET, get_u64(b, entry_at(i) + ENTRY_OFFSET) + delta)

    return mutate


def _overlap(b: bytearray) -> None:
    put_u64(b, entry_at(2) + ENTRY_OFFSET, get_u64(b, entry_at(1) + ENTRY_OFFSET))


def _duplicate(b: bytearray) -> None:
    b[entry_at(3) : entry_at(3) + 2] = b[entry_at(2) : entry_at(2) + 2]


def _short_stored(b: bytearray) -> None:
    put_u64(b, entry_at(2) + ENTRY_BYTES, get_u64(b, entry_at(2) + ENTRY_BYTES) - 16)


def _append(b: bytearray) -> None:
    b.extend(b"\0" * 16)


@dataclass(frozen=True)
class Case:
    name: str
    mutate: Callable[[bytearray], None]
    result: str


CASES: tuple[Case, ...] = (
    Case("bad-magic", lambda b: b.__setitem__(0, ord("X")), "InvalidModel"),
    Case("format-version-3", lambda b: put_u32(b, 8, 3), "UnsupportedFeature"),
    Case("unknown-flag", lambda b: put_u32(b, 12, 0x80), "UnsupportedFeature"),
    Case("trailing-bytes", _append, "InvalidModel"),
    Case("declared-length-too-long", lambda b: put_u64(b, 56, len(b) + 1), "Bounds"),
    Case("zero-d-model", lambda b: put_u32(b, 20, 0), "UnsupportedShape"),
    Case("heads-not-multiple-of-kv", lambda b: put_u32(b, 36, 3), "UnsupportedShape"),
    Case("odd-head-dim", lambda b: put_u32(b, 40, 5), "UnsupportedShape"),
    Case("zero-context", lambda b: put_u32(b, 44, 0), "UnsupportedShape"),
    Case("vocab-below-bytes", lambda b: put_u32(b, 28, 200), "UnsupportedShape"),
    Case("negative-eps", lambda b: put_u32(b, 48, 0xBF800000), "InvalidModel"),
    Case("tensor-count", lambda b: put_u32(b, 52, 3), "InvalidModel"),
    Case("huge-tensor-count", lambda b: put_u32(b, 52, 0xFFFFFFFF), "InvalidModel"),
    Case("huge-layer-count", lambda b: put_u32(b, 16, 0x1C71C71C), "InvalidModel"),
    Case("unknown-layout", lambda b: put_u32(b, entry_at(0) + 4, 3), "UnsupportedQuantization"),
    Case("quantized-norm", lambda b: put_u32(b, entry_at(1) + 4, 2), "UnsupportedQuantization"),
    Case("unknown-kind", lambda b: b.__setitem__(entry_at(0), 0), "InvalidModel"),
    Case("layer-out-of-range", lambda b: b.__setitem__(entry_at(0) + 2, 9), "InvalidModel"),
    Case("wrong-rows", lambda b: put_u32(b, entry_at(0) + 8, 1), "UnsupportedShape"),
    Case("stored-bytes-mismatch", _short_stored, "InvalidModel"),
    Case("misaligned-offset", _shift(3, 4), "Alignment"),
    Case("offset-past-end", lambda b: put_u64(b, entry_at(3) + ENTRY_OFFSET, 1 << 40), "Bounds"),
    Case(
        "offset-wraps-u64",
        lambda b: put_u64(b, entry_at(3) + ENTRY_OFFSET, 2**64 - 16),
        "IntegerOverflow",
    ),
    Case(
        "offset-into-directory",
        lambda b: put_u64(b, entry_at(3) + ENTRY_OFFSET, 64),
        "InvalidModel",
    ),
    Case("overlapping-tensors", _overlap, "InvalidModel"),
    Case("duplicate-tensor", _duplicate, "InvalidModel"),
    Case("overflowing-dims", _overflow_dims, "IntegerOverflow"),
)


def mutated(model: bytes, case: Case) -> bytes:
    b = bytearray(model)
    case.mutate(b)
    return bytes(b)


def truncation_points(length: int) -> list[int]:
    """Every offset in the header and directory region, then a spread through the data."""
    head = list(range(0, min(length, 64 + 32 * 24)))
    spread = list(range(64 + 32 * 24, length, max(1, length // 97)))
    return head + spread + [length - 1]
