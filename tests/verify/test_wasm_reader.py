"""LEB128 edge cases, the operator table's invariants, and the table against wasm-tools."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.verify import wasmbuild as wb
from verify.wasm.errors import MalformedWasm
from verify.wasm.features import Proposal
from verify.wasm.opcodes import OPCODES, Imm, Op
from verify.wasm.reader import leb_signed, leb_unsigned
from verify.wasm.sections import parse_module
from verify.wasm.tools import executable

LEB_OK = [
    ("u32-zero", b"\x00", False, 32, 0),
    ("u32-three-bytes", b"\xe5\x8e\x26", False, 32, 624485),
    ("u32-max", b"\xff\xff\xff\xff\x0f", False, 32, 2**32 - 1),
    ("u32-padded-zero", b"\x80\x00", False, 32, 0),
    ("s32-minus-one", b"\x7f", True, 32, -1),
    ("s32-minus-128", b"\x80\x7f", True, 32, -128),
    ("s32-max", b"\xff\xff\xff\xff\x07", True, 32, 2**31 - 1),
    ("s32-min", b"\x80\x80\x80\x80\x78", True, 32, -(2**31)),
    ("s33-block-type-index", b"\x80\x80\x80\x80\x0f", True, 33, 0xF000_0000),
    ("s64-max", b"\xff" * 9 + b"\x00", True, 64, 2**63 - 1),
    ("s64-min", b"\x80" * 9 + b"\x7f", True, 64, -(2**63)),
    ("u64-max", b"\xff" * 9 + b"\x01", False, 64, 2**64 - 1),
]
LEB_BAD = [
    ("u32-six-bytes", b"\x80\x80\x80\x80\x80\x00", False, 32),
    ("u32-out-of-range", b"\xff\xff\xff\xff\x1f", False, 32),
    ("u32-truncated", b"\x80", False, 32),
    ("s32-unused-bits-not-sign", b"\xff\xff\xff\xff\x0f", True, 32),
    ("s32-negative-bad-bits", b"\x80\x80\x80\x80\x70", True, 32),
    ("s64-out-of-range", b"\xff" * 9 + b"\x01", True, 64),
    ("u64-eleven-bytes", b"\x80" * 10 + b"\x00", False, 64),
    ("empty", b"", False, 32),
]


@pytest.mark.parametrize(("data", "signed", "bits", "value"), [c[1:] for c in LEB_OK],
                         ids=[c[0] for c in LEB_OK])  # fmt: skip
def test_leb_decodes(data: bytes, signed: bool, bits: int, value: int) -> None:
    decode = leb_signed if signed else leb_unsigned
    got, end = decode(data, 0, len(data), bits, "test")
    assert got == value
    assert end == len(data)


@pytest.mark.parametrize(("data", "signed", "bits"), [c[1:] for c in LEB_BAD],
                         ids=[c[0] for c in LEB_BAD])  # fmt: skip
def test_leb_rejects_with_offset(data: bytes, signed: bool, bits: int) -> None:
    decode = leb_signed if signed else leb_unsigned
    with pytest.raises(MalformedWasm) as info:
        decode(b"\x00\x00" + data, 2, 2 + len(data), bits, "test")
    assert info.value.offset is not None and info.value.offset >= 2


@pytest.mark.parametrize("value", [0, 1, 63, 64, -1, -64, -65, 2**31 - 1, -(2**31)])
def test_builder_sleb_round_trips(value: int) -> None:
    raw = wb.sleb(value)
    assert leb_signed(raw, 0, len(raw), 32, "t") == (value, len(raw))


def test_table_invariants() -> None:
    # Names are unique except the two encodings of `select` and the nullable and non-null
    # forms of ref.test and ref.cast (printed as one name with different heap types).
    names = [op.name for op in OPCODES.values()]
    assert {n for n in names if names.count(n) > 1} == {"select", "ref.test", "ref.cast"}
    # SIMD128 is complete (236 operators), relaxed SIMD has 20, threads 67 (wasmparser's counts).
    per = {p: sum(op.proposal is p for op in OPCODES.values()) for p in Proposal}
    assert (per[Proposal.SIMD], per[Proposal.RELAXED_SIMD], per[Proposal.THREADS]) == (236, 20, 67)
    assert all(op.prefix in (0, 0xFB, 0xFC, 0xFD, 0xFE) for op in OPCODES.values())


_BLOCKS = {"block", "loop", "if", "try", "try_table"}


def _imm_bytes(imm: Imm) -> bytes:
    fixed = {Imm.F32: 4, Imm.F64: 8, Imm.V128: 16, Imm.SHUFFLE: 16}
    if imm in fixed:
        return bytes(fixed[imm])
    return {
        Imm.BLOCKTYPE: b"\x40",
        Imm.BR_TABLE: b"\x00\x00",
        Imm.MEMARG: b"\x00\x00",
        Imm.SELECT_T: b"\x01\x7f",
        Imm.HEAPTYPE: b"\x70",
        Imm.TRY_TABLE: b"\x40\x00",
        Imm.BR_ON_CAST: b"\x03\x00\x70\x70",
    }.get(imm, b"\x00")


def _encode(op: Op) -> tuple[bytes, list[str]]:
    """Bytes of one use of `op` (wrapped so nesting stays balanced) and the names printed."""
    code = bytes([op.prefix]) + wb.uleb(op.code) if op.prefix else bytes([op.code])
    code += b"".join(_imm_bytes(i) for i in op.imms)
    if op.name in _BLOCKS:
        return code + b"\x0b", [op.name, "end"]
    if op.name == "else":
        return b"\x04\x40\x05\x0b", ["if", "else", "end"]
    if op.name in ("catch", "catch_all"):
        return b"\x06\x40" + code + b"\x0b", ["try", op.name, "end"]
    if op.name == "rethrow":  # its depth must name a catch frame
        return b"\x06\x40\x19" + code + b"\x0b", ["try", "catch_all", op.name, "end"]
    if op.name == "delegate":
        return b"\x06\x40" + code, ["try", "delegate"]
    return code, [op.name]


def test_every_operator_matches_wasm_tools_print(tmp_path: Path) -> None:
    """One body holding every operator; `wasm-tools print` must name them as our table does."""
    code = b""
    expected: list[str] = []
    for op in OPCODES.values():
        if op.name == "end":
            continue
        raw, names = _encode(op)
        code += raw
        expected += names
    data = wb.module(wb.ModuleSpec(code=[code], exports=[]))
    module = parse_module(data)
    assert module.code.instruction_count == len(expected) + 1  # + the body's final end
    path = tmp_path / "all.wasm"
    path.write_bytes(data)
    out = subprocess.run([str(executable()), "print", str(path)], capture_output=True,
                         text=True, check=True).stdout  # fmt: skip
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("(func"))
    printed = [
        line.split()[0] for line in lines[start + 1 :] if not line.strip().startswith(("(", ")"))
    ]
    assert printed == expected
