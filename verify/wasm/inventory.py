"""Per-module inventory: what the module contains and which proposals it really REQUIRES.

Requirements come from operators (opcodes.OPCODES' proposal column), immediates and local
types (code.CodeFacts.requires) and module structure (sections.WasmModule.structural).
The declared target_features are kept separately: a missing section is an empty claim.
"""

from __future__ import annotations

from dataclasses import dataclass

from verify.paths import absolute_paths
from verify.wasm import features
from verify.wasm.features import NONE, Proposal
from verify.wasm.opcodes import op_by_key
from verify.wasm.sections import Import, Limits, WasmModule, parse_module

DEBUG_PREFIX = ".debug_"


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
    proposal_counts: dict[str, int]  # proposal name -> operators of that proposal
    required: Proposal
    reasons: dict[str, tuple[str, ...]]  # proposal name -> why it is required
    declared: tuple[tuple[str, str], ...]  # target_features: (prefix, name)
    declared_present: bool  # False: no target_features section (an empty claim)
    imports: tuple[Import, ...]
    exports: tuple[tuple[str, str], ...]  # (name, kind)
    memories: tuple[MemoryFact, ...]
    custom_sections: tuple[str, ...]
    debug_sections: tuple[str, ...]
    producers: tuple[tuple[str, str, str], ...]
    paths: tuple[str, ...]  # absolute-path-like strings anywhere in the bytes

    @property
    def required_names(self) -> list[str]:
        return features.names(self.required)

    def count_of(self, proposal: Proposal) -> int:
        return self.proposal_counts.get(features.PROPOSAL_NAMES[proposal][0], 0)


def inventory_of(module: WasmModule, data: bytes) -> WasmInventory:
    op_counts: dict[str, int] = {}
    proposal_counts: dict[str, int] = {}
    reasons: dict[str, list[str]] = {}
    required = NONE
    by_proposal: dict[Proposal, list[str]] = {}
    for key, count in sorted(module.code.op_counts.items()):
        op = op_by_key(key)
        op_counts[op.name] = op_counts.get(op.name, 0) + count
        pname = features.PROPOSAL_NAMES[op.proposal][0]
        proposal_counts[pname] = proposal_counts.get(pname, 0) + count
        if op.proposal is not Proposal.MVP:
            required |= op.proposal
            by_proposal.setdefault(op.proposal, []).append(op.name)
    for proposal, names in by_proposal.items():
        shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
        reasons.setdefault(features.PROPOSAL_NAMES[proposal][0], []).append(
            f"{len(names)} distinct operators ({shown})"
        )
    for proposal in features.members(module.code.requires):
        required |= proposal
        reasons.setdefault(features.PROPOSAL_NAMES[proposal][0], []).append(
            "operator immediates or local types"
        )
    for req in module.structural:
        required |= req.proposal
        reasons.setdefault(features.PROPOSAL_NAMES[req.proposal][0], []).append(req.reason)
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
        required=required,
        reasons={name: tuple(why) for name, why in reasons.items()},
        declared=declared,
        declared_present=module.target_features is not None,
        imports=module.imports,
        exports=tuple((e.name, e.kind) for e in module.exports),
        memories=memories,
        custom_sections=customs,
        debug_sections=tuple(n for n in customs if n.startswith(DEBUG_PREFIX)),
        producers=module.producers,
        paths=absolute_paths(data),
    )


def inventory_bytes(data: bytes) -> WasmInventory:
    return inventory_of(parse_module(data), data)
