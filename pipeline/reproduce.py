"""Compare two builds byte for byte and, where they differ, name the first differing section."""

from __future__ import annotations

from pathlib import Path

import lief

from verify.wasm.errors import MalformedWasm
from verify.wasm.sections import parse_module


def _wasm_sections(data: bytes) -> list[tuple[str, int, int]]:
    module = parse_module(data)
    standard = [(f"{s.name} (id {s.id})", s.offset, s.size) for s in module.sections]
    return standard + [(f"{s.name} (custom)", s.offset, s.size) for s in module.custom]


def _native_sections(data: bytes) -> list[tuple[str, int, int]]:
    binary = lief.parse(list(data))
    if binary is None:
        return []
    spans = []
    for section in binary.sections:
        name = section.name
        spans.append((name if isinstance(name, str) else name.decode(errors="replace"),
                      section.offset, section.size))
    return spans


def section_spans(data: bytes) -> list[tuple[str, int, int]]:
    """(name, file offset, size) of every section, in file order; [] if not a known format."""
    try:
        spans = _wasm_sections(data) if data[:4] == b"\0asm" else _native_sections(data)
    except MalformedWasm:
        return []
    return sorted(spans, key=lambda span: span[1])


def first_difference(a: bytes, b: bytes) -> str | None:
    """None when identical; else where they first differ, by section when it can tell."""
    if a == b:
        return None
    offset = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                  min(len(a), len(b)))
    sizes = f"sizes {len(a)} vs {len(b)}"
    spans = section_spans(a)
    for name, start, size in spans:
        if start <= offset < start + size:
            return f"first difference at byte {offset} in section {name} ({sizes})"
    if spans and offset < spans[0][1]:
        return f"first difference at byte {offset} in the file headers ({sizes})"
    return f"first difference at byte {offset}, outside any section ({sizes})"


def compare_files(a: Path, b: Path) -> str | None:
    return first_difference(a.read_bytes(), b.read_bytes())
