"""Value types and which proposals each one needs (one table), as wasmparser's
`check_value_type`: every reference type needs reference-types, and then its heap type
decides: func/extern nullable nothing more, non-nullable function-references; exn/noexn
exceptions; any, eq, i31, struct, array, none, noextern, nofunc gc; a type index
function-references (gc also allows it; we name the smaller proposal).
"""

from __future__ import annotations

from collections.abc import Sequence

from verify.wasm.errors import MalformedWasm
from verify.wasm.features import NONE, Proposal
from verify.wasm.reader import leb_signed, leb_unsigned

_RT = Proposal.REFERENCE_TYPES
_EXN = Proposal.EXCEPTIONS | _RT
_GC = Proposal.GC | _RT
_FR = Proposal.FUNCTION_REFERENCES | _RT

# value type byte -> (name, proposals it requires; NONE for Wasm 1.0); the reference types
# here are the one-byte shorthands of nullable abstract references (`funcref` = `(ref null
# func)`)
VALTYPES: dict[int, tuple[str, Proposal]] = {
    0x7F: ("i32", NONE),
    0x7E: ("i64", NONE),
    0x7D: ("f32", NONE),
    0x7C: ("f64", NONE),
    0x7B: ("v128", Proposal.SIMD),
    0x70: ("funcref", _RT),
    0x6F: ("externref", _RT),
    0x69: ("exnref", _EXN),
    0x74: ("nullexnref", _EXN),
    0x6E: ("anyref", _GC),
    0x6D: ("eqref", _GC),
    0x6C: ("i31ref", _GC),
    0x6B: ("structref", _GC),
    0x6A: ("arrayref", _GC),
    0x71: ("nullref", _GC),
    0x72: ("nullexternref", _GC),
    0x73: ("nullfuncref", _GC),
}
V128 = 0x7B
FUNCREF = 0x70
REF_NULL = 0x63  # (ref null ht)
REF = 0x64  # (ref ht)
REFTYPES = frozenset(b for b, (_, needs) in VALTYPES.items() if needs & _RT) | {REF_NULL, REF}


def valtype_requirement(byte: int, offset: int) -> Proposal:
    """The proposals a one-byte value type needs; an unknown type byte is an error."""
    row = VALTYPES.get(byte)
    if row is None:
        raise MalformedWasm(f"invalid or unsupported value type 0x{byte:02x}", offset)
    return row[1]


def valtype_at(data: Sequence[int], pos: int, end: int) -> tuple[Proposal, int]:
    """The value type at `pos` (one byte, or 0x63/0x64 and a heap type): the proposals it
    needs and the position after it. Errors carry offsets into `data`."""
    if pos >= end:
        raise MalformedWasm("unexpected end of data in value type", pos)
    first = data[pos]
    if first not in (REF_NULL, REF):
        return valtype_requirement(first, pos), pos + 1
    nxt = heaptype_end(data, pos + 1, end)
    heap = data[pos + 1]
    if heap in (HEAPTYPE_SHARED, HEAPTYPE_EXACT) or heap in _UNMODELLED_HEAPTYPES:
        raise MalformedWasm(
            f"unsupported reference type (heap type 0x{heap:02x}: shared-everything-threads, "
            "custom descriptors and stack switching are not modelled)",
            pos,
        )
    if heap not in ABSTRACT_HEAPTYPES:  # a type index
        return _FR, nxt
    if heap in (0x70, 0x6F):  # func, extern
        return (_RT if first == REF_NULL else _FR), nxt
    return (_EXN if heap in (0x69, 0x74) else _GC), nxt


# The heap type of `ref.null` (the binary grammar, as wasmparser's HeapType reader): one of
# these abstract heap type bytes (reference types, exceptions, GC, stack switching), `shared`
# and one of them, `exact` and a type index, or a non-negative s33 type index. Any other
# negative s33 is malformed ("invalid heap type"): an encoding rule, not a typing one, so the
# parser refuses it (parser fuzz cases 57645 and 82749 of seed 1, issue 26).
# One row per proposal (fmt: skip keeps the rows).
ABSTRACT_HEAPTYPES: dict[int, str] = {
    0x70: "func", 0x6F: "extern",  # reference types
    0x69: "exn", 0x74: "noexn",  # exception handling
    0x6E: "any", 0x6D: "eq", 0x6C: "i31", 0x6B: "struct", 0x6A: "array",  # GC
    0x71: "none", 0x72: "noextern", 0x73: "nofunc",  # GC bottom types
    0x68: "cont", 0x75: "nocont",  # stack switching
}  # fmt: skip
_UNMODELLED_HEAPTYPES = frozenset({0x68, 0x75})  # cont, nocont (stack switching)
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
