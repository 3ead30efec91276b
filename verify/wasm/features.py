"""WebAssembly proposals as bit flags, and the names other tools use for them.

Like wasmparser's `features.rs`: one flag per proposal, named sets built from flags.
`Proposal.MVP` stands for Wasm 1.0 without mutable-global imports/exports (which
wasm-tools' `mvp` set also leaves out). Two flags are parts of a larger proposal, as in
wasmparser and LLVM: bulk-memory-opt (memory.copy, memory.fill) is part of bulk-memory and
call-indirect-overlong (a LEB table index in call_indirect) part of reference-types;
`IMPLIES` records that, `closure` and `minimal` use it.
"""

from __future__ import annotations

import enum


class Proposal(enum.Flag):
    MVP = enum.auto()
    MUTABLE_GLOBAL = enum.auto()
    SIGN_EXTENSION = enum.auto()
    SATURATING_FLOAT_TO_INT = enum.auto()
    BULK_MEMORY = enum.auto()
    BULK_MEMORY_OPT = enum.auto()  # memory.copy and memory.fill only (lime1)
    REFERENCE_TYPES = enum.auto()
    CALL_INDIRECT_OVERLONG = enum.auto()  # call_indirect's table index as any LEB (lime1)
    MULTI_VALUE = enum.auto()
    SIMD = enum.auto()
    RELAXED_SIMD = enum.auto()
    THREADS = enum.auto()
    TAIL_CALL = enum.auto()
    EXCEPTIONS = enum.auto()
    LEGACY_EXCEPTIONS = enum.auto()
    MEMORY64 = enum.auto()
    MULTI_MEMORY = enum.auto()
    EXTENDED_CONST = enum.auto()
    FUNCTION_REFERENCES = enum.auto()  # typed function references (call_ref, return_call_ref)
    GC = enum.auto()
    WIDE_ARITHMETIC = enum.auto()


# Proposal -> (our policy name, wasm-tools `--features` name, LLVM target_features name).
# One row per proposal; everything that converts names reads this table. The LLVM names are
# LLVM 22's WebAssembly.td SubtargetFeatures (typed function references and legacy
# exceptions have none of their own: LLVM's reference-types and exception-handling).
PROPOSAL_NAMES: dict[Proposal, tuple[str, str, str]] = {
    Proposal.MVP: ("mvp", "mvp", ""),
    Proposal.MUTABLE_GLOBAL: ("mutable-global", "mutable-global", "mutable-globals"),
    Proposal.SIGN_EXTENSION: ("sign-extension", "sign-extension", "sign-ext"),
    Proposal.SATURATING_FLOAT_TO_INT: (
        "saturating-float-to-int",
        "saturating-float-to-int",
        "nontrapping-fptoint",
    ),
    Proposal.BULK_MEMORY: ("bulk-memory", "bulk-memory", "bulk-memory"),
    Proposal.BULK_MEMORY_OPT: ("bulk-memory-opt", "bulk-memory-opt", "bulk-memory-opt"),
    Proposal.REFERENCE_TYPES: ("reference-types", "reference-types", "reference-types"),
    Proposal.CALL_INDIRECT_OVERLONG: (
        "call-indirect-overlong",
        "call-indirect-overlong",
        "call-indirect-overlong",
    ),
    Proposal.MULTI_VALUE: ("multi-value", "multi-value", "multivalue"),
    Proposal.SIMD: ("simd", "simd", "simd128"),
    Proposal.RELAXED_SIMD: ("relaxed-simd", "relaxed-simd", "relaxed-simd"),
    Proposal.THREADS: ("threads", "threads", "atomics"),
    Proposal.TAIL_CALL: ("tail-call", "tail-call", "tail-call"),
    Proposal.EXCEPTIONS: ("exceptions", "exceptions", "exception-handling"),
    Proposal.LEGACY_EXCEPTIONS: ("legacy-exceptions", "legacy-exceptions", ""),
    Proposal.MEMORY64: ("memory64", "memory64", "memory64"),
    Proposal.MULTI_MEMORY: ("multi-memory", "multi-memory", "multimemory"),
    Proposal.EXTENDED_CONST: ("extended-const", "extended-const", "extended-const"),
    Proposal.FUNCTION_REFERENCES: ("function-references", "function-references", ""),
    Proposal.GC: ("gc", "gc", "gc"),
    Proposal.WIDE_ARITHMETIC: ("wide-arithmetic", "wide-arithmetic", "wide-arithmetic"),
}

# A proposal -> the smaller ones it contains (wasmparser: REFERENCE_TYPES and BULK_MEMORY
# carry the CALL_INDIRECT_OVERLONG and BULK_MEMORY_OPT bits; LLVM: enabling bulk-memory
# enables bulk-memory-opt, reference-types enables call-indirect-overlong).
IMPLIES: dict[Proposal, Proposal] = {
    Proposal.BULK_MEMORY: Proposal.BULK_MEMORY_OPT,
    Proposal.REFERENCE_TYPES: Proposal.CALL_INDIRECT_OVERLONG,
}

BY_NAME: dict[str, Proposal] = {row[0]: p for p, row in PROPOSAL_NAMES.items()}
BY_TARGET_FEATURE: dict[str, Proposal] = {row[2]: p for p, row in PROPOSAL_NAMES.items() if row[2]}

# Names LLVM 22 can write into target_features that enable no proposal we model, with why.
# A `+` claim of one is a finding (no lane can allow what we cannot check); `-` is harmless.
# Any name in neither table is unknown, and an unknown name is a finding too.
TARGET_FEATURES_WITHOUT_PROPOSAL: dict[str, str] = {
    "fp16": "half-precision operators (0xfd 0x120...), which wasm-tools cannot validate",
    "component-model-thread-context": "component-model intrinsics, not core Wasm",
    "shared-mem": "lld's marker that the objects were built for a shared memory",
}

NONE = Proposal(0)


def members(flags: Proposal) -> list[Proposal]:
    """The single flags set in `flags`, in declaration order."""
    return [p for p in Proposal if p & flags]


def names(flags: Proposal) -> list[str]:
    return [PROPOSAL_NAMES[p][0] for p in members(flags)]


def closure(flags: Proposal) -> Proposal:
    """`flags` with everything they contain (an allowed bulk-memory allows bulk-memory-opt)."""
    for big, small in IMPLIES.items():
        if flags & big:
            flags |= small
    return flags


def minimal(flags: Proposal) -> Proposal:
    """`flags` without the parts of a proposal that is itself in `flags`: the smallest set
    naming the same features (bulk-memory-opt goes when bulk-memory is there)."""
    for big, small in IMPLIES.items():
        if flags & big:
            flags &= ~small
    return flags


def from_names(values: list[str], where: str) -> Proposal:
    """Policy names -> flags; an unknown name is a ValueError naming `where`."""
    flags = NONE
    for value in values:
        if value not in BY_NAME:
            raise ValueError(f"{where}: unknown proposal {value!r} (known: {sorted(BY_NAME)})")
        flags |= BY_NAME[value]
    return flags


def wasm_tools_features(flags: Proposal) -> str:
    """The `wasm-tools validate --features` value enabling exactly `flags` on top of `mvp`."""
    parts = ["mvp"] + [PROPOSAL_NAMES[p][1] for p in members(flags) if p is not Proposal.MVP]
    return ",".join(parts)
