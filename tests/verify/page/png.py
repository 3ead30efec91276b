"""Just enough PNG to tell a blank screenshot from a drawn one (standard library only)."""

from __future__ import annotations

import struct
import zlib


def png_facts(data: bytes) -> tuple[int, int, int]:
    """(width, height, distinct byte values in the decompressed scanlines)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    at, idat, width, height = 8, b"", 0, 0
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind = data[at + 4 : at + 8]
        body = data[at + 8 : at + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    return width, height, len(set(zlib.decompress(idat)))
