"""Read a native binary: detect the format from its magic, hand it to elf.py or pe.py."""

from __future__ import annotations

import lief

from verify.native.elf import elf_facts
from verify.native.errors import MalformedNative
from verify.native.facts import NativeFacts
from verify.native.pe import pe_facts

lief.logging.disable()  # lief reports problems through its return values; keep stderr clean


def native_facts(data: bytes, where: str) -> NativeFacts:
    if data[:4] == b"\x7fELF":
        # EI_CLASS and EI_DATA must be set; lief accepts an all-zero header otherwise.
        if len(data) < 64 or data[4] not in (1, 2) or data[5] not in (1, 2):
            raise MalformedNative("ELF identification bytes are invalid", where=where, offset=4)
        elf = lief.ELF.parse(list(data))
        if elf is None or not list(elf.segments):
            raise MalformedNative("lief cannot parse this ELF file", where=where, offset=0)
        return elf_facts(elf, data)
    if data[:2] == b"MZ":
        pe = lief.PE.parse(list(data))
        if pe is None:
            raise MalformedNative("lief cannot parse this PE file", where=where, offset=0)
        return pe_facts(pe, data)
    raise MalformedNative("neither ELF nor PE (bad magic)", where=where, offset=0)
