"""Function-body decoder: exact, offset-carrying, and table-driven for speed.

Every operator is decoded with its immediates (so the counts equal `wasm-tools print`),
control frames are tracked as wasmparser does (`else` only in an `if`, `catch`/`delegate`
only in a `try`, branch depths within the open frames, the final `end` as the body's last
byte), and LEB128 immediates are range-checked. Hot path: list indexing on a per-body
slice, one small-int `shape` per single-byte opcode (derived from opcodes.OPCODES),
single-byte LEBs inline; everything rare goes through `_structured`/`_immediates`.

Besides counts, the decoder records where each operator first occurs (function index and
file offset) and every requirement that shows in no operator of its own: an overlong
call_indirect table index (call-indirect-overlong), a type-index block type (multi-value),
reference or v128 types of locals, block and select types, memory indices (multi-memory).
Every operator beyond Wasm 1.0 takes the `_structured` path, so only rare paths record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from verify.wasm.errors import MalformedWasm
from verify.wasm.features import NONE, Proposal, members
from verify.wasm.opcodes import OPCODES, PREFIXES, Imm, Op
from verify.wasm.reader import leb_signed, leb_unsigned
from verify.wasm.types import heaptype_end, valtype_at

# ---- shapes of single-byte opcodes (derived from the table) ----
_UNKNOWN, _NONE, _LEB, _MEMARG, _BLOCK, _END, _PREFIX, _OTHER, _ELSE, _LABEL, _FIXED = range(11)
# Immediates of a fixed byte width (f32.const, f64.const; lane indices after a prefix).
_FIXED_WIDTH: dict[tuple[Imm, ...], int] = {(Imm.F32,): 4, (Imm.F64,): 8, (Imm.LANE,): 1}
# Immediate kind -> (signed, bits) for the one-LEB fast path.
_LEB_KINDS: dict[Imm, tuple[bool, int]] = {
    Imm.LABEL: (False, 32),
    Imm.FUNC: (False, 32),
    Imm.LOCAL: (False, 32),
    Imm.GLOBAL: (False, 32),
    Imm.DATA: (False, 32),
    Imm.ELEM: (False, 32),
    Imm.TAG: (False, 32),
    Imm.I32: (True, 32),
    Imm.I64: (True, 64),
}


# Immediate kinds that are exactly one LEB (value irrelevant except a non-zero index).
_ONE_LEB = frozenset({*_LEB_KINDS, Imm.TYPE, Imm.TABLE, Imm.MEM})

# Control frames, as wasmparser's FrameKind: what may follow (else, catch, delegate) depends
# on the innermost open frame, and the body ends with the `end` that closes the function.
_F_FUNC, _F_BLOCK, _F_LOOP, _F_IF, _F_ELSE, _F_TRY, _F_CATCH, _F_CATCH_ALL, _F_TRY_TABLE = range(9)
_OPENS = {"block": _F_BLOCK, "loop": _F_LOOP, "if": _F_IF, "try": _F_TRY, "try_table": _F_TRY_TABLE}
# Operators whose legality depends on the open frames (decoded on the structured path).
_STRUCTURED = frozenset(
    {"else", "catch", "catch_all", "delegate", "try", "try_table", "br_table", "rethrow"}
)


def _shape(op: Op) -> int:
    if op.name == "end":
        return _END
    if op.name == "else":
        return _ELSE
    if op.name in _STRUCTURED or op.proposal is not Proposal.MVP:
        return _OTHER  # (beyond Wasm 1.0: recorded where first seen, see decode_bodies)
    if op.imms == (Imm.LABEL,):  # br, br_if: the depth must name an open frame
        return _LABEL
    if op.imms == (Imm.BLOCKTYPE,):
        return _BLOCK
    if op.imms == ():
        return _NONE
    if op.imms in _FIXED_WIDTH:
        return _FIXED
    if op.imms == (Imm.MEMARG,):
        return _MEMARG
    if len(op.imms) == 1 and op.imms[0] in _LEB_KINDS:
        return _LEB
    return _OTHER


def _leb5_last(byte: int, signed: bool, bits: int) -> bool:
    """Whether `byte` may be the 5th and last byte of a LEB of that kind (bits 28..34)."""
    if byte >= 0x80 or bits > 35:
        return byte < 0x80
    if not signed:  # the unused high bits must be zero
        return byte < 1 << (bits - 28)
    sign = 1 << (bits - 29)  # the unused high bits must copy the sign bit
    return byte < sign or byte >= 0x80 - sign


# opcodes interns immediate tuples, so the prefixed fast path can test identity.
_MEMARG_ONLY = next(op.imms for op in OPCODES.values() if op.imms == (Imm.MEMARG,))
_LANE_ONLY = next(op.imms for op in OPCODES.values() if op.imms == (Imm.LANE,))
SHAPES: list[int] = [_UNKNOWN] * 256
LEB_SIGNED: list[bool] = [False] * 256
LEB_BITS: list[int] = [32] * 256
# Whether a byte may end a 5-byte LEB of each single-byte opcode's immediate: lld pads the
# LEBs it relocates (call, global.get, i32.const addresses) to 5 bytes, so they are common.
LEB5_LAST: list[list[bool]] = [[False] * 256] * 256
SINGLE: list[Op | None] = [None] * 256
FIXED_WIDTH: list[int] = [0] * 256  # immediate bytes of a _FIXED opcode
OPENS: list[int] = [_F_BLOCK] * 256  # frame kind opened by a _BLOCK opcode
for (_prefix, _code), _op in OPCODES.items():
    if _prefix == 0:
        SHAPES[_code] = _shape(_op)
        SINGLE[_code] = _op
        OPENS[_code] = _OPENS.get(_op.name, _F_BLOCK)
        FIXED_WIDTH[_code] = _FIXED_WIDTH.get(_op.imms, 0)
        if SHAPES[_code] == _LEB:
            LEB_SIGNED[_code], LEB_BITS[_code] = _LEB_KINDS[_op.imms[0]]
            LEB5_LAST[_code] = [_leb5_last(b, *_LEB_KINDS[_op.imms[0]]) for b in range(256)]
for _prefix in PREFIXES:
    SHAPES[_prefix] = _PREFIX
# Single-byte operators beyond Wasm 1.0 -> name (all take the _OTHER path, which records them).
BEYOND_MVP: dict[int, str] = {
    code: op.name
    for (prefix, code), op in OPCODES.items()
    if not prefix and op.proposal is not Proposal.MVP
}
# Prefixed operators as lists indexed by sub-opcode (list indexing beats a tuple-keyed dict).
PREFIXED: list[list[Op | None]] = [[] for _ in range(256)]
for (_prefix, _code), _op in OPCODES.items():
    if _prefix:
        _row = PREFIXED[_prefix]
        _row.extend([None] * (_code + 1 - len(_row)))
        _row[_code] = _op
# Structured operators outside the fast shapes.
_TRY = 0x06
_TRY_TABLE = 0x1F
_DELEGATE = 0x18
_CATCH = 0x07
_CATCH_ALL = 0x19
_BR_TABLE = 0x0E
_RETHROW = 0x09
_CALL_INDIRECT = 0x11


@dataclass(frozen=True, slots=True)
class Site:
    """Where something first occurs: function index (imports counted) and file offset."""

    function: int
    offset: int
    what: str  # the operator, or the use ("call_indirect with an overlong table index")


@dataclass(frozen=True, slots=True)
class ImplicitUse:
    """A proposal needed by no operator of its own: how often, and the first time."""

    count: int
    first: Site


@dataclass(frozen=True, slots=True)
class CodeFacts:
    """What the code section contains, summed over all bodies."""

    function_count: int
    instruction_count: int  # every operator, including each body's final `end`
    op_counts: dict[int, int]  # opcodes.key_of(prefix, code) -> count
    requires: Proposal  # proposals implied by immediates and local types (not opcodes)
    first_ops: dict[int, Site]  # opcode key -> first occurrence (operators beyond Wasm 1.0)
    implicit: dict[Proposal, ImplicitUse]  # each single flag of `requires` -> its uses


class _Extra:
    """Requirements seen in immediates; mutable scratch for one decode run."""

    __slots__ = ("counts", "firsts", "function", "requires")

    def __init__(self) -> None:
        self.requires = NONE
        self.function = 0  # index of the function being decoded
        self.counts: dict[Proposal, int] = {}
        self.firsts: dict[Proposal, Site] = {}

    def need(self, flags: Proposal, offset: int, what: str) -> None:
        """Record one use needing `flags` (each single flag counted on its own)."""
        if not flags:
            return
        self.requires |= flags
        for flag in members(flags):
            self.counts[flag] = self.counts.get(flag, 0) + 1
            if flag not in self.firsts:
                self.firsts[flag] = Site(self.function, offset, what)

    def implicit(self) -> dict[Proposal, ImplicitUse]:
        return {flag: ImplicitUse(n, self.firsts[flag]) for flag, n in self.counts.items()}


def _leb(body: Sequence[int], pos: int, signed: bool, bits: int, base: int, what: str) -> int:
    """Skip one LEB starting at `pos` (range-checked); returns the next position."""
    try:
        if signed:
            _, nxt = leb_signed(body, pos, len(body), bits, what)
        else:
            _, nxt = leb_unsigned(body, pos, len(body), bits, what)
    except MalformedWasm as exc:
        raise MalformedWasm(exc.message, base + (exc.offset or 0)) from None
    return nxt


def _u32(body: Sequence[int], pos: int, base: int, what: str) -> tuple[int, int]:
    try:
        return leb_unsigned(body, pos, len(body), 32, what)
    except MalformedWasm as exc:
        raise MalformedWasm(exc.message, base + (exc.offset or 0)) from None


def _valtype(body: Sequence[int], pos: int, base: int, extra: _Extra, what: str) -> int:
    """One value type (a reference type may be several bytes); returns the next position."""
    try:
        needs, nxt = valtype_at(body, pos, len(body))
    except MalformedWasm as exc:
        raise MalformedWasm(exc.message, base + (exc.offset or 0)) from None
    extra.need(needs, base + pos, what)
    return nxt


def _blocktype(body: Sequence[int], pos: int, base: int, extra: _Extra) -> int:
    b = body[pos]
    if b == 0x40:
        return pos + 1
    if 0x40 < b < 0x80:  # a value type (negative s33; 0x63/0x64 start a reference type)
        return _valtype(body, pos, base, extra, "block type")
    try:
        index, nxt = leb_signed(body, pos, len(body), 33, "block type")
    except MalformedWasm as exc:
        raise MalformedWasm(exc.message, base + (exc.offset or 0)) from None
    if index < 0:
        raise MalformedWasm(f"invalid block type 0x{b:02x}", base + pos)
    extra.need(Proposal.MULTI_VALUE, base + pos, "block type given by a type index")
    return nxt


def _memarg(body: Sequence[int], pos: int, base: int, extra: _Extra) -> int:
    at = pos
    align, pos = _u32(body, pos, base, "memarg alignment")
    if align & 0x40:  # multi-memory: an explicit memory index follows
        index, pos = _u32(body, pos, base, "memarg memory index")
        if index:
            extra.need(Proposal.MULTI_MEMORY, base + at, f"memarg naming memory {index}")
        align &= ~0x40
    if align >= 0x40:
        raise MalformedWasm(f"memarg alignment flags 0x{align:x} out of range", base + pos)
    return _leb(body, pos, False, 64, base, "memarg offset")


def _index(
    body: Sequence[int], pos: int, op: Op, imm: Imm, base: int, extra: _Extra, op_at: int
) -> int:
    """A table or memory index. Wasm 1.0 wrote these as one 0x00 byte; wasmparser reads a
    LEB only with a proposal: call_indirect's table with call-indirect-overlong (a non-zero
    table also needs a second table: reference-types), memory.size/grow's with multi-memory.
    The other operators' indices are LEBs of their own proposal (a non-zero index still
    needs the second table or memory). A use is recorded at the operator (`op_at`)."""
    index, nxt = _u32(body, pos, base, f"{op.name} index")
    overlong = nxt - pos > 1
    if imm is Imm.MEM:
        if index or (overlong and op.prefix == 0):
            extra.need(
                Proposal.MULTI_MEMORY,
                op_at,
                f"{op.name} naming memory {index}"
                + (" (overlong index)" if overlong and not index else ""),
            )
    elif index:
        extra.need(Proposal.REFERENCE_TYPES, op_at, f"{op.name} naming table {index}")
    elif overlong and op.prefix == 0 and op.code == _CALL_INDIRECT:
        extra.need(
            Proposal.CALL_INDIRECT_OVERLONG, op_at, "call_indirect with an overlong table index"
        )
    return nxt


def _immediates(
    body: Sequence[int], pos: int, op: Op, base: int, extra: _Extra, depth: int, op_at: int
) -> int:
    """Decode the immediates of any operator but br_table and try_table (the generic, slower
    path; those two are decoded by `_structured`, which checks their labels). `depth` is the
    number of open frames, which a branch label must stay below; `op_at` the operator's offset."""
    for imm in op.imms:
        if imm is Imm.TABLE or imm is Imm.MEM:
            if body[pos]:
                pos = _index(body, pos, op, imm, base, extra, op_at)
            else:
                pos += 1
        elif imm is Imm.LABEL:
            pos = _label(body, pos, depth, base)
        elif imm in _ONE_LEB and body[pos] < 0x80:  # any one-byte LEB is in range
            pos += 1
        elif imm in _LEB_KINDS:
            signed, bits = _LEB_KINDS[imm]
            pos = _leb(body, pos, signed, bits, base, f"{op.name} immediate")
        elif imm is Imm.MEMARG:
            pos = _memarg(body, pos, base, extra)
        elif imm is Imm.BLOCKTYPE:
            pos = _blocktype(body, pos, base, extra)
        elif imm is Imm.TYPE or imm is Imm.U32:
            pos = _leb(body, pos, False, 32, base, f"{op.name} index")
        elif imm is Imm.F32:
            pos += 4
        elif imm is Imm.F64:
            pos += 8
        elif imm in (Imm.V128, Imm.SHUFFLE):
            if imm is Imm.SHUFFLE and any(lane >= 32 for lane in body[pos : pos + 16]):
                raise MalformedWasm("i8x16.shuffle lane index >= 32", base + pos)
            pos += 16
        elif imm is Imm.LANE:
            pos += 1
        elif imm is Imm.ZERO:
            if body[pos] != 0:
                raise MalformedWasm(f"{op.name}: reserved byte must be 0x00", base + pos)
            pos += 1
        elif imm is Imm.SELECT_T:
            n, pos = _u32(body, pos, base, "select type count")
            for _ in range(n):
                pos = _valtype(body, pos, base, extra, "select type")
        elif imm is Imm.HEAPTYPE:
            pos = _heaptype(body, pos, base)
        elif imm is Imm.BR_ON_CAST:
            if body[pos] > 3:
                raise MalformedWasm(f"{op.name}: invalid cast flags 0x{body[pos]:02x}", base + pos)
            pos = _label(body, pos + 1, depth, base)
            pos = _heaptype(body, _heaptype(body, pos, base), base)
        else:  # pragma: no cover - br_table and try_table are `_structured`'s (their labels
            raise AssertionError(imm)  # are checked against the open frames)
    return pos


def _heaptype(body: Sequence[int], pos: int, base: int) -> int:
    try:
        return heaptype_end(body, pos, len(body))
    except MalformedWasm as exc:
        raise MalformedWasm(exc.message, base + (exc.offset or 0)) from None


# Local types that need no proposal (the common case, checked without a call).
_MVP_LOCALS = frozenset({0x7F, 0x7E, 0x7D, 0x7C})


def _locals(body: Sequence[int], base: int, extra: _Extra) -> int:
    """Skip the local declarations; returns the position of the first operator."""
    groups = body[0]
    if groups < 0x80:  # one-byte counts of MVP types: no range or proposal to check
        pos = 1
        for _ in range(groups):
            if body[pos] >= 0x80 or body[pos + 1] not in _MVP_LOCALS:
                break
            pos += 2
        else:
            return pos
    groups, pos = _u32(body, 0, base, "local group count")
    total = 0
    for _ in range(groups):
        count, pos = _u32(body, pos, base, "local count")
        total += count
        if total > 50_000:  # wasmparser's limit; also bounds any later allocation
            raise MalformedWasm("too many locals", base + pos)
        pos = _valtype(body, pos, base, extra, "local type")
    return pos


def _label(body: Sequence[int], pos: int, depth: int, base: int) -> int:
    """Decode one branch depth; it must name an open frame (wasmparser: unknown label)."""
    at = pos
    label, pos = _u32(body, pos, base, "branch depth")
    if label >= depth:
        raise MalformedWasm(f"unknown label: branch depth {label} too large", base + at)
    return pos


def _structured(
    op: int, body: list[int], pos: int, frames: list[int], base: int, extra: _Extra
) -> int:
    """try, catch, catch_all, delegate, try_table, br_table and every other rare operator."""
    at = base + pos - 1
    if op == _BR_TABLE:
        n, pos = _u32(body, pos, base, "br_table label count")
        if n > len(body) - pos:
            raise MalformedWasm(f"br_table: count {n} exceeds the remaining bytes", at + 1)
        for _ in range(n + 1):
            pos = _label(body, pos, len(frames), base)
        return pos
    if op == _TRY:
        pos = _blocktype(body, pos, base, extra)
        frames.append(_F_TRY)
        return pos
    if op in (_CATCH, _CATCH_ALL):
        name = "catch" if op == _CATCH else "catch_all"
        if frames[-1] not in (_F_TRY, _F_CATCH):
            raise MalformedWasm(f"{name} found outside of a `try` block", at)
        frames[-1] = _F_CATCH if op == _CATCH else _F_CATCH_ALL
    elif op == _DELEGATE:
        if frames[-1] != _F_TRY:
            raise MalformedWasm("delegate found outside of a `try` block", at)
        frames.pop()
        if not frames:  # pragma: no cover - the function frame is never a try
            raise MalformedWasm("delegate closes the function body", at)
        return _label(body, pos, len(frames), base)
    elif op == _RETHROW:
        label_at = pos
        pos = _label(body, pos, len(frames), base)
        label, _ = _u32(body, label_at, base, "rethrow depth")
        if frames[-1 - label] not in (_F_CATCH, _F_CATCH_ALL):
            raise MalformedWasm("invalid rethrow label: target was not a `catch` block", at)
        return pos
    elif op == _TRY_TABLE:
        pos = _blocktype(body, pos, base, extra)
        n, pos = _u32(body, pos, base, "try_table catch count")
        for _ in range(n):
            kind = body[pos]
            pos += 1
            if kind > 3:
                raise MalformedWasm(f"invalid try_table catch kind {kind}", base + pos - 1)
            if kind < 2:  # catch / catch_ref carry a tag index
                pos = _leb(body, pos, False, 32, base, "catch tag")
            pos = _label(body, pos, len(frames), base)  # labels outside the try_table
        frames.append(_F_TRY_TABLE)
        return pos
    info = SINGLE[op]
    assert info is not None
    return _immediates(body, pos, info, base, extra, len(frames), at)


def decode_bodies(data: bytes, bodies: list[tuple[int, int]], first_function: int = 0) -> CodeFacts:
    """Decode every body data[start:end]; counts are per opcode key (see opcodes.key_of).
    `first_function` is the index of the first body's function (the imported functions
    come first), for the sites in `first_ops` and `implicit`.

    Each body is checked for structure as wasmparser's operator reader does: `else` only in
    an `if`, `catch`/`catch_all`/`delegate` only in a `try`, branch depths within the open
    frames, and the `end` closing the function frame as the body's last byte. Types are not
    checked (that is `wasm-tools validate`'s job).
    """
    counts = [0] * 256
    prefixed = [[0] * len(row) for row in PREFIXED]  # [prefix][sub-opcode] -> count
    prefixed_ops = PREFIXED
    extra = _Extra()
    shapes = SHAPES
    opens = OPENS
    leb_signed_of = LEB_SIGNED
    leb_bits_of = LEB_BITS
    leb5_last = LEB5_LAST
    fixed_width = FIXED_WIDTH
    first_ops: dict[int, Site] = {}
    for index, (start, end) in enumerate(bodies):
        extra.function = function = first_function + index
        body = list(data[start:end])  # list indexing is specialised by CPython 3.11; bytes is not
        n = len(body)
        pos = 0
        try:
            pos = _locals(body, start, extra)
            frames = [_F_FUNC]
            depth = 1  # len(frames), kept in a local: the branch check runs on every br/br_if
            while True:
                op = body[pos]
                pos += 1
                counts[op] += 1
                shape = shapes[op]
                if shape == 2:  # _LEB: one LEB immediate, usually one or two bytes
                    if body[pos] < 0x80:
                        pos += 1
                    elif body[pos + 1] < 0x80:  # up to 4 bytes (28 bits) is in range
                        pos += 2  # for every LEB kind: no range check needed
                    elif body[pos + 2] < 0x80:
                        pos += 3
                    elif body[pos + 3] < 0x80:
                        pos += 4
                    elif leb5_last[op][body[pos + 4]]:
                        pos += 5
                    else:
                        pos = _leb(
                            body, pos, leb_signed_of[op], leb_bits_of[op], start, "immediate"
                        )
                elif shape == 1:  # _NONE
                    pass
                elif shape == 3:  # _MEMARG: align (no memory index bit), offset of 1-4 bytes
                    if body[pos] >= 0x40:
                        pos = _memarg(body, pos, start, extra)
                    elif body[pos + 1] < 0x80:
                        pos += 2
                    elif body[pos + 2] < 0x80:
                        pos += 3
                    elif body[pos + 3] < 0x80:
                        pos += 4
                    elif body[pos + 4] < 0x80:
                        pos += 5
                    elif body[pos + 5] < 0x80:  # a padded 5-byte offset (any u64 fits)
                        pos += 6
                    else:
                        pos = _memarg(body, pos, start, extra)
                elif shape == 9:  # _LABEL: br, br_if
                    # a one-byte depth naming an open frame (below 0x80: a byte at or above
                    # it continues the LEB, and may still be below `depth` past 128 frames)
                    b = body[pos]
                    if b < depth and b < 0x80:
                        pos += 1
                    else:
                        pos = _label(body, pos, depth, start)
                elif shape == 5:  # _END closes the innermost frame
                    frames.pop()
                    depth -= 1
                    if not depth:
                        break
                elif shape == 4:  # _BLOCK
                    frames.append(opens[op])
                    depth += 1
                    b = body[pos]
                    if b == 0x40 or b == 0x7F:
                        pos += 1
                    else:
                        pos = _blocktype(body, pos, start, extra)
                elif shape == 10:  # _FIXED: f32.const, f64.const
                    pos += fixed_width[op]
                elif shape == 8:  # _ELSE: only in an `if` that has none yet
                    if frames[-1] != _F_IF:
                        raise MalformedWasm("else found outside of an `if` block", start + pos - 1)
                    frames[-1] = _F_ELSE
                elif shape == 6:  # _PREFIX
                    sub_at = pos
                    code = body[pos]
                    if code < 0x80:
                        pos += 1
                    elif body[pos + 1] < 0x80:
                        code = (code & 0x7F) | (body[pos + 1] << 7)
                        pos += 2
                    else:
                        code, pos = _u32(body, pos, start, "prefixed opcode")
                    counts[op] -= 1  # counted under its full key instead
                    row = prefixed_ops[op]
                    info = row[code] if code < len(row) else None
                    if info is None:
                        raise MalformedWasm(
                            f"unknown opcode 0x{op:02x} 0x{code:x}", start + sub_at - 1
                        )
                    seen = prefixed[op]
                    if not seen[code]:
                        first_ops[(op << 16) | code] = Site(function, start + sub_at - 1, info.name)
                    seen[code] += 1
                    imms = info.imms
                    if not imms:
                        pass
                    elif imms is _LANE_ONLY:
                        pos += 1
                    elif imms is _MEMARG_ONLY and body[pos] < 0x40 and body[pos + 1] < 0x80:
                        pos += 2
                    elif imms is _MEMARG_ONLY and body[pos] < 0x40:  # longer offsets
                        pos = _leb(body, pos + 1, False, 64, start, "memarg offset")
                    else:
                        op_at = start + sub_at - 1
                        pos = _immediates(body, pos, info, start, extra, depth, op_at)
                elif shape == 7:  # _OTHER: rare operators, and all beyond Wasm 1.0
                    if counts[op] == 1 and op in BEYOND_MVP:
                        first_ops[op] = Site(function, start + pos - 1, BEYOND_MVP[op])
                    pos = _structured(op, body, pos, frames, start, extra)
                    depth = len(frames)  # try_table pushes, delegate pops
                else:
                    raise MalformedWasm(f"unknown opcode 0x{op:02x}", start + pos - 1)
        except IndexError:
            raise MalformedWasm("function body ended prematurely", start + n) from None
        if pos > n:
            raise MalformedWasm("function body ended prematurely", start + n)
        if pos != n:
            raise MalformedWasm("operators remaining after the end of the function", start + pos)
    op_counts = {code: c for code, c in enumerate(counts) if c}
    for prefix, by_code in enumerate(prefixed):
        op_counts.update({(prefix << 16) | code: c for code, c in enumerate(by_code) if c})
    total = sum(op_counts.values())  # prefix bytes were moved to their full keys above
    return CodeFacts(len(bodies), total, op_counts, extra.requires, first_ops, extra.implicit())
