"""PE (lief) -> NativeFacts."""

from __future__ import annotations

from typing import Any

import lief

from verify.native import disasm
from verify.native.extent import claimed_end
from verify.native.facts import NativeFacts
from verify.paths import absolute_paths

_MACHINES = {"AMD64": "x86_64", "ARM64": "aarch64"}


def pe_facts(binary: Any, data: bytes, anomalies: tuple[str, ...]) -> NativeFacts:
    machine_raw = str(binary.header.machine).rsplit(".", 1)[-1]
    machine = _MACHINES.get(machine_raw, machine_raw)
    sections = tuple(s.name for s in binary.sections)
    dll = lief.PE.OptionalHeader.DLL_CHARACTERISTICS
    flags = int(binary.optional_header.dll_characteristics)
    executable = int(lief.PE.Section.CHARACTERISTICS.MEM_EXECUTE)
    code = [
        (bytes(s.content), binary.optional_header.imagebase + s.virtual_address)
        for s in binary.sections
        if int(s.characteristics) & executable
    ]
    claimed, claimed_by = claimed_end(data)
    return NativeFacts(
        format="PE",
        machine=machine,
        size=len(data),
        sections=sections,
        libraries=tuple(binary.libraries),
        glibc_versions=(),
        pie=bool(flags & int(dll.DYNAMIC_BASE)),
        nx=bool(flags & int(dll.NX_COMPAT)),
        relro=False,
        bind_now=False,
        build_id=None,
        debug_sections=tuple(n for n in sections if n.startswith((".debug", "/"))),
        pe_timestamp=int(binary.header.time_date_stamps),
        pe_debug_types=tuple(str(d.type).rsplit(".", 1)[-1] for d in binary.debug),
        pe_dynamic_base=bool(flags & int(dll.DYNAMIC_BASE)),
        pe_high_entropy_va=bool(flags & int(dll.HIGH_ENTROPY_VA)),
        paths=absolute_paths(data),
        isa=disasm.inventory(machine, code),
        parse_anomalies=anomalies,
        claimed_size=claimed,
        claimed_by=claimed_by,
    )
