"""Wasm lane checks: pure functions (facts, policy) -> Finding, registered in ONE table.

The cross-check rows need wasm-tools verdicts in the facts; inspect.py runs the tool and
the rows run only when those verdicts are present (verify.checktable runs the table).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from verify.checktable import Finding, always, run_checks
from verify.paths import outside
from verify.policy import WasmPolicy
from verify.wasm import features
from verify.wasm.features import BY_TARGET_FEATURE, NONE, Proposal
from verify.wasm.inventory import WasmInventory
from verify.wasm.tools import CrossCheck


@dataclass(frozen=True, slots=True)
class WasmFacts:
    inventory: WasmInventory
    cross_check: CrossCheck | None = None


def _names(flags: Proposal) -> str:
    return ", ".join(features.names(flags)) or "nothing beyond Wasm 1.0"


def _why(inv: WasmInventory, flags: Proposal) -> str:
    parts = []
    for name in features.names(flags):
        site = inv.first_uses.get(name)
        where = (
            f"first {site.what} in function {site.function} at offset 0x{site.offset:x}; "
            if site
            else ""
        )
        parts.append(f"{name}: {where}{'; '.join(inv.reasons.get(name, ()))}")
    return " | ".join(parts)


def proposals_allowed(facts: WasmFacts, policy: WasmPolicy) -> Finding:
    """Every proposal the code needs is in the lane (an allowed proposal allows its parts:
    bulk-memory allows bulk-memory-opt); each one beyond it is named with its first use."""
    inv = facts.inventory
    extra = inv.required & ~features.closure(policy.allowed) & ~Proposal.MVP
    if extra:
        return Finding("", False, f"requires {_names(extra)} beyond the lane: {_why(inv, extra)}")
    return Finding("", True, f"requires {_names(inv.required)}")


def proposals_required(facts: WasmFacts, policy: WasmPolicy) -> Finding:
    missing = policy.required & ~facts.inventory.required
    if missing:
        return Finding("", False, f"the lane needs {_names(missing)} but the code never uses it")
    return Finding("", True, f"uses {_names(policy.required)}")


def relaxed_instructions(facts: WasmFacts, policy: WasmPolicy) -> Finding:
    """Relaxed SIMD is admitted by instruction, not by proposal: the code holds exactly the
    relaxed instructions the lane names (each at least once, none other); a lane that names
    none admits none."""
    held = facts.inventory.relaxed_instructions
    unlisted = sorted(set(held) - set(policy.relaxed_instructions))
    unused = sorted(set(policy.relaxed_instructions) - set(held))
    problems = [f"holds {name} x{held[name]}, which the lane does not admit" for name in unlisted]
    problems += [f"admits {name} but the code never uses it" for name in unused]
    if problems:
        return Finding("", False, "; ".join(problems))
    if not held:
        return Finding("", True, "no relaxed-SIMD instruction")
    return Finding("", True, ", ".join(f"{name} x{n}" for name, n in held.items()))


def target_features_agree(facts: WasmFacts, policy: WasmPolicy) -> Finding:
    """target_features against the code and the lane: every proposal the code needs is
    claimed and none denied; nothing beyond the lane is claimed (a lane built on the
    target's defaults claims them even where no operator needs them); and every name is one
    LLVM 22 writes: an unknown name, or a `+` of a feature we model no proposal for
    (fp16 ...), is a finding, never skipped."""
    inv = facts.inventory
    if not inv.declared_present and not policy.missing_target_features_is_empty_claim:
        return Finding("", True, "no target_features section; the policy does not judge it")
    claimed = denied = NONE
    problems: list[str] = []
    for prefix, name in inv.declared:
        proposal = BY_TARGET_FEATURE.get(name)
        if proposal is None and name in features.TARGET_FEATURES_WITHOUT_PROPOSAL:
            if prefix != "-":
                why = features.TARGET_FEATURES_WITHOUT_PROPOSAL[name]
                problems.append(f"claims {prefix}{name} ({why}), which no lane allows")
        elif proposal is None:
            problems.append(f"names an unknown target feature {prefix}{name}")
        elif prefix == "-":
            denied |= proposal
        else:
            claimed |= proposal
    unclaimed = inv.required & ~features.closure(claimed) & ~Proposal.MVP
    contradicted = inv.required & denied
    beyond = claimed & ~features.closure(policy.allowed) & ~Proposal.MVP
    source = "target_features" if inv.declared_present else "no target_features section"
    if unclaimed or contradicted:
        problems.insert(
            0,
            f"code requires {_names(unclaimed | contradicted)} but {source} "
            f"claims {[p + n for p, n in inv.declared]}",
        )
    if beyond:
        problems.append(f"claims {_names(beyond)} beyond the lane")
    if problems:
        return Finding("", False, "; ".join(problems))
    return Finding("", True, f"{source} covers {_names(inv.required)}")


def memory_source(facts: WasmFacts, policy: WasmPolicy) -> Finding:
    mems = facts.inventory.memories
    exported = any(kind == "memory" for _, kind in facts.inventory.exports)
    if len(mems) != 1:
        return Finding("", False, f"{len(mems)} memories, expected exactly one")
    mem = mems[0]
    if policy.memory.source == "import":
        ok = mem.imported and (mem.module, mem.name) == ("env", "memory")
    else:
        ok = not mem.imported and exported
    where = f"imported as {mem.module}.{mem.name}" if mem.imported else "defined"
    where += ", exported" if exported else ", not exported"
    return Finding("", ok, f"memory {where}; policy: {policy.memory.source}")


def memory_shared(facts: WasmFacts, policy: WasmPolicy) -> Finding:
    flags = [m.limits.shared for m in facts.inventory.memories]
    ok = bool(flags) and all(s == policy.memory.shared for s in flags)
    return Finding("", ok, f"shared flags {flags}; policy shared={policy.memory.shared}")


def memory_limits(facts: WasmFacts, policy: WasmPolicy) -> Finding:
    """The declared limits in pages: the minimum at most the policy's bound, the maximum exactly
    the policy's (the threads lane: a small minimum and the whole wasm32 address space, so the
    host creates the memory at the plan's size, initial == maximum, whatever the model)."""
    most, maximum = policy.memory.initial_pages_at_most, policy.memory.maximum_pages
    sizes = [(m.limits.minimum, m.limits.maximum) for m in facts.inventory.memories]
    wanted = [
        *([] if most is None else [f"initial <= {most}"]),
        *([] if maximum is None else [f"maximum == {maximum}"]),
    ]
    if not wanted:
        return Finding("", True, f"(initial, maximum) {sizes}; any size allowed")
    ok = bool(sizes) and all(
        (most is None or lo <= most) and (maximum is None or hi == maximum) for lo, hi in sizes
    )
    return Finding("", ok, f"(initial, maximum) pages {sizes}; policy: {', '.join(wanted)}")


def memory_growth(facts: WasmFacts, policy: WasmPolicy) -> Finding:
    grows = facts.inventory.op_counts.get("memory.grow", 0)
    ok = policy.memory.growth or grows == 0
    return Finding("", ok, f"{grows} memory.grow operators; growth allowed={policy.memory.growth}")


def tls_per_thread(facts: WasmFacts, policy: WasmPolicy) -> Finding:
    """A shared-memory module whose start function places a TLS block must export what a host
    needs to give every other thread its own (judged from the code, never from exports)."""
    tls = facts.inventory.tls
    if not tls.shared_memory:
        return Finding("", True, "no shared memory: one thread, wasm-ld's static TLS block")
    if not tls.holds_tls:
        return Finding("", True, "the start function writes no global: no thread-local storage")
    missing = tls.missing_exports
    if missing:
        return Finding(
            "",
            False,
            f"the start function writes the TLS base ({tls.start_writes_globals} global.set): "
            f"the module holds thread-local storage but does not export {', '.join(missing)}, "
            "so every thread but the first would keep its thread-locals at address 0",
        )
    return Finding("", True, "thread-local storage, per-thread blocks through __wasm_init_tls")


def exports_required(facts: WasmFacts, policy: WasmPolicy) -> Finding:
    have = set(facts.inventory.exports)
    missing = [
        f"{name} ({kind})"
        for kind, names in (("func", policy.required_exports), ("global", policy.required_globals))
        for name in names
        if (name, kind) not in have
    ]
    if missing:
        return Finding("", False, f"missing exports {missing}")
    count = len(policy.required_exports) + len(policy.required_globals)
    return Finding("", True, f"all {count} required exports present")


def exports_allowed(facts: WasmFacts, policy: WasmPolicy) -> Finding:
    required = {*policy.required_exports, *policy.required_globals}
    stray = [
        name
        for name, kind in facts.inventory.exports
        if name not in required
        and not (kind == "memory" and name == "memory")
        and not name.startswith(policy.optional_export_prefixes)
    ]
    if stray:
        return Finding("", False, f"unexpected exports {stray}")
    return Finding("", True, f"{len(facts.inventory.exports)} exports, none unexpected")


def imports_allowed(facts: WasmFacts, policy: WasmPolicy) -> Finding:
    allowed = {(a.module, a.name, a.kind) for a in policy.allowed_imports}
    stray = [
        f"{i.module}.{i.name} ({i.kind})"
        for i in facts.inventory.imports
        if (i.module, i.name, i.kind) not in allowed
    ]
    if stray:
        return Finding("", False, f"imports outside the policy: {stray}")
    return Finding("", True, f"{len(facts.inventory.imports)} imports, all allowed")


def custom_forbidden(facts: WasmFacts, policy: WasmPolicy) -> Finding:
    bad = [n for n in facts.inventory.custom_sections if n in policy.forbidden_custom_sections]
    if bad:
        return Finding("", False, f"forbidden custom sections {bad}")
    return Finding("", True, f"custom sections {list(facts.inventory.custom_sections)}")


def debug_absent(facts: WasmFacts, policy: WasmPolicy) -> Finding:
    debug = facts.inventory.debug_sections
    ok = not (policy.forbid_debug_sections and debug)
    return Finding("", ok, f"debug sections {list(debug)}" if debug else "no .debug_* sections")


def paths_build(facts: WasmFacts, policy: WasmPolicy) -> Finding:
    bad = outside(facts.inventory.paths, policy.allowed_path_prefixes)
    if bad:
        return Finding("", False, f"absolute paths outside the remap targets: {list(bad)[:10]}")
    return Finding("", True, f"{len(facts.inventory.paths)} absolute paths, all remapped")


def _cross(facts: WasmFacts) -> CrossCheck:
    assert facts.cross_check is not None  # the table runs these rows only with verdicts
    return facts.cross_check


def tools_valid(facts: WasmFacts, policy: WasmPolicy) -> Finding:
    own = _cross(facts).own
    verdict = "valid" if own.valid else own.message
    return Finding("", own.valid, f"wasm-tools validate --features={own.features}: {verdict}")


def tools_needs_lane(facts: WasmFacts, policy: WasmPolicy) -> Finding:
    lower = _cross(facts).lower
    if lower is None:
        return Finding("", True, "the lowest lane: nothing below to reject it")
    verdict = "valid (the lane is not needed)" if lower.valid else f"rejected: {lower.message}"
    return Finding("", not lower.valid, f"--features={lower.features}: {verdict}")


def tools_agree(facts: WasmFacts, policy: WasmPolicy) -> Finding:
    cc = _cross(facts)
    problems = []
    # Under-inference: the lane's set accepts the module but the inferred set does not.
    if cc.own.valid and not cc.exact.valid:
        problems.append(
            f"valid under the lane but not under the inferred set "
            f"{cc.exact.features}: {cc.exact.message}"
        )
    # Over-inference: a proposal we say is needed can be dropped and it still validates.
    if cc.exact.valid:
        problems += [f"still valid without {name}" for name, v in cc.without if v.valid]
    if problems:
        return Finding(
            "", False, "inferred requirements disagree with wasm-tools: " + "; ".join(problems)
        )
    return Finding("", True, f"wasm-tools agrees: needs exactly {cc.exact.features}")


def with_tool(facts: WasmFacts, policy: WasmPolicy) -> bool:
    return facts.cross_check is not None


Check = Callable[[WasmFacts, WasmPolicy], Finding]
Applies = Callable[[WasmFacts, WasmPolicy], bool]

# id -> (check, when it applies). One row per check; ids are stable API.
WASM_CHECKS: dict[str, tuple[Check, Applies]] = {
    "wasm.proposals.allowed": (proposals_allowed, always),
    "wasm.proposals.required": (proposals_required, always),
    "wasm.relaxed.instructions": (relaxed_instructions, always),
    "wasm.target_features.agree": (target_features_agree, always),
    "wasm.memory.source": (memory_source, always),
    "wasm.memory.shared": (memory_shared, always),
    "wasm.memory.limits": (memory_limits, always),
    "wasm.memory.growth": (memory_growth, always),
    "wasm.tls.per_thread": (tls_per_thread, always),
    "wasm.exports.required": (exports_required, always),
    "wasm.exports.allowed": (exports_allowed, always),
    "wasm.imports.allowed": (imports_allowed, always),
    "wasm.custom.forbidden": (custom_forbidden, always),
    "wasm.debug.absent": (debug_absent, always),
    "wasm.paths.build": (paths_build, always),
    "wasm.tools.valid": (tools_valid, with_tool),
    "wasm.tools.needs_lane": (tools_needs_lane, with_tool),
    "wasm.tools.agree": (tools_agree, with_tool),
}


def run_wasm_checks(facts: WasmFacts, policy: WasmPolicy) -> list[Finding]:
    return run_checks(WASM_CHECKS, facts, policy)
