"""LEB128 and primitive reads over an immutable byte buffer, with absolute offsets.

`Reader` is used for section-level structure; the hot function-body loop in `code.py`
reads `data` directly and only falls back to these helpers for multi-byte LEBs.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from verify.wasm.errors import MalformedWasm


def leb_unsigned(data: Sequence[int], pos: int, end: int, bits: int, what: str) -> tuple[int, int]:
    """Decode an unsigned LEB128 of at most `bits` bits starting at `pos`; returns (value, next)."""
    result = 0
    shift = 0
    start = pos
    max_bytes = (bits + 6) // 7
    while True:
        if pos >= end:
            raise MalformedWasm(f"unexpected end of data in {what} (LEB128)", pos)
        byte = data[pos]
        pos += 1
        if pos - start == max_bytes:
            # The last permitted byte: no continuation, unused high bits must be zero.
            if byte & 0x80:
                raise MalformedWasm(f"{what}: LEB128 longer than {max_bytes} bytes", start)
            unused = 7 - (bits - shift)
            if unused > 0 and byte >> (7 - unused):
                raise MalformedWasm(f"{what}: LEB128 value out of range for u{bits}", start)
            return result | (byte << shift), pos
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def leb_signed(data: Sequence[int], pos: int, end: int, bits: int, what: str) -> tuple[int, int]:
    """Decode a signed LEB128 of at most `bits` bits; overlong/out-of-range bytes are errors."""
    result = 0
    shift = 0
    start = pos
    max_bytes = (bits + 6) // 7
    while True:
        if pos >= end:
            raise MalformedWasm(f"unexpected end of data in {what} (LEB128)", pos)
        byte = data[pos]
        pos += 1
        if pos - start == max_bytes:
            if byte & 0x80:
                raise MalformedWasm(f"{what}: LEB128 longer than {max_bytes} bytes", start)
            # Unused high bits must all equal the sign bit of the value.
            used = bits - shift  # value bits carried by this byte (1..7)
            if used < 7:
                rest = byte >> (used - 1)  # sign bit and the unused bits above it
                if rest not in (0, (1 << (8 - used)) - 1):
                    raise MalformedWasm(f"{what}: LEB128 value out of range for s{bits}", start)
            result |= (byte & 0x7F) << shift
            shift += 7
            break
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
    if result & (1 << (shift - 1)):
        result -= 1 << shift
    return result, pos


class Reader:
    """A cursor over data[pos:end]; every error carries the absolute offset."""

    __slots__ = ("data", "end", "pos")

    def __init__(self, data: bytes, pos: int = 0, end: int | None = None) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end

    def at_end(self) -> bool:
        return self.pos >= self.end

    def error(self, message: str, offset: int | None = None) -> MalformedWasm:
        return MalformedWasm(message, self.pos if offset is None else offset)

    def byte(self, what: str) -> int:
        if self.pos >= self.end:
            raise self.error(f"unexpected end of data reading {what}")
        value = self.data[self.pos]
        self.pos += 1
        return value

    def u32(self, what: str) -> int:
        value, self.pos = leb_unsigned(self.data, self.pos, self.end, 32, what)
        return value

    def u64(self, what: str) -> int:
        value, self.pos = leb_unsigned(self.data, self.pos, self.end, 64, what)
        return value

    def s32(self, what: str) -> int:
        value, self.pos = leb_signed(self.data, self.pos, self.end, 32, what)
        return value

    def s33(self, what: str) -> int:
        value, self.pos = leb_signed(self.data, self.pos, self.end, 33, what)
        return value

    def s64(self, what: str) -> int:
        value, self.pos = leb_signed(self.data, self.pos, self.end, 64, what)
        return value

    def take(self, count: int, what: str) -> bytes:
        if count > self.end - self.pos:
            raise self.error(f"{what}: needs {count} bytes, only {self.end - self.pos} left")
        start = self.pos
        self.pos += count
        return self.data[start : self.pos]

    def skip(self, count: int, what: str) -> None:
        if count > self.end - self.pos:
            raise self.error(f"{what}: needs {count} bytes, only {self.end - self.pos} left")
        self.pos += count

    def f32(self, what: str) -> float:
        value: float = struct.unpack("<f", self.take(4, what))[0]
        return value

    def f64(self, what: str) -> float:
        value: float = struct.unpack("<d", self.take(8, what))[0]
        return value

    def name(self, what: str) -> str:
        length = self.u32(f"{what} length")
        start = self.pos
        raw = self.take(length, what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.error(f"{what}: invalid UTF-8", start + exc.start) from None

    def count(self, what: str, min_item_bytes: int = 1) -> int:
        """A vector length, bounded by the bytes left so a bogus count cannot run away."""
        start = self.pos
        n = self.u32(f"{what} count")
        if n * min_item_bytes > self.end - self.pos:
            raise self.error(f"{what}: count {n} exceeds the remaining bytes", start)
        return n

    def sub(self, size: int, what: str) -> Reader:
        """A reader over the next `size` bytes (which this reader then skips)."""
        if size > self.end - self.pos:
            raise self.error(f"{what}: size {size} runs past the end ({self.end - self.pos} left)")
        inner = Reader(self.data, self.pos, self.pos + size)
        self.pos += size
        return inner

    def expect_end(self, what: str) -> None:
        if self.pos != self.end:
            raise self.error(f"{what}: {self.end - self.pos} unread bytes at the end")
