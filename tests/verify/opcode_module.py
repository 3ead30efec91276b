"""A module whose one function uses every operator of verify/wasm/opcodes.py once, each with
immediates encoded from the table's immediate kinds (distinct values where the kind has one),
for checking the table against the real `wasm-tools print`. Table-driven: an operator added
to the table is in the module automatically."""

from __future__ import annotations

import struct

from tests.verify.wasmbuild import sleb, uleb
from verify.wasm.opcodes import OPCODES, Imm, Op


def memarg_offset(index: int) -> int:
    """The distinct offset of the index-th operator's memarg (printed as `offset=N`)."""
    return 1000 + index


def immediates(op: Op, index: int) -> bytes:
    out = bytearray()
    for kind in op.imms:
        match kind:
            case Imm.BLOCKTYPE:
                out += b"\x40"
            case Imm.BR_TABLE:
                out += uleb(1) + uleb(0) + uleb(0)
            case Imm.MEMARG:
                out += uleb(0) + uleb(memarg_offset(index))  # align 2^0: valid for every width
            case Imm.I32:
                out += sleb(-(index + 2))
            case Imm.I64:
                out += sleb(-(index + 2) * 2**40)
            case Imm.F32:
                out += struct.pack("<f", 1.5)
            case Imm.F64:
                out += struct.pack("<d", 2.5)
            case Imm.V128 | Imm.SHUFFLE:
                out += bytes(range(16))
            case Imm.LANE:
                out += b"\x01"
            case Imm.SELECT_T:
                out += uleb(1) + b"\x7f"
            case Imm.HEAPTYPE:
                out += b"\x70"
            case Imm.TRY_TABLE:
                out += b"\x40" + uleb(0)
            case Imm.ZERO:
                out += b"\x00"
            case Imm.BR_ON_CAST:  # nullable to nullable, depth 0, funcref to funcref
                out += b"\x03" + uleb(0) + b"\x70\x70"
            case (
                _
            ):  # an index, depth or u32: LABEL FUNC TYPE TABLE LOCAL GLOBAL MEM DATA ELEM TAG U32
                out += uleb(0)
    return bytes(out)


def encode(op: Op, index: int) -> bytes:
    head = bytes([op.code]) if op.prefix == 0 else bytes([op.prefix]) + uleb(op.code)
    return head + immediates(op, index)


# The block operators in an order the printer accepts (it tracks nesting); `end` closes
# `block`, `loop`/`if` and the first `try` by repetition, so it is listed once per use.
STRUCTURE = (
    "block",
    "loop",
    "if",
    "else",
    "end",
    "end",
    "end",
    "try",
    "catch",
    "catch_all",
    "end",
    "try",
    "delegate",
    "try_table",
    "end",
)


def ordered_ops() -> list[Op]:
    """The structure above, then every other operator in (prefix, code) order."""
    by_name = {op.name: op for op in OPCODES.values()}
    rest = sorted(
        (op for op in OPCODES.values() if op.name not in STRUCTURE),
        key=lambda op: (op.prefix, op.code),
    )
    return [by_name[name] for name in STRUCTURE] + rest


def module() -> bytes:
    body = b"".join(encode(op, i) for i, op in enumerate(ordered_ops())) + b"\x0b"
    func = uleb(0) + body  # no locals
    code = uleb(1) + uleb(len(func)) + func

    def section(sid: int, payload: bytes) -> bytes:
        return bytes([sid]) + uleb(len(payload)) + payload

    return (
        b"\0asm\x01\0\0\0"
        + section(1, b"\x01\x60\x00\x00")
        + section(3, b"\x01\x00")
        + section(10, code)
    )
