"""Typed error for native binaries lief cannot read."""

from __future__ import annotations

from verify.errors import VerifyError


class MalformedNative(VerifyError):
    """Not a readable ELF or PE file."""

    error_id = "native.malformed"
    default_hint = "the file is not a readable ELF or PE binary: rebuild it, or check the --lane"
