"""Read a native binary: detect the format from its magic, hand it to elf.py or pe.py."""

from __future__ import annotations

import atexit
import functools
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lief

from verify.native.elf import elf_facts
from verify.native.errors import MalformedNative
from verify.native.facts import NativeFacts
from verify.native.pe import pe_facts

lief.logging.disable()  # until the first parse sends the log to its private file


@functools.cache
def _log_path() -> Path:
    """lief reports what it could not parse (corrupt sections, truncated segments) only
    in its log: send the log to a private file so each parse's warnings can be read back.
    Made on first use, so importing this module touches no file."""
    fd, name = tempfile.mkstemp(prefix="tinyrustlm-lief-", suffix=".log")
    os.close(fd)
    path = Path(name)
    atexit.register(path.unlink, missing_ok=True)
    lief.logging.set_path(name)
    lief.logging.set_level(lief.logging.LEVEL.WARN)
    lief.logging.enable()
    return path


def _parse_logged(parse: Callable[[list[int]], Any], data: bytes) -> tuple[Any, tuple[str, ...]]:
    """Parse with lief; returns the binary (or None) and the warnings lief logged."""
    log = _log_path()
    os.truncate(log, 0)
    binary = parse(list(data))
    text = log.read_text(encoding="utf-8", errors="replace")
    return binary, tuple(line.strip() for line in text.splitlines() if line.strip())


def native_facts(data: bytes, where: str) -> NativeFacts:
    if data[:4] == b"\x7fELF":
        # EI_CLASS and EI_DATA must be set; lief accepts an all-zero header otherwise.
        if len(data) < 64 or data[4] not in (1, 2) or data[5] not in (1, 2):
            raise MalformedNative("ELF identification bytes are invalid", where=where, offset=4)
        elf, anomalies = _parse_logged(lief.ELF.parse, data)
        if elf is None or not list(elf.segments):
            raise MalformedNative("lief cannot parse this ELF file", where=where, offset=0)
        return elf_facts(elf, data, anomalies)
    if data[:2] == b"MZ":
        pe, anomalies = _parse_logged(lief.PE.parse, data)
        if pe is None:
            raise MalformedNative("lief cannot parse this PE file", where=where, offset=0)
        return pe_facts(pe, data, anomalies)
    raise MalformedNative("neither ELF nor PE (bad magic)", where=where, offset=0)
