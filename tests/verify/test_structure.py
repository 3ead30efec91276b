"""Control-frame structure in function bodies (issue 15, item 6): what wasmparser's operator
reader refuses, our parser refuses too, at the offending byte; well-nested code still parses.

Each bad case is also given to the real `wasm-tools validate`, which must refuse it as well
(so the table cannot drift into refusing what the reference accepts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.verify import wasmbuild as wb
from verify.wasm.errors import MalformedWasm
from verify.wasm.sections import parse_module
from verify.wasm.tools import validate

# name, operators of one body (the builder appends the final `end`), message fragment,
# index in the operators of the byte the error must name (None: the end of the body).
BAD = [
    ("stray-else", b"\x05", "else found outside", 0),
    ("else-in-block", b"\x02\x40\x05\x0b", "else found outside", 2),
    ("second-else", b"\x41\x00\x04\x40\x05\x05\x0b", "else found outside", 5),
    ("else-after-if-closed", b"\x41\x00\x04\x40\x0b\x05", "else found outside", 5),
    ("catch-outside-try", b"\x07\x00", "catch found outside", 0),
    ("catch-all-outside-try", b"\x19", "catch_all found outside", 0),
    ("catch-after-catch-all", b"\x06\x40\x19\x07\x00\x0b", "catch found outside", 3),
    ("delegate-in-block", b"\x02\x40\x18\x00\x0b", "delegate found outside", 2),
    ("br-past-function", b"\x0c\x01", "unknown label", 1),
    ("br-if-past-function", b"\x41\x00\x02\x40\x0d\x02\x0b", "unknown label", 5),
    ("br-table-default-too-deep", b"\x41\x00\x0e\x01\x00\x05", "unknown label", 5),
    ("try-table-catch-label-too-deep", b"\x1f\x40\x01\x02\x01\x0b", "unknown label", 4),
    ("rethrow-to-a-block", b"\x06\x40\x19\x02\x40\x09\x00\x0b\x0b", "rethrow label", 5),
    ("block-never-closed", b"\x02\x40", "ended prematurely", None),
    ("loop-never-closed", b"\x03\x40\x02\x40\x0b", "ended prematurely", None),
]  # fmt: skip

GOOD = [
    ("if-else-end", b"\x41\x00\x04\x40\x01\x05\x01\x0b", 6),
    ("nested-br-to-function", b"\x02\x40\x03\x40\x0c\x02\x0b\x0b", 5),
    ("br-table-in-range", b"\x02\x40\x41\x00\x0e\x01\x00\x01\x0b", 4),
    ("try-catch-catch-all", b"\x06\x40\x07\x00\x19\x0b", 4),
    ("try-delegate-to-function", b"\x06\x40\x18\x00", 2),
    ("try-table-catch-all", b"\x1f\x40\x01\x02\x00\x0b", 2),
    ("rethrow-from-catch-all", b"\x06\x40\x19\x02\x40\x09\x01\x0b\x0b", 6),
    ("call-ref", b"\xd0\x00\x14\x00\x1a", 3),
    ("return-call-ref", b"\xd0\x00\x15\x00", 2),
]  # fmt: skip


def _module(code: bytes) -> bytes:
    return wb.module(wb.ModuleSpec(code=[code], exports=[], export_memory=False, memory=None))


@pytest.mark.parametrize(("code", "fragment", "index"), [c[1:] for c in BAD],
                         ids=[c[0] for c in BAD])  # fmt: skip
def test_bad_structure_is_refused_at_the_byte(
    code: bytes, fragment: str, index: int | None, tmp_path: Path
) -> None:
    data = _module(code)
    with pytest.raises(MalformedWasm) as info:
        parse_module(data)
    assert fragment in info.value.message, info.value.diagnostics()
    # The code section is last: the operators sit just before the body's final `end`.
    expected = len(data) if index is None else len(data) - 1 - len(code) + index
    assert info.value.offset == expected, info.value.diagnostics()
    path = tmp_path / "bad.wasm"
    path.write_bytes(data)
    assert not validate(path, "all").valid


@pytest.mark.parametrize(("code", "instructions"), [c[1:] for c in GOOD],
                         ids=[c[0] for c in GOOD])  # fmt: skip
def test_well_nested_code_parses(code: bytes, instructions: int) -> None:
    module = parse_module(_module(code))
    assert module.code.instruction_count == instructions + 1  # + the final end
