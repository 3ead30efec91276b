"""Heap types (`ref.null t` in a body and in a constant expression) against the real wasm-tools.

The parser fuzz campaign (issue 26) found two mutants, cases 57645 and 82749 of seed 1 (the
default seed), that `wasm-tools validate` refuses with "invalid heap type" while our parser
took any s33 as a heap type: a byte inserted after `ref.null` (0xD0) became its heap type
(0x41, the next `i32.const`; 0x47). A heap type is a binary-format rule (wasmparser's reader
refuses it, like an unknown value type byte), not a typing rule, so the parser must refuse it
too, naming its offset. A rerun found two more (cases 17590 and 69005, `bytes-set`): a type
index of 2**20 or more, which wasmparser refuses while decoding ("type index greater than
implementation limits"). Every encoding below is asked of `wasm-tools validate`; we must give
the same verdict (and for a heap type refusal the same offset), except that an unknown type
index below the limit is typing, left to wasm-tools (`classify` says "type").
"""

from __future__ import annotations

import re

import pytest

from tests.fuzz import parser_mutation
from tests.verify import wasmbuild as wb
from verify.wasm.errors import MalformedWasm
from verify.wasm.inventory import inventory_bytes
from verify.wasm.tools import executable

# name -> the heap type's bytes; each in `ref.null t; drop` in a body and in a global's init
HEAPTYPES: dict[str, bytes] = {
    "func": b"\x70",
    "extern": b"\x6f",
    "exn": b"\x69",
    "noexn": b"\x74",
    "any": b"\x6e",
    "none": b"\x71",
    "nocont": b"\x75",
    "shared-func": b"\x65\x70",
    "exact-type-0": b"\x62\x00",
    "type-0": b"\x00",
    "type-0-two-bytes": b"\x80\x00",
    # refused: a negative s33 that names no abstract heap type
    "0x41-i32.const": b"\x41",  # fuzz case 57645's shape
    "0x47": b"\x47",  # fuzz case 82749's shape
    "0x40-empty-block-type": b"\x40",
    "0x67-between-cont-and-shared": b"\x67",
    "0x76-after-nocont": b"\x76",
    "0x7f-i32": b"\x7f",
    "func-two-bytes": b"\xf0\x7f",
    "shared-then-0x41": b"\x65\x41",
    "shared-then-type-0": b"\x65\x00",
    # a concrete type index: unknown below 2**20 (typing, left to wasm-tools), refused from
    # 2**20 on (wasmparser's implementation limit, checked while decoding)
    "type-5-unknown": wb.sleb(5),
    "type-2**20-1-unknown": wb.sleb(2**20 - 1),
    "type-2**20": wb.sleb(2**20),
    "type-2**32-1": wb.sleb(2**32 - 1),
    "type-2**32-too-long": wb.sleb(2**32),
    "fuzz-17590-type-2**20-in-5-bytes": b"\x80\x80\xc0\x80\x00",
    "fuzz-69005-type-1050748": b"\xfc\x90\xc0\x80\x00",
    "exact-type-2**20-unknown": b"\x62" + wb.uleb(2**20),
}
_AT = re.compile(r"\(at offset 0x([0-9a-f]+)\)")


def _body_module(heaptype: bytes) -> tuple[bytes, int]:
    """A module whose one body is `ref.null t; drop`, and the offset of the heap type."""
    data = wb.module(wb.ModuleSpec(code=[b"\xd0" + heaptype + b"\x1a"], exports=[]))
    return data, data.rindex(b"\xd0" + heaptype + b"\x1a\x0b") + 1


def _global_module(heaptype: bytes) -> tuple[bytes, int]:
    """A module with one global `funcref` initialised by `ref.null t`."""
    glob = b"\x70\x00\xd0" + heaptype + b"\x0b"
    head = b"\0asm\x01\x00\x00\x00" + wb.section(1, wb.vec([b"\x60\x00\x00"]))
    head += wb.section(3, wb.vec([wb.uleb(0)]))
    data = head + wb.section(6, wb.vec([glob])) + wb.section(10, wb.vec([wb.body(b"")]))
    return data, len(head) + 2 + 1 + 3


def _ours(data: bytes) -> tuple[bool, int | None]:
    try:
        inventory_bytes(data)
        return True, None
    except MalformedWasm as exc:
        return False, exc.offset


def _theirs(data: bytes) -> tuple[bool, str]:
    return parser_mutation.wasm_tools_verdict(executable(), data)


def _compare(data: bytes, at: int) -> None:
    valid, message = _theirs(data)
    accepted, offset = _ours(data)
    if not valid and parser_mutation.classify(message) == "type":  # typing: not the parser's
        assert accepted, f"refused at {offset}, but wasm-tools refuses only a type: {message}"
        return
    assert accepted == valid, f"wasm-tools: {valid} {message!r}; ours: offset {offset}"
    if not valid and "heap type" in message:  # the same byte as wasm-tools names
        found = _AT.search(message)
        assert found and offset == int(found.group(1), 16) and offset in (at, at + 1), message


@pytest.mark.parametrize("heaptype", HEAPTYPES.values(), ids=HEAPTYPES.keys())
def test_ref_null_in_a_body(heaptype: bytes) -> None:
    _compare(*_body_module(heaptype))


@pytest.mark.parametrize("heaptype", HEAPTYPES.values(), ids=HEAPTYPES.keys())
def test_ref_null_in_a_constant_expression(heaptype: bytes) -> None:
    data, at = _global_module(heaptype)
    valid, message = _theirs(data)
    accepted, offset = _ours(data)
    if parser_mutation.classify(message) == "type":  # e.g. a funcref global holding another
        assert accepted, message  # null: the parser does not type-check (type-only)
        return
    assert accepted == valid, f"wasm-tools: {valid} {message!r}; ours: offset {offset}"
    if not valid and "heap type" in message:  # the same byte as wasm-tools names
        found = _AT.search(message)
        assert found and offset == int(found.group(1), 16) and offset in (at, at + 1), message


def test_every_kind_of_verdict_is_exercised() -> None:
    kinds = set()
    for heaptype in HEAPTYPES.values():
        valid, message = _theirs(_body_module(heaptype)[0])
        kinds.add("valid" if valid else parser_mutation.classify(message))
    assert kinds == {"valid", "type", "structure"}


def test_fuzz_case_57645_of_seed_1_is_refused_at_its_heap_type() -> None:
    """The campaign's own case rebuilt: its seed module (builder-threads) was the 3rd of 7
    (4 builder modules and 3 built lanes); a corpus of 7 copies draws the same mutation."""
    threads = dict(parser_mutation.corpus(include_lanes=False))["builder-threads"]
    name, data = parser_mutation.mutant(1, 57645, [("builder-threads", threads)] * 7)
    assert name == "body-insert-byte"
    valid, message = _theirs(data)
    assert not valid and "invalid heap type" in message
    accepted, offset = _ours(data)
    assert not accepted and offset is not None
    assert data[offset - 1 : offset + 1] == b"\xd0\x41"
    found = _AT.search(message)
    assert found and offset == int(found.group(1), 16)
    assert parser_mutation.classify(message) == "structure"  # a mismatch, never excused
