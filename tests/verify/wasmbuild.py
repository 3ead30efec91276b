"""A tiny WebAssembly module builder for tests: emits bytes directly, one property at a time.

Every helper returns bytes; `module(...)` assembles sections in the required order. The
default module is a valid scalar-lane runtime shape: no imports, an exported memory and
every export the lane policy (verify/policy/wasm.json) requires pointing at a trivial function.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from verify.policy import load_wasm_policies
from verify.wasm.features import Proposal
from verify.wasm.opcodes import OPCODES

I32, I64, F32, F64, V128 = 0x7F, 0x7E, 0x7D, 0x7C, 0x7B

POLICIES = load_wasm_policies()
THREADS_LANE = "simd128-threads-wasm32"
RELAXED_LANE = "relaxed-simd128-wasm32"
RELAXED_THREADS_LANE = "relaxed-simd128-threads-wasm32"
# The function exports every lane must have (the policy's common list; the scalar lane adds none).
REQUIRED_EXPORTS = list(POLICIES["scalar-wasm32"].required_exports)


def uleb(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def sleb(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        done = (value == 0 and not byte & 0x40) or (value == -1 and byte & 0x40)
        out.append(byte if done else byte | 0x80)
        if done:
            return bytes(out)


def name(text: str) -> bytes:
    raw = text.encode()
    return uleb(len(raw)) + raw


def vec(items: Sequence[bytes]) -> bytes:
    return uleb(len(items)) + b"".join(items)


def section(sid: int, payload: bytes) -> bytes:
    return bytes([sid]) + uleb(len(payload)) + payload


def custom(section_name: str, payload: bytes) -> bytes:
    return section(0, name(section_name) + payload)


def limits(minimum: int, maximum: int | None = None, *, shared: bool = False) -> bytes:
    flags = (1 if maximum is not None else 0) | (2 if shared else 0)
    out = bytes([flags]) + uleb(minimum)
    return out + (uleb(maximum) if maximum is not None else b"")


def body(code: bytes, local_types: Sequence[int] = ()) -> bytes:
    """A function body: locals (one group per type), the code, and the final `end`."""
    groups = vec([uleb(1) + bytes([t]) for t in local_types])
    inner = groups + code + b"\x0b"
    return uleb(len(inner)) + inner


def target_features(*entries: tuple[str, str]) -> bytes:
    return custom("target_features", vec([prefix.encode() + name(n) for prefix, n in entries]))


@dataclass
class ModuleSpec:
    """What to put in the module; each field maps to one section."""

    code: list[bytes] = field(default_factory=lambda: [b""])  # bodies' operators (type 0)
    local_types: list[Sequence[int]] = field(default_factory=list)
    exports: list[str] = field(default_factory=lambda: list(REQUIRED_EXPORTS))
    globals: list[str] = field(default_factory=list)  # exported immutable i32 globals
    export_memory: bool = True
    memory: bytes | None = field(default_factory=lambda: limits(17))
    imports: list[bytes] = field(default_factory=list)  # raw import entries
    customs: list[bytes] = field(default_factory=list)  # raw custom sections (at the end)
    data: list[bytes] = field(default_factory=list)  # raw data segments
    data_count: bool = False
    raw_bodies: list[bytes] | None = None  # whole bodies (size-prefixed), replacing code
    table: bytes | None = None  # one table entry (reference type + limits)
    # a start function that writes a mutable global of its own, as wasm-ld's
    # __wasm_init_memory sets the TLS base of a shared-memory module that holds thread-locals
    start_sets_global: bool = False


def module(spec: ModuleSpec | None = None) -> bytes:
    spec = spec or ModuleSpec()
    out = bytearray(b"\0asm\x01\x00\x00\x00")
    out += section(1, vec([b"\x60\x00\x00"]))  # type 0: [] -> []
    if spec.imports:
        out += section(2, vec(spec.imports))
    code = [
        *spec.code,
        *([b"\x41\x80\x08\x24" + uleb(len(spec.globals))] if spec.start_sets_global else []),
    ]
    out += section(3, vec([uleb(0)] * len(code)))
    if spec.table is not None:
        out += section(4, vec([spec.table]))
    if spec.memory is not None:
        out += section(5, vec([spec.memory]))
    globals_ = [bytes([I32, 0x00, 0x41, 0x00, 0x0B])] * len(spec.globals)
    if spec.start_sets_global:  # the TLS base: mutable, not exported
        globals_.append(bytes([I32, 0x01, 0x41, 0x00, 0x0B]))
    if globals_:
        out += section(6, vec(globals_))
    exports = [name(e) + b"\x00" + uleb(0) for e in spec.exports]
    exports += [name(g) + b"\x03" + uleb(i) for i, g in enumerate(spec.globals)]
    if spec.export_memory:
        exports.append(name("memory") + b"\x02" + uleb(0))
    out += section(7, vec(exports))
    if spec.start_sets_global:
        out += section(8, uleb(len(code) - 1))
    if spec.data_count:
        out += section(12, uleb(len(spec.data)))
    locals_ = spec.local_types + [()] * (len(code) - len(spec.local_types))
    bodies = spec.raw_bodies or [body(c, lt) for c, lt in zip(code, locals_, strict=True)]
    out += section(10, vec(bodies))
    if spec.data:
        out += section(11, vec(spec.data))
    for raw in spec.customs:
        out += raw
    return bytes(out)


def import_memory(minimum: int, maximum: int | None, *, shared: bool) -> bytes:
    return name("env") + name("memory") + b"\x02" + limits(minimum, maximum, shared=shared)


def active_data(payload: bytes, offset: int = 1024) -> bytes:
    return b"\x00\x41" + sleb(offset) + b"\x0b" + uleb(len(payload)) + payload


# Operator snippets, each a balanced, stack-neutral sequence.
V128_OP = b"\xfd\x0c" + bytes(16) + b"\x1a"  # v128.const 0; drop
RELAXED_SIMD_OP = (  # i8x16.relaxed_swizzle of two zero vectors, dropped
    b"\xfd\x0c" + bytes(16) + b"\xfd\x0c" + bytes(16) + b"\xfd\x80\x02" + b"\x1a"
)
ATOMIC_OP = b"\x41\x00\xfe\x10\x02\x00\x1a"  # i32.atomic.load (align 2) of address 0; drop
ATOMIC_WAIT_NOTIFY = (
    b"\x41\x00\x41\x00\x42\x00\xfe\x01\x02\x00\x1a"  # memory.atomic.wait32; drop
    b"\x41\x00\x41\x01\xfe\x00\x02\x00\x1a"  # memory.atomic.notify; drop
)
MEMORY_GROW = b"\x41\x01\x40\x00\x1a"  # memory.grow 1; drop
# every relaxed-SIMD instruction (verify/wasm/opcodes.py) -> its operand count (all v128)
_TERNARY = ("madd", "laneselect", "_add_s")
RELAXED_ARITY = {
    op.name: 1 if "trunc" in op.name else 3 if op.name.endswith(_TERNARY) else 2
    for op in OPCODES.values()
    if op.proposal is Proposal.RELAXED_SIMD
}
RELAXED_DOT = "i32x4.relaxed_dot_i8x16_i7x16_add_s"  # the one the relaxed lanes admit


def relaxed_op(instruction: str) -> bytes:
    """`instruction` on zero vectors, its result dropped."""
    code = next(op.code for op in OPCODES.values() if op.name == instruction)
    consts = (b"\xfd\x0c" + bytes(16)) * RELAXED_ARITY[instruction]
    return consts + b"\xfd" + uleb(code) + b"\x1a"


# ---- one baseline module per wasm lane: each passes every check of its lane ----
def scalar_spec() -> ModuleSpec:
    return ModuleSpec()


def simd_spec() -> ModuleSpec:
    return ModuleSpec(code=[V128_OP], customs=[target_features(("+", "simd128"))])


def threads_spec(*, shared: bool = True, initial: int = 17, maximum: int = 65536) -> ModuleSpec:
    """The threads lane's module: a shared memory imported with a small minimum and the wasm32
    address space as its maximum (the host creates it at the plan's size)."""
    return ModuleSpec(
        code=[V128_OP + ATOMIC_WAIT_NOTIFY],
        exports=list(POLICIES[THREADS_LANE].required_exports),
        globals=list(POLICIES[THREADS_LANE].required_globals),
        export_memory=False,
        memory=None,
        imports=[import_memory(initial, maximum, shared=shared)],
        customs=[target_features(("+", "simd128"), ("+", "atomics"), ("+", "bulk-memory"))],
    )


def relaxed_spec(*extra: str) -> ModuleSpec:
    """The relaxed lane's baseline: its admitted dot (and `extra` relaxed instructions)."""
    code = V128_OP + b"".join(relaxed_op(i) for i in (RELAXED_DOT, *extra))
    return ModuleSpec(
        code=[code], customs=[target_features(("+", "simd128"), ("+", "relaxed-simd"))]
    )


def relaxed_threads_spec(*extra: str) -> ModuleSpec:
    base = threads_spec()
    code = base.code[0] + b"".join(relaxed_op(i) for i in (RELAXED_DOT, *extra))
    features = [("+", "simd128"), ("+", "relaxed-simd"), ("+", "atomics"), ("+", "bulk-memory")]
    return ModuleSpec(
        code=[code],
        exports=list(POLICIES[RELAXED_THREADS_LANE].required_exports),
        globals=list(POLICIES[RELAXED_THREADS_LANE].required_globals),
        export_memory=False,
        memory=None,
        imports=base.imports,
        customs=[target_features(*features)],
    )


BASELINES = {
    "scalar-wasm32": scalar_spec,
    "simd128-wasm32": simd_spec,
    "simd128-threads-wasm32": threads_spec,
    RELAXED_LANE: relaxed_spec,
    RELAXED_THREADS_LANE: relaxed_threads_spec,
}
