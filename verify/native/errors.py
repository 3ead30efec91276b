"""Typed error for native binaries lief cannot read."""

from __future__ import annotations

from verify.errors import VerifyError


class MalformedNative(VerifyError):
    """Not a readable ELF or PE file."""
