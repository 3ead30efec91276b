"""Release versions as comparable numbers, for `verify bundle --not-before-version V`.

A release version is dotted decimal numbers (`0.1.0`, `2.10.3`), compared number by number
(so 2.10 > 2.9) with missing trailing parts as zero (1.2 == 1.2.0).
"""

from __future__ import annotations

import re

_VERSION = re.compile(r"^(0|[1-9][0-9]{0,8})(\.(0|[1-9][0-9]{0,8})){0,7}$")


def version_key(text: str) -> tuple[int, ...] | None:
    """Comparable form of `text`, or None when it is not dotted decimal numbers."""
    if _VERSION.match(text) is None:
        return None
    parts = [int(p) for p in text.split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)
