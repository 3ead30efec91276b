"""first_difference names the section where two builds part ways."""

from __future__ import annotations

import pytest

from verify.section_diff import first_difference


def _module(code_body: bytes) -> bytes:
    # (module (func) ) with one custom section "x" after the code section.
    body = bytes([1, len(code_body)]) + code_body
    code = bytes([10, len(body)]) + body
    custom = bytes([0, 3, 1]) + b"x" + b"\x00"
    return b"\0asm\x01\0\0\0" + bytes([1, 4, 1, 0x60, 0, 0, 3, 2, 1, 0]) + code + custom


CASES = {
    "identical": (_module(b"\x00\x0b"), _module(b"\x00\x0b"), None),
    "code": (_module(b"\x00\x01\x0b"), _module(b"\x00\x00\x0b"), "section code"),
    "custom": (_module(b"\x00\x0b"), _module(b"\x00\x0b")[:-1] + b"\x01", "section x"),
    "length": (b"abc", b"abcd", "byte 3"),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_first_difference(case: tuple[bytes, bytes, str | None]) -> None:
    a, b, expected = case
    found = first_difference(a, b)
    if expected is None:
        assert found is None
    else:
        assert found is not None and expected in found


def test_a_malformed_side_still_gets_a_section_from_the_other() -> None:
    good = _module(b"\x00\x01\x0b")
    broken = good[:-9] + b"\xff" + good[-8:]  # the code body no longer decodes
    found = first_difference(broken, good)
    assert found is not None and "section code" in found
