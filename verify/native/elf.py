"""ELF (lief) -> NativeFacts."""

from __future__ import annotations

from typing import Any

import lief

from verify.native import disasm
from verify.native.extent import claimed_end
from verify.native.facts import NativeFacts
from verify.paths import absolute_paths

_MACHINES = {"X86_64": "x86_64", "AARCH64": "aarch64"}
_EXEC = 0x4  # SHF_EXECINSTR


def elf_facts(binary: Any, data: bytes, anomalies: tuple[str, ...]) -> NativeFacts:
    machine_raw = str(binary.header.machine_type).rsplit(".", 1)[-1]
    machine = _MACHINES.get(machine_raw, machine_raw)
    sections = tuple(s.name for s in binary.sections if s.name)
    versions = sorted(
        {
            aux.name
            for req in binary.symbols_version_requirement
            for aux in req.get_auxiliary_symbols()
            if aux.name.startswith("GLIBC_")
        }
    )
    tags = lief.ELF.DynamicEntry.TAG
    bind_now = False
    for entry in binary.dynamic_entries:
        if (
            entry.tag == tags.BIND_NOW
            or (entry.tag == tags.FLAGS and entry.value & 0x8)
            or (entry.tag == tags.FLAGS_1 and entry.value & 0x1)
        ):
            bind_now = True
    build_id = None
    for note in binary.notes:
        if str(note.type).endswith("GNU_BUILD_ID"):
            build_id = bytes(note.description).hex()
    code = [
        (bytes(s.content), s.virtual_address)
        for s in binary.sections
        if s.flags & _EXEC and s.size and str(s.type).rsplit(".", 1)[-1] != "NOBITS"
    ]
    claimed, claimed_by = claimed_end(data)
    return NativeFacts(
        format="ELF",
        machine=machine,
        size=len(data),
        sections=sections,
        libraries=tuple(binary.libraries),
        glibc_versions=tuple(versions),
        pie=bool(binary.is_pie),
        nx=bool(binary.has_nx),
        relro=bool(binary.has(lief.ELF.Segment.TYPE.GNU_RELRO)),
        bind_now=bind_now,
        build_id=build_id,
        debug_sections=tuple(n for n in sections if n.startswith((".debug", ".zdebug"))),
        pe_timestamp=None,
        pe_debug_types=(),
        pe_dynamic_base=False,
        pe_high_entropy_va=False,
        paths=absolute_paths(data),
        isa=disasm.inventory(machine, code),
        parse_anomalies=anomalies,
        claimed_size=claimed,
        claimed_by=claimed_by,
    )
