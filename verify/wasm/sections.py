"""The module parser: header, then every section in order, each consumed exactly.

`parse_module(data)` returns a frozen `WasmModule`. Structural requirements (value types,
memory flags, mutable global imports, segment modes, the data count section ...) are
recorded with the reason, so an inventory can show why a proposal is needed.
"""

from __future__ import annotations

from dataclasses import dataclass

from verify.wasm.code import CodeFacts, decode_bodies
from verify.wasm.custom import (
    NameSection,
    TargetFeature,
    parse_name_section,
    parse_producers,
    parse_target_features,
)
from verify.wasm.errors import MalformedWasm
from verify.wasm.features import Proposal, members
from verify.wasm.reader import Reader
from verify.wasm.types import FUNCREF, REF, REF_NULL, REFTYPES, VALTYPES, heaptype_end, valtype_at

MAGIC = b"\0asm"
# Section id -> name, in id order, seven to a row (fmt: skip keeps the table a table).
SECTION_NAMES = {
    0: "custom", 1: "type", 2: "import", 3: "function", 4: "table", 5: "memory", 6: "global",
    7: "export", 8: "start", 9: "element", 10: "code", 11: "data", 12: "datacount", 13: "tag",
}  # fmt: skip
# Required order of the non-custom sections (the tag section sits between memory and global).
SECTION_ORDER = {
    1: 1,
    2: 2,
    3: 3,
    4: 4,
    5: 5,
    13: 6,
    6: 7,
    7: 8,
    8: 9,
    9: 10,
    12: 11,
    10: 12,
    11: 13,
}
EXTERNAL_KINDS = {0: "func", 1: "table", 2: "memory", 3: "global", 4: "tag"}


@dataclass(frozen=True, slots=True)
class Limits:
    minimum: int
    maximum: int | None
    shared: bool = False
    is64: bool = False


@dataclass(frozen=True, slots=True)
class FuncType:
    params: tuple[int, ...]
    results: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Import:
    module: str
    name: str
    kind: str  # one of EXTERNAL_KINDS' values
    type_index: int | None = None  # func, tag
    limits: Limits | None = None  # table, memory
    valtype: int | None = None  # global (value type), table (element reference type)
    mutable: bool = False  # global


@dataclass(frozen=True, slots=True)
class Export:
    name: str
    kind: str
    index: int


@dataclass(frozen=True, slots=True)
class Section:
    id: int
    name: str  # the standard name, or the custom section's own name
    offset: int  # offset of the payload
    size: int


@dataclass(frozen=True, slots=True)
class Requirement:
    proposal: Proposal
    reason: str


@dataclass(frozen=True, slots=True)
class WasmModule:
    size: int
    sections: tuple[Section, ...]
    types: tuple[FuncType, ...]
    imports: tuple[Import, ...]
    function_types: tuple[int, ...]  # type index of each defined function
    tables: tuple[tuple[int, Limits], ...]  # defined tables: (reference type, limits)
    memories: tuple[Limits, ...]  # defined memories
    globals: tuple[tuple[int, bool], ...]  # defined globals: (value type, mutable)
    exports: tuple[Export, ...]
    start: int | None
    element_segments: int
    data_segments: int
    data_count: int | None
    tags: int
    code: CodeFacts
    bodies: tuple[tuple[int, int], ...]  # each defined function's body: (start, end) offsets
    custom: tuple[Section, ...]
    target_features: tuple[TargetFeature, ...] | None  # None: the section is absent
    producers: tuple[tuple[str, str, str], ...]
    names: NameSection | None
    structural: tuple[Requirement, ...]  # requirements from everything but operators


class _State:
    """Mutable accumulators while parsing; frozen into WasmModule at the end."""

    def __init__(self) -> None:
        self.sections: list[Section] = []
        self.types: list[FuncType] = []
        self.imports: list[Import] = []
        self.function_types: list[int] = []
        self.tables: list[tuple[int, Limits]] = []
        self.memories: list[Limits] = []
        self.globals: list[tuple[int, bool]] = []
        self.exports: list[Export] = []
        self.start: int | None = None
        self.elements = 0
        self.datas = 0
        self.data_count: int | None = None
        self.tags = 0
        self.bodies: list[tuple[int, int]] = []
        self.code_seen = False
        self.custom: list[Section] = []
        self.target_features: tuple[TargetFeature, ...] | None = None
        self.producers: tuple[tuple[str, str, str], ...] = ()
        self.names: NameSection | None = None
        self.requirements: dict[tuple[Proposal, str], None] = {}

    def need(self, proposals: Proposal, reason: str) -> None:
        for proposal in members(proposals):  # exnref: exceptions and reference-types
            self.requirements[(proposal, reason)] = None


def _valtype(r: Reader, st: _State, reason: str) -> int:
    """A value type (a reference type may be several bytes); returns its first byte."""
    at = r.pos
    if at >= r.end:
        raise r.error("unexpected end of data reading value type")
    needs, r.pos = valtype_at(r.data, at, r.end)
    st.need(needs, f"{reason} uses {_type_name(r.data, at)}")
    return r.data[at]


def _type_name(data: bytes, at: int) -> str:
    first = data[at]
    if first in VALTYPES:
        return VALTYPES[first][0]
    return "a typed reference" if first in (REF, REF_NULL) else f"type 0x{first:02x}"


def _reftype(r: Reader, st: _State, reason: str) -> int:
    """A table/element reference type: funcref is Wasm 1.0 here, others need a proposal."""
    at = r.pos
    byte = r.byte("reference type")
    if byte not in REFTYPES:
        raise r.error(f"expected a reference type, found 0x{byte:02x}", at)
    r.pos = at
    if byte == FUNCREF:
        r.pos += 1
    else:
        _valtype(r, st, reason)
    return byte


def _limits(r: Reader, st: _State, what: str, *, memory: bool) -> Limits:
    at = r.pos
    flags = r.byte(f"{what} limits flags")
    known = 0x07 if memory else 0x05  # bit 0: has max, bit 1: shared, bit 2: 64-bit
    if flags & ~known:
        raise r.error(f"{what}: unknown limits flags 0x{flags:02x}", at)
    is64 = bool(flags & 0x04)
    read = r.u64 if is64 else r.u32
    minimum = read(f"{what} minimum")
    maximum = read(f"{what} maximum") if flags & 0x01 else None
    if maximum is not None and minimum > maximum:
        raise r.error(f"{what}: size minimum must not be greater than maximum", at)
    if flags & 0x02 and maximum is None:
        raise r.error(f"{what}: shared memory must have maximum size", at)
    limits = Limits(minimum, maximum, bool(flags & 0x02), is64)
    if limits.shared:
        st.need(Proposal.THREADS, f"shared {what}")
    if is64:
        st.need(Proposal.MEMORY64, f"64-bit {what}")
    return limits


def _const_expr(r: Reader, st: _State, what: str) -> None:
    """A constant expression up to its `end`; extended-const arithmetic is a requirement."""
    while True:
        at = r.pos
        op = r.byte(f"{what} operator")
        if op == 0x0B:
            return
        if op == 0x41:
            r.s32(what)
        elif op == 0x42:
            r.s64(what)
        elif op == 0x43:
            r.skip(4, what)
        elif op == 0x44:
            r.skip(8, what)
        elif op == 0x23:
            r.u32(f"{what} global index")
        elif op == 0xD0:
            r.pos = heaptype_end(r.data, r.pos, r.end)
            st.need(Proposal.REFERENCE_TYPES, f"ref.null in {what}")
        elif op == 0xD2:
            r.u32(f"{what} function index")
            st.need(Proposal.REFERENCE_TYPES, f"ref.func in {what}")
        elif op in (0x6A, 0x6B, 0x6C, 0x7C, 0x7D, 0x7E):
            st.need(Proposal.EXTENDED_CONST, f"arithmetic in {what}")
        elif op == 0xFD and r.u32(f"{what} simd opcode") == 0x0C:
            r.skip(16, what)
            st.need(Proposal.SIMD, f"v128.const in {what}")
        else:
            raise r.error(
                f"{what}: operator 0x{op:02x} is not allowed in a constant expression", at
            )


def _type_section(r: Reader, st: _State) -> None:
    for i in range(r.count("types")):
        at = r.pos
        form = r.byte("type form")
        if form != 0x60:
            raise r.error(f"type {i}: unsupported type form 0x{form:02x} (only func types)", at)
        params = tuple(_valtype(r, st, f"type {i}") for _ in range(r.count("params")))
        results = tuple(_valtype(r, st, f"type {i}") for _ in range(r.count("results")))
        if len(results) > 1:
            st.need(Proposal.MULTI_VALUE, f"type {i} has {len(results)} results")
        st.types.append(FuncType(params, results))


def _import_section(r: Reader, st: _State) -> None:
    for _ in range(r.count("imports", 3)):
        module = r.name("import module")
        name = r.name("import name")
        at = r.pos
        kind = r.byte("import kind")
        where = f"import {module}.{name}"
        if kind == 0:
            st.imports.append(Import(module, name, "func", type_index=r.u32("type index")))
        elif kind == 1:
            ref = _reftype(r, st, where)
            st.imports.append(
                Import(
                    module, name, "table", valtype=ref, limits=_limits(r, st, where, memory=False)
                )
            )
        elif kind == 2:
            limits = _limits(r, st, where, memory=True)
            st.imports.append(Import(module, name, "memory", limits=limits))
        elif kind == 3:
            vt = _valtype(r, st, where)
            mutable = _mutability(r)
            if mutable:
                st.need(Proposal.MUTABLE_GLOBAL, f"mutable global {where}")
            st.imports.append(Import(module, name, "global", valtype=vt, mutable=mutable))
        elif kind == 4:
            attr_at = r.pos
            if r.byte("tag attribute") != 0:
                raise r.error("tag attribute must be 0", attr_at)
            st.need(Proposal.EXCEPTIONS, f"tag {where}")
            st.imports.append(Import(module, name, "tag", type_index=r.u32("tag type")))
        else:
            raise r.error(f"{where}: invalid import kind 0x{kind:02x}", at)


def _mutability(r: Reader) -> bool:
    at = r.pos
    flag = r.byte("global mutability")
    if flag > 1:
        raise r.error(f"invalid global mutability flag 0x{flag:02x}", at)
    return flag == 1


def _table_section(r: Reader, st: _State) -> None:
    for i in range(r.count("tables", 2)):
        ref = _reftype(r, st, f"table {i}")
        st.tables.append((ref, _limits(r, st, f"table {i}", memory=False)))


def _memory_section(r: Reader, st: _State) -> None:
    for i in range(r.count("memories", 2)):
        st.memories.append(_limits(r, st, f"memory {i}", memory=True))


def _global_section(r: Reader, st: _State) -> None:
    for i in range(r.count("globals", 3)):
        vt = _valtype(r, st, f"global {i}")
        mutable = _mutability(r)
        _const_expr(r, st, f"global {i} initializer")
        st.globals.append((vt, mutable))


def _export_section(r: Reader, st: _State) -> None:
    seen: set[str] = set()
    imported_globals = [imp for imp in st.imports if imp.kind == "global"]
    for _ in range(r.count("exports", 3)):
        at = r.pos
        name = r.name("export name")
        if name in seen:
            raise r.error(f"export name {name!r} is duplicated", at)
        seen.add(name)
        kind_at = r.pos
        kind = r.byte("export kind")
        if kind not in EXTERNAL_KINDS:
            raise r.error(f"export {name!r}: invalid kind 0x{kind:02x}", kind_at)
        index = r.u32("export index")
        if kind == 3:
            n = len(imported_globals)
            mutable = (
                imported_globals[index].mutable
                if index < n
                else index - n < len(st.globals) and st.globals[index - n][1]
            )
            if mutable:
                st.need(Proposal.MUTABLE_GLOBAL, f"mutable global export {name!r}")
        st.exports.append(Export(name, EXTERNAL_KINDS[kind], index))


def _element_section(r: Reader, st: _State) -> None:
    for i in range(r.count("element segments")):
        at = r.pos
        flags = r.u32("element segment flags")
        what = f"element segment {i}"
        if flags > 7:
            raise r.error(f"{what}: invalid flags {flags}", at)
        if flags & 0x01:  # passive (1, 5) or declarative (3, 7)
            st.need(Proposal.BULK_MEMORY, f"{what} is passive or declarative")
        if flags & 0x02 and not flags & 0x01 and r.u32(f"{what} table index"):
            st.need(Proposal.REFERENCE_TYPES, f"{what} targets a table other than 0")
        if not flags & 0x01:
            _const_expr(r, st, f"{what} offset")
        if flags & 0x04:  # element expressions
            if flags & 0x03:
                _reftype(r, st, what)
            st.need(Proposal.REFERENCE_TYPES, f"{what} uses element expressions")
            for _ in range(r.count(f"{what} items")):
                _const_expr(r, st, f"{what} item")
        else:
            if flags & 0x03:
                kind_at = r.pos
                if r.byte(f"{what} element kind") != 0:
                    raise r.error(f"{what}: element kind must be 0x00 (funcref)", kind_at)
            for _ in range(r.count(f"{what} items")):
                r.u32(f"{what} function index")
        st.elements += 1


def _data_section(r: Reader, st: _State) -> None:
    n = r.count("data segments")
    if st.data_count is not None and n != st.data_count:
        raise r.error(f"data section has {n} segments, the data count section says {st.data_count}")
    for i in range(n):
        at = r.pos
        flags = r.u32("data segment flags")
        what = f"data segment {i}"
        if flags > 2:
            raise r.error(f"{what}: invalid flags {flags}", at)
        if flags == 1:
            st.need(Proposal.BULK_MEMORY, f"{what} is passive")
        else:
            if flags == 2 and r.u32(f"{what} memory index"):
                st.need(Proposal.MULTI_MEMORY, f"{what} targets a memory other than 0")
            _const_expr(r, st, f"{what} offset")
        r.skip(r.u32(f"{what} size"), f"{what} bytes")
        st.datas += 1


def _code_section(r: Reader, st: _State) -> None:
    n = r.count("function bodies")
    if n != len(st.function_types):
        raise r.error(
            f"code section has {n} bodies, the function section declares {len(st.function_types)}"
        )
    for i in range(n):
        size = r.u32(f"function body {i} size")
        if size == 0:
            raise r.error(f"function body {i} is empty")
        body = r.sub(size, f"function body {i}")
        st.bodies.append((body.pos, body.end))
    st.code_seen = True


def _custom_section(r: Reader, st: _State, offset: int, size: int) -> None:
    name = r.name("custom section name")
    st.custom.append(Section(0, name, offset, size))
    if name == "target_features":
        if st.target_features is not None:
            raise r.error("a second target_features section", offset)
        st.target_features = parse_target_features(r)
    elif name == "producers":
        st.producers = parse_producers(r)
    elif name == "name":
        st.names = parse_name_section(r)
    else:
        r.pos = r.end  # recorded, not interpreted (.debug_*, linking, anything else)


def parse_module(data: bytes) -> WasmModule:
    """Parse a whole core module; any malformation raises MalformedWasm with its offset."""
    r = Reader(data)
    if data[:4] != MAGIC:
        raise MalformedWasm("not a WebAssembly module (bad magic)", 0)
    r.pos = 4
    version = r.take(4, "version")
    if version != b"\x01\x00\x00\x00":
        kind = "a component, not a core module" if version[2:] == b"\x01\x00" else "unsupported"
        raise MalformedWasm(f"{kind}: version bytes {version.hex()}", 4)
    st = _State()
    last_rank = 0
    while not r.at_end():
        at = r.pos
        sid = r.byte("section id")
        if sid not in SECTION_NAMES:
            raise r.error(f"unknown section id {sid}", at)
        size = r.u32(f"{SECTION_NAMES[sid]} section size")
        body = r.sub(size, f"{SECTION_NAMES[sid]} section")
        if sid != 0:
            rank = SECTION_ORDER[sid]
            if rank <= last_rank:
                raise r.error(f"{SECTION_NAMES[sid]} section out of order or repeated", at)
            last_rank = rank
            st.sections.append(Section(sid, SECTION_NAMES[sid], body.pos, size))
        if sid == 0:
            _custom_section(body, st, body.pos, size)
        elif sid == 1:
            _type_section(body, st)
        elif sid == 2:
            _import_section(body, st)
        elif sid == 3:
            n = body.count("functions")
            st.function_types = [body.u32("function type index") for _ in range(n)]
        elif sid == 4:
            _table_section(body, st)
        elif sid == 5:
            _memory_section(body, st)
        elif sid == 6:
            _global_section(body, st)
        elif sid == 7:
            _export_section(body, st)
        elif sid == 8:
            st.start = body.u32("start function index")
        elif sid == 9:
            _element_section(body, st)
        elif sid == 10:
            _code_section(body, st)
        elif sid == 11:
            _data_section(body, st)
        elif sid == 12:
            st.data_count = body.u32("data count")
            st.need(Proposal.BULK_MEMORY, "data count section")
        elif sid == 13:
            for _ in range(body.count("tags", 2)):
                attr_at = body.pos
                if body.byte("tag attribute") != 0:
                    raise body.error("tag attribute must be 0", attr_at)
                body.u32("tag type index")
                st.tags += 1
            st.need(Proposal.EXCEPTIONS, "tag section")
        body.expect_end(f"{SECTION_NAMES[sid]} section")
    return _finish(data, st)


def _finish(data: bytes, st: _State) -> WasmModule:
    if st.function_types and not st.code_seen:
        raise MalformedWasm(
            f"{len(st.function_types)} functions declared but no code section", len(data)
        )
    if st.data_count is not None and st.datas == 0 and st.data_count != 0:
        raise MalformedWasm(
            f"data count section says {st.data_count} but no data section", len(data)
        )
    memories = [imp for imp in st.imports if imp.kind == "memory"] + st.memories
    if len(memories) > 1:
        st.need(Proposal.MULTI_MEMORY, f"{len(memories)} memories")
    tables = [imp for imp in st.imports if imp.kind == "table"] + st.tables
    if len(tables) > 1:
        st.need(Proposal.REFERENCE_TYPES, f"{len(tables)} tables")
    imported_functions = sum(imp.kind == "func" for imp in st.imports)
    code = decode_bodies(data, st.bodies, imported_functions)
    structural = tuple(Requirement(p, why) for p, why in st.requirements)
    return WasmModule(
        size=len(data),
        sections=tuple(st.sections),
        types=tuple(st.types),
        imports=tuple(st.imports),
        function_types=tuple(st.function_types),
        tables=tuple(st.tables),
        memories=tuple(st.memories),
        globals=tuple(st.globals),
        exports=tuple(st.exports),
        start=st.start,
        element_segments=st.elements,
        data_segments=st.datas,
        data_count=st.data_count,
        tags=st.tags,
        code=code,
        bodies=tuple(st.bodies),
        custom=tuple(st.custom),
        target_features=st.target_features,
        producers=st.producers,
        names=st.names,
        structural=structural,
    )
