"""Value types and which proposal each one needs (one table)."""

from __future__ import annotations

from collections.abc import Sequence

from verify.wasm.errors import MalformedWasm
from verify.wasm.features import NONE, Proposal
from verify.wasm.reader import leb_signed, leb_unsigned

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


# The heap type of `ref.null` (the binary grammar, as wasmparser's HeapType reader): one of
# these abstract heap type bytes (reference types, exceptions, GC, stack switching), `shared`
# and one of them, `exact` and a type index, or a non-negative s33 type index. Any other
# negative s33 is malformed ("invalid heap type"): an encoding rule, not a typing one, so the
# parser refuses it (parser fuzz cases 57645 and 82749 of seed 1, issue 26).
ABSTRACT_HEAPTYPES: dict[int, str] = {
    0x70: "func", 0x6F: "extern", 0x69: "exn", 0x74: "noexn", 0x6E: "any", 0x6D: "eq",
    0x6C: "i31", 0x6B: "struct", 0x6A: "array", 0x71: "none", 0x72: "noextern",
    0x73: "nofunc", 0x68: "cont", 0x75: "nocont",
}  # fmt: skip
HEAPTYPE_SHARED = 0x65  # shared-everything-threads: `shared` + an abstract heap type
HEAPTYPE_EXACT = 0x62  # custom descriptors: `exact` + a type index (u32)
# wasmparser packs a concrete heap type's index in 20 bits and refuses a larger one while
# decoding ("type index greater than implementation limits"): no module has that many types
# (its limit is 1,000,000), so such an index is never valid (parser fuzz cases 17590, 69005).
HEAPTYPE_INDEX_LIMIT = 1 << 20


def heaptype_end(data: Sequence[int], pos: int, end: int) -> int:
    """The position after the heap type at `pos`; errors carry offsets into `data`."""
    if pos >= end:
        raise MalformedWasm("unexpected end of data in heap type", pos)
    first = data[pos]
    if first in ABSTRACT_HEAPTYPES:
        return pos + 1
    if first == HEAPTYPE_SHARED:
        if pos + 1 >= end:
            raise MalformedWasm("unexpected end of data in shared heap type", pos + 1)
        if data[pos + 1] not in ABSTRACT_HEAPTYPES:
            raise MalformedWasm(f"invalid abstract heap type 0x{data[pos + 1]:02x}", pos + 1)
        return pos + 2
    if first == HEAPTYPE_EXACT:
        return leb_unsigned(data, pos + 1, end, 32, "exact heap type index")[1]
    index, nxt = leb_signed(data, pos, end, 33, "heap type")
    if index < 0:
        raise MalformedWasm(f"invalid heap type 0x{first:02x}", pos)
    if index >= HEAPTYPE_INDEX_LIMIT:
        raise MalformedWasm(f"heap type index {index} is over the limit of 2**20 types", pos)
    return nxt
