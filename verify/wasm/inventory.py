"""Per-module inventory: what the module contains and which proposals it really REQUIRES.

Requirements come from operators (opcodes.OPCODES' proposal column), immediates and local
types (code.CodeFacts.requires) and module structure (sections.WasmModule.structural).
The declared target_features are kept separately: a missing section is an empty claim.
"""

from __future__ import annotations

from dataclasses import dataclass

from verify.paths import absolute_paths
from verify.wasm import features
from verify.wasm.code import Site
from verify.wasm.features import NONE, Proposal
from verify.wasm.opcodes import OPCODES, Imm, names_of, op_by_key
from verify.wasm.sections import Import, Limits, WasmModule, parse_module
from verify.wasm.tls import TlsFacts, tls_facts

DEBUG_PREFIX = ".debug_"
# Operators that address a linear memory (a memarg, or a memory index of their own).
MEMORY_OPERATORS = frozenset(
    op.name for op in OPCODES.values() if Imm.MEMARG in op.imms or Imm.MEM in op.imms
)


@dataclass(frozen=True, slots=True)
class MemoryFact:
    imported: bool
    module: str  # import module ("" when defined)
    name: str  # import name ("" when defined)
    limits: Limits


@dataclass(frozen=True, slots=True)
class WasmInventory:
    size: int
    instruction_count: int
    function_count: int
    op_counts: dict[str, int]  # operator name -> count (a prefixed name is unique as well)
    # proposal name -> its operators, plus each use that needs it with no operator of its
    # own (an overlong call_indirect, a reference-typed local, a type-index block type, a
    # memory operator on a 64-bit memory, a type with two results ...), so the values may
    # sum past instruction_count; `reasons` says what each count is made of
    proposal_counts: dict[str, int]
    # what the module needs, smallest form: a proposal contained in another required one
    # (bulk-memory-opt in bulk-memory) is left out, its reasons and counts kept
    required: Proposal
    reasons: dict[str, tuple[str, ...]]  # proposal name -> why it is needed
    first_uses: dict[str, Site]  # proposal name -> its first use in code, if any
    declared: tuple[tuple[str, str], ...]  # target_features: (prefix, name)
    declared_present: bool  # False: no target_features section (an empty claim)
    imports: tuple[Import, ...]
    exports: tuple[tuple[str, str], ...]  # (name, kind)
    memories: tuple[MemoryFact, ...]
    custom_sections: tuple[str, ...]
    debug_sections: tuple[str, ...]
    producers: tuple[tuple[str, str, str], ...]
    paths: tuple[str, ...]  # absolute-path-like strings anywhere in the bytes
    tls: TlsFacts  # thread-local storage, from the start function's code (verify/wasm/tls.py)

    @property
    def required_names(self) -> list[str]:
        return features.names(self.required)

    def count_of(self, proposal: Proposal) -> int:
        return self.proposal_counts.get(features.PROPOSAL_NAMES[proposal][0], 0)

    @property
    def relaxed_instructions(self) -> dict[str, int]:
        """Relaxed-SIMD instruction name -> count in the code ({} for none)."""
        relaxed = names_of(Proposal.RELAXED_SIMD)
        return {name: n for name, n in sorted(self.op_counts.items()) if name in relaxed}


def _memory64_ops(module: WasmModule, op_counts: dict[str, int]) -> int:
    """Memory operators that address a 64-bit memory 0 (a memarg naming another memory is
    counted too: multi-memory modules are not split per memory)."""
    memories = [imp.limits for imp in module.imports if imp.kind == "memory" and imp.limits]
    memories += module.memories
    if not memories or not memories[0].is64:
        return 0
    return sum(count for name, count in op_counts.items() if name in MEMORY_OPERATORS)


def inventory_of(module: WasmModule, data: bytes) -> WasmInventory:
    op_counts: dict[str, int] = {}
    proposal_counts: dict[str, int] = {}
    reasons: dict[str, list[str]] = {}
    needed = NONE
    by_proposal: dict[Proposal, list[str]] = {}
    first: dict[Proposal, Site] = {}

    def count(proposal: Proposal, n: int) -> None:
        pname = features.PROPOSAL_NAMES[proposal][0]
        proposal_counts[pname] = proposal_counts.get(pname, 0) + n

    def seen_at(proposal: Proposal, site: Site) -> None:
        if proposal not in first or site.offset < first[proposal].offset:
            first[proposal] = site

    for key, n in sorted(module.code.op_counts.items()):
        op = op_by_key(key)
        op_counts[op.name] = op_counts.get(op.name, 0) + n
        count(op.proposal, n)
        if op.proposal is not Proposal.MVP:
            needed |= op.proposal
            by_proposal.setdefault(op.proposal, []).append(op.name)
            seen_at(op.proposal, module.code.first_ops[key])
    for proposal, names in by_proposal.items():
        shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
        reasons.setdefault(features.PROPOSAL_NAMES[proposal][0], []).append(
            f"{len(names)} distinct operators ({shown})"
        )
    # Uses in code with no operator of their own (immediates, local/block/select types).
    for proposal, use in module.code.implicit.items():
        needed |= proposal
        count(proposal, use.count)
        seen_at(proposal, use.first)
        reasons.setdefault(features.PROPOSAL_NAMES[proposal][0], []).append(
            f"{use.count} uses in code, the first a {use.first.what}"
        )
    for req in module.structural:
        needed |= req.proposal
        count(req.proposal, 1)
        reasons.setdefault(features.PROPOSAL_NAMES[req.proposal][0], []).append(req.reason)
    memory64_ops = _memory64_ops(module, op_counts)
    if memory64_ops:
        count(Proposal.MEMORY64, memory64_ops)
        reasons["memory64"].append(f"{memory64_ops} memory operators on the 64-bit memory 0")
    memories = tuple(
        MemoryFact(True, imp.module, imp.name, imp.limits)
        for imp in module.imports
        if imp.kind == "memory" and imp.limits is not None
    ) + tuple(MemoryFact(False, "", "", limits) for limits in module.memories)
    customs = tuple(section.name for section in module.custom)
    declared = tuple((f.prefix, f.name) for f in module.target_features or ())
    return WasmInventory(
        size=module.size,
        instruction_count=module.code.instruction_count,
        function_count=module.code.function_count,
        op_counts=op_counts,
        proposal_counts=proposal_counts,
        required=features.minimal(needed),
        reasons={name: tuple(why) for name, why in reasons.items()},
        first_uses={features.PROPOSAL_NAMES[p][0]: site for p, site in first.items()},
        declared=declared,
        declared_present=module.target_features is not None,
        imports=module.imports,
        exports=tuple((e.name, e.kind) for e in module.exports),
        memories=memories,
        custom_sections=customs,
        debug_sections=tuple(n for n in customs if n.startswith(DEBUG_PREFIX)),
        producers=module.producers,
        paths=absolute_paths(data),
        tls=tls_facts(module, data),
    )


def inventory_bytes(data: bytes) -> WasmInventory:
    return inventory_of(parse_module(data), data)
