"""Instruction inventory of executable sections with capstone (x86_64, aarch64).

Counts capstone's instruction groups (sse2, avx, neon, sve, ...) and fused multiply-add
mnemonics; which groups are beyond the baseline is policy. skipdata mode steps over
bytes that do not decode (jump tables, padding) instead of stopping there.
"""

from __future__ import annotations

from collections import Counter

import capstone

from verify.native.facts import IsaInventory

# Mnemonic prefixes of fused multiply-add on either architecture (counted as facts).
FMA_PREFIXES = (
    "vfmadd",
    "vfmsub",
    "vfnmadd",
    "vfnmsub",
    "fmadd",
    "fmsub",
    "fnmadd",
    "fnmsub",
    "fmla",
    "fmls",
)


def _engine(machine: str) -> capstone.Cs:
    if machine == "x86_64":
        md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    elif machine == "aarch64":
        md = capstone.Cs(capstone.CS_ARCH_ARM64, capstone.CS_MODE_ARM)
    else:
        raise ValueError(machine)
    md.detail = True
    md.skipdata = True
    return md


def inventory(machine: str, code_ranges: list[tuple[bytes, int]]) -> IsaInventory:
    """`code_ranges`: (bytes, virtual address) of each executable section."""
    if machine not in ("x86_64", "aarch64"):
        return IsaInventory(0, sum(len(c) for c, _ in code_ranges), {}, {})
    md = _engine(machine)
    groups: Counter[str] = Counter()
    by_group: dict[str, Counter[str]] = {}
    fma: Counter[str] = Counter()
    count = 0
    skipped = 0
    for code, address in code_ranges:
        for insn in md.disasm(code, address):
            if insn.id == 0:  # a skipdata pseudo-instruction
                skipped += insn.size
                continue
            count += 1
            for group in insn.groups:
                name = md.group_name(group) or str(group)
                groups[name] += 1
                by_group.setdefault(name, Counter())[insn.mnemonic] += 1
            if insn.mnemonic.startswith(FMA_PREFIXES):
                fma[insn.mnemonic] += 1
    mnemonics = {g: dict(c) for g, c in sorted(by_group.items())}
    return IsaInventory(count, skipped, dict(groups), dict(fma), mnemonics)
