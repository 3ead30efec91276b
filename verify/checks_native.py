"""Native lane checks: pure functions (NativeFacts, NativePolicy) -> Finding, ONE table.

Rows carry the formats they apply to (bitcoin's security-check keys checks by format);
a row for another format is not run, so a PE report never shows ELF-only findings.
"""

from __future__ import annotations

from collections.abc import Callable

from verify.checktable import Finding, run_checks
from verify.native.facts import NativeFacts
from verify.paths import outside
from verify.policy import NativePolicy


def _version(v: tuple[int, ...] | None) -> str:
    return ".".join(map(str, v)) if v else "none"


def fmt_machine(f: NativeFacts, p: NativePolicy) -> Finding:
    ok = (f.format, f.machine) == (p.format, p.machine)
    return Finding("", ok, f"{f.format} {f.machine}; lane expects {p.format} {p.machine}")


def libraries(f: NativeFacts, p: NativePolicy) -> Finding:
    allowed = {name.lower() for name in p.allowed_libraries}
    stray = [lib for lib in f.libraries if lib.lower() not in allowed]
    if stray:
        return Finding("", False, f"libraries outside the policy: {stray}")
    return Finding("", True, f"libraries {list(f.libraries)}")


def glibc(f: NativeFacts, p: NativePolicy) -> Finding:
    have = f.max_glibc
    ok = p.max_glibc is None or have is None or have <= p.max_glibc
    return Finding("", ok, f"max GLIBC {_version(have)}; policy <= {_version(p.max_glibc)}")


def pie(f: NativeFacts, p: NativePolicy) -> Finding:
    return Finding("", f.pie or not p.pie, f"position independent: {f.pie}")


def nx(f: NativeFacts, p: NativePolicy) -> Finding:
    return Finding("", f.nx or not p.nx, f"non-executable stack/data (NX): {f.nx}")


def relro(f: NativeFacts, p: NativePolicy) -> Finding:
    full = f.relro and f.bind_now
    return Finding("", full or not p.full_relro, f"RELRO {f.relro}, BIND_NOW {f.bind_now}")


def build_id(f: NativeFacts, p: NativePolicy) -> Finding:
    ok = f.build_id is not None or not p.build_id
    return Finding("", ok, f"build-id {f.build_id or 'absent'}")


def debug_absent(f: NativeFacts, p: NativePolicy) -> Finding:
    ok = not (p.forbid_debug_sections and f.debug_sections)
    shown = list(f.debug_sections[:8])
    return Finding("", ok, f"debug sections {shown}" if shown else "no debug sections")


def pe_timestamp(f: NativeFacts, p: NativePolicy) -> Finding:
    ok = p.pe_timestamp is None or f.pe_timestamp == p.pe_timestamp
    return Finding("", ok, f"COFF timestamp {f.pe_timestamp}; policy {p.pe_timestamp}")


def pe_debug_directory(f: NativeFacts, p: NativePolicy) -> Finding:
    ok = p.pe_debug_directory or not f.pe_debug_types
    return Finding("", ok, f"debug directory entries {list(f.pe_debug_types)}")


def pe_aslr(f: NativeFacts, p: NativePolicy) -> Finding:
    ok = (f.pe_dynamic_base or not p.pe_dynamic_base) and (
        f.pe_high_entropy_va or not p.pe_high_entropy_va
    )
    return Finding(
        "", ok, f"DYNAMIC_BASE {f.pe_dynamic_base}, HIGH_ENTROPY_VA {f.pe_high_entropy_va}"
    )


def isa_baseline(f: NativeFacts, p: NativePolicy) -> Finding:
    """Forbidden groups' instructions, less the policy's baseline encodings (an encoding every
    baseline CPU executes as an older instruction, e.g. tzcnt as `rep bsf`)."""
    beyond: dict[str, int] = {}
    compatible: dict[str, int] = {}
    for group, count in f.isa.groups.items():
        if group not in p.forbidden_isa_groups:
            continue
        mnemonics = f.isa.group_mnemonics.get(group, {})
        for mnemonic, n in mnemonics.items():
            if mnemonic in p.baseline_encodings:
                compatible[mnemonic] = compatible.get(mnemonic, 0) + n
        left = count - sum(n for m, n in mnemonics.items() if m in p.baseline_encodings)
        if left:
            beyond[group] = left
    if f.isa.instruction_count == 0:
        return Finding("", False, "no instructions decoded: cannot judge the ISA")
    if beyond:
        return Finding("", False, f"instructions beyond the baseline ISA: {beyond}")
    also = f" (baseline encodings: {compatible})" if compatible else ""
    return Finding("", True, f"{f.isa.instruction_count} instructions, all baseline{also}")


def isa_fma(f: NativeFacts, p: NativePolicy) -> Finding:
    fused = {m: n for m, n in f.isa.fma.items() if m.startswith(p.fma_mnemonics)}
    if fused:
        return Finding("", False, f"fused multiply-add instructions: {fused}")
    return Finding("", True, "no fused multiply-add instructions")


def paths_build(f: NativeFacts, p: NativePolicy) -> Finding:
    bad = outside(f.paths, p.allowed_path_prefixes)
    if bad:
        return Finding("", False, f"absolute paths outside the remap targets: {list(bad)[:10]}")
    return Finding("", True, f"{len(f.paths)} absolute paths, all allowed")


def parse_clean(f: NativeFacts, p: NativePolicy) -> Finding:
    if p.forbid_parse_anomalies and f.parse_anomalies:
        shown = "; ".join(f.parse_anomalies[:5])
        more = f" (+{len(f.parse_anomalies) - 5} more)" if len(f.parse_anomalies) > 5 else ""
        return Finding(
            "", False, f"lief reported {len(f.parse_anomalies)} parse anomalies: {shown}{more}"
        )
    return Finding("", True, f"lief parsed without anomalies ({len(f.parse_anomalies)} logged)")


def file_complete(f: NativeFacts, p: NativePolicy) -> Finding:
    short = f.claimed_size > f.size
    evidence = f"file is {f.size} bytes; headers claim up to {f.claimed_size} ({f.claimed_by})"
    return Finding("", not (short and p.forbid_parse_anomalies), evidence)


def _formats(*names: str) -> Callable[[NativeFacts, NativePolicy], bool]:
    def applies(facts: NativeFacts, policy: NativePolicy) -> bool:
        return policy.format in names

    return applies


NativeCheck = Callable[[NativeFacts, NativePolicy], Finding]
ELF, PE, BOTH = _formats("ELF"), _formats("PE"), _formats("ELF", "PE")

# id -> (check, the formats it applies to). One row per check; ids are stable API.
NATIVE_CHECKS: dict[str, tuple[NativeCheck, Callable[[NativeFacts, NativePolicy], bool]]] = {
    "native.format": (fmt_machine, BOTH),
    "native.parse.clean": (parse_clean, BOTH),
    "native.file.complete": (file_complete, BOTH),
    "native.libraries": (libraries, BOTH),
    "native.glibc": (glibc, ELF),
    "native.pie": (pie, BOTH),
    "native.nx": (nx, BOTH),
    "native.relro": (relro, ELF),
    "native.build_id": (build_id, ELF),
    "native.debug.absent": (debug_absent, BOTH),
    "native.pe.timestamp": (pe_timestamp, PE),
    "native.pe.debug_directory": (pe_debug_directory, PE),
    "native.pe.aslr": (pe_aslr, PE),
    "native.isa.baseline": (isa_baseline, BOTH),
    "native.isa.fma": (isa_fma, BOTH),
    "native.paths.build": (paths_build, BOTH),
}


def run_native_checks(facts: NativeFacts, policy: NativePolicy) -> list[Finding]:
    return run_checks(NATIVE_CHECKS, facts, policy)
