"""Value types and which proposal each one needs (one table)."""

from __future__ import annotations

from verify.wasm.errors import MalformedWasm
from verify.wasm.features import NONE, Proposal

# value type byte -> (name, proposal it requires; NONE for Wasm 1.0)
VALTYPES: dict[int, tuple[str, Proposal]] = {
    0x7F: ("i32", NONE),
    0x7E: ("i64", NONE),
    0x7D: ("f32", NONE),
    0x7C: ("f64", NONE),
    0x7B: ("v128", Proposal.SIMD),
    0x70: ("funcref", Proposal.REFERENCE_TYPES),
    0x6F: ("externref", Proposal.REFERENCE_TYPES),
    0x69: ("exnref", Proposal.EXCEPTIONS),
}
V128 = 0x7B
FUNCREF = 0x70
REFTYPES = frozenset({0x70, 0x6F, 0x69})


def valtype_requirement(byte: int, offset: int) -> Proposal:
    """The proposal a value type needs; an unknown type byte is an error at `offset`."""
    row = VALTYPES.get(byte)
    if row is None:
        raise MalformedWasm(f"invalid or unsupported value type 0x{byte:02x}", offset)
    return row[1]


def valtype_name(byte: int) -> str:
    return VALTYPES[byte][0]
