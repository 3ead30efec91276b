"""Where two builds of one artifact part ways: the first differing byte, named by section.

Used by `tinyrustlm-release reproduce` to explain a mismatch; a pure function of two byte
strings (Wasm sections from our own parser, ELF/PE sections from lief).
"""

from __future__ import annotations

import lief

from verify.wasm.errors import MalformedWasm
from verify.wasm.sections import parse_module

Span = tuple[str, int, int]  # section name, file offset, size


def _wasm_sections(data: bytes) -> list[Span]:
    module = parse_module(data)
    standard = [(f"{s.name} (id {s.id})", s.offset, s.size) for s in module.sections]
    return standard + [(f"{s.name} (custom)", s.offset, s.size) for s in module.custom]


def _native_sections(data: bytes) -> list[Span]:
    binary = lief.parse(list(data))
    if binary is None:
        return []
    spans = []
    for section in binary.sections:
        name = section.name
        spans.append(
            (
                name if isinstance(name, str) else name.decode(errors="replace"),
                section.offset,
                section.size,
            )
        )
    return spans


def section_spans(data: bytes) -> list[Span]:
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
    offset = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
    sizes = f"sizes {len(a)} vs {len(b)}"
    # Section layout up to the first difference is shared; take it from whichever side parses
    # (a tampered file may no longer be a well-formed module).
    spans = section_spans(a) or section_spans(b)
    for name, start, size in spans:
        if start <= offset < start + size:
            return f"first difference at byte {offset} in section {name} ({sizes})"
    if spans and offset < spans[0][1]:
        return f"first difference at byte {offset} in the file headers ({sizes})"
    return f"first difference at byte {offset}, outside any section ({sizes})"
