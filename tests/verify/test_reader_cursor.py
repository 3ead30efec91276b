"""verify/wasm/reader.py's cursor and LEB128 errors, exactly: each read's value, the position
it leaves, and each refusal's message and absolute offset (the wasm parser's errors are only
as good as these)."""

from __future__ import annotations

import struct

import pytest

from verify.wasm.errors import MalformedWasm
from verify.wasm.reader import Reader, leb_signed, leb_unsigned

PAD = b"\xaa\xbb"  # bytes before the reader's window: offsets must be absolute


def _reader(data: bytes) -> Reader:
    return Reader(PAD + data + b"\xcc", len(PAD), len(PAD) + len(data))


def _refused(read: object, message: str, offset: int) -> None:
    assert callable(read)
    with pytest.raises(MalformedWasm) as caught:
        read()
    assert (caught.value.message, caught.value.offset) == (message, offset)


# kind -> (method, bytes, value)
READS = {
    "u32": ("u32", b"\xe5\x8e\x26", 624485),
    "u64": ("u64", b"\xff" * 9 + b"\x01", 2**64 - 1),
    "s32": ("s32", b"\x80\x7f", -128),
    "s33": ("s33", b"\x80\x80\x80\x80\x0f", 0xF000_0000),
    "s33-negative": ("s33", b"\x40", -64),
    "s64": ("s64", b"\x80" * 9 + b"\x7f", -(2**63)),
    "s64-small": ("s64", b"\x3f", 63),
}


@pytest.mark.parametrize("kind", list(READS))
def test_each_leb_read_returns_its_value_and_moves_past_it(kind: str) -> None:
    method, data, value = READS[kind]
    r = _reader(data)
    assert getattr(r, method)("x") == value
    assert r.pos == len(PAD) + len(data) and r.at_end()


@pytest.mark.parametrize(
    ("method", "bits", "signed"),
    [("u32", 32, False), ("u64", 64, False), ("s32", 32, True), ("s33", 33, True),
     ("s64", 64, True)],
)  # fmt: skip
def test_each_leb_read_has_its_own_width(method: str, bits: int, signed: bool) -> None:
    """One byte too many for this width is refused at the LEB's start."""
    too_long = b"\x80" * ((bits + 6) // 7) + b"\x00"
    r = _reader(too_long)
    _refused(
        lambda: getattr(r, method)("field"),
        f"field: LEB128 longer than {(bits + 6) // 7} bytes",
        len(PAD),
    )


def test_leb_messages_and_offsets() -> None:
    _refused(lambda: leb_unsigned(b"\x00\x80", 1, 2, 32, "w"),
             "unexpected end of data in w (LEB128)", 2)  # fmt: skip
    _refused(lambda: leb_signed(b"\x00\x80", 1, 2, 32, "w"),
             "unexpected end of data in w (LEB128)", 2)  # fmt: skip
    _refused(lambda: leb_unsigned(b"\x00" + b"\xff" * 4 + b"\x1f", 1, 6, 32, "w"),
             "w: LEB128 value out of range for u32", 1)  # fmt: skip
    _refused(lambda: leb_signed(b"\x00" + b"\xff" * 4 + b"\x0f", 1, 6, 32, "w"),
             "w: LEB128 value out of range for s32", 1)  # fmt: skip
    # the window's end, not the buffer's, stops a read
    _refused(lambda: leb_unsigned(b"\x80\x00", 0, 1, 32, "w"),
             "unexpected end of data in w (LEB128)", 1)  # fmt: skip


@pytest.mark.parametrize(
    ("data", "bits", "value"),
    [(b"\xff\xff\xff\xff\x0f", 32, 2**32 - 1), (b"\x80\x80\x80\x80\x01", 32, 2**28),
     (b"\xff" * 9 + b"\x01", 64, 2**64 - 1), (b"\x7f", 7, 127), (b"\x80\x01", 8, 128)],
)  # fmt: skip
def test_unsigned_leb_uses_every_bit_of_its_last_byte(data: bytes, bits: int, value: int) -> None:
    assert leb_unsigned(data, 0, len(data), bits, "w") == (value, len(data))


@pytest.mark.parametrize(
    ("data", "bits", "value"),
    [(b"\xff\xff\xff\xff\x07", 32, 2**31 - 1), (b"\x80\x7f", 8, -128),
     (b"\xc0\x00", 32, 64), (b"\xff\x7e", 32, -129), (b"\x80\x80\x80\x80\x70", 33, -(2**32))],
)  # fmt: skip
def test_signed_leb_values(data: bytes, bits: int, value: int) -> None:
    assert leb_signed(data, 0, len(data), bits, "w") == (value, len(data))


def test_byte_take_skip_and_floats() -> None:
    r = _reader(b"\x07" + struct.pack("<f", 1.5) + struct.pack("<d", -2.25) + b"xyz")
    assert r.byte("b") == 7 and r.pos == len(PAD) + 1
    assert r.f32("f") == 1.5 and r.f64("d") == -2.25
    assert r.take(2, "t") == b"xy"
    r.skip(1, "s")
    assert r.at_end()
    _refused(lambda: r.byte("the flag"), "unexpected end of data reading the flag", r.pos)
    r2 = _reader(b"abc")
    _refused(lambda: r2.take(4, "blob"), "blob: needs 4 bytes, only 3 left", len(PAD))
    _refused(lambda: r2.skip(4, "gap"), "gap: needs 4 bytes, only 3 left", len(PAD))
    assert r2.take(3, "blob") == b"abc" and r2.pos == r2.end
    r3 = _reader(b"ab")
    r3.skip(2, "gap")
    assert r3.at_end() and r3.pos == len(PAD) + 2
    _refused(lambda: _reader(b"\x00\x00").f32("f"), "f: needs 4 bytes, only 2 left", len(PAD))
    _refused(lambda: _reader(b"\x00" * 7).f64("d"), "d: needs 8 bytes, only 7 left", len(PAD))


def test_reader_defaults_to_the_whole_buffer() -> None:
    r = Reader(b"abc")
    assert (r.pos, r.end) == (0, 3)
    r = Reader(b"abc", 1)
    assert (r.pos, r.end) == (1, 3)
    assert (r.take(2, "t"), r.pos) == (b"bc", 3)
    assert not Reader(b"a").at_end() and Reader(b"").at_end()


def test_error_offsets_default_to_the_cursor() -> None:
    r = _reader(b"abc")
    r.byte("b")
    err = r.error("m")
    assert (err.message, err.offset) == ("m", len(PAD) + 1)
    assert r.error("m", 0).offset == 0


def test_name_reads_utf8_and_says_where_it_is_not() -> None:
    r = _reader(b"\x03h\xc3\xa9rest")
    assert r.name("import") == "h\u00e9" and r.pos == len(PAD) + 4
    _refused(lambda: _reader(b"\x03a\xffb").name("export"), "export: invalid UTF-8", len(PAD) + 2)
    _refused(lambda: _reader(b"\x05abc").name("field"), "field: needs 5 bytes, only 3 left",
             len(PAD) + 1)  # fmt: skip
    _refused(lambda: _reader(b"\x80").name("field"),
             "unexpected end of data in field length (LEB128)", len(PAD) + 1)  # fmt: skip


def test_count_is_bounded_by_the_bytes_left() -> None:
    r = _reader(b"\x03abc")
    assert r.count("items") == 3 and r.pos == len(PAD) + 1
    r = _reader(b"\x02abcd")
    assert r.count("items", 2) == 2
    _refused(lambda: _reader(b"\x03ab").count("items"),
             "items: count 3 exceeds the remaining bytes", len(PAD))  # fmt: skip
    _refused(lambda: _reader(b"\x03abcde").count("items", 2),
             "items: count 3 exceeds the remaining bytes", len(PAD))  # fmt: skip
    _refused(lambda: _reader(b"").count("items"),
             "unexpected end of data in items count (LEB128)", len(PAD))  # fmt: skip


def test_sub_reader_and_expect_end() -> None:
    r = _reader(b"abcde")
    inner = r.sub(3, "section")
    assert (inner.pos, inner.end, r.pos) == (len(PAD), len(PAD) + 3, len(PAD) + 3)
    assert inner.take(3, "t") == b"abc"
    inner.expect_end("section")
    tail = r.sub(2, "tail")
    tail.skip(2, "t")
    tail.expect_end("tail")
    assert r.at_end()
    _refused(lambda: _reader(b"ab").sub(3, "section"),
             "section: size 3 runs past the end (2 left)", len(PAD))  # fmt: skip
    left = _reader(b"abc")
    left.byte("b")
    _refused(lambda: left.expect_end("body"), "body: 2 unread bytes at the end", len(PAD) + 1)
    exact = _reader(b"ab")
    assert exact.sub(2, "all").end == len(PAD) + 2 and exact.at_end()


# method -> the shortest encoding one bit too wide for that method's width (fits one more bit)
ONE_BIT_TOO_WIDE = {
    "u32": (b"\xff\xff\xff\xff\x1f", "u32"),
    "u64": (b"\xff" * 9 + b"\x03", "u64"),
    "s32": (b"\xff\xff\xff\xff\x0f", "s32"),
    "s33": (b"\x80\x80\x80\x80\x10", "s33"),
    "s64": (b"\x80" * 9 + b"\x01", "s64"),
}


@pytest.mark.parametrize("method", list(ONE_BIT_TOO_WIDE))
def test_each_read_refuses_a_value_one_bit_too_wide(method: str) -> None:
    data, width = ONE_BIT_TOO_WIDE[method]
    r = _reader(data)
    _refused(lambda: getattr(r, method)("imm"), f"imm: LEB128 value out of range for {width}",
             len(PAD))  # fmt: skip


def test_a_seven_bit_signed_leb_is_one_byte() -> None:
    assert leb_signed(b"\x3f", 0, 1, 7, "w") == (63, 1)
    assert leb_signed(b"\x40", 0, 1, 7, "w") == (-64, 1)
    _refused(lambda: leb_signed(b"\x80\x00", 0, 2, 7, "w"), "w: LEB128 longer than 1 bytes", 0)
    _refused(lambda: leb_unsigned(b"\x80\x00", 0, 2, 7, "w"), "w: LEB128 longer than 1 bytes", 0)
