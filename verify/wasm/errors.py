"""Typed parse errors: every one names what was being read and the byte offset."""

from __future__ import annotations

from verify.errors import VerifyError


class MalformedWasm(VerifyError):
    """The bytes are not a well-formed WebAssembly module (offset is absolute in the file)."""

    error_id = "wasm.malformed"
    default_hint = (
        "the file is not a well-formed WebAssembly module at that offset: rebuild it, or check "
        "you gave the right file"
    )

    def __init__(self, message: str, offset: int, *, where: str = "") -> None:
        super().__init__(message, where=where, offset=offset)
