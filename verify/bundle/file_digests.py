"""What a document claims of the bundle's files against what the files hold: SHA-256 digests,
and the differences of two name -> digest tables, as one refusal names them."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def differences(claimed: Mapping[str, str], actual: Mapping[str, str]) -> str:
    """ "" when equal; else which names differ in digest, are not named, or are unknown."""
    wrong = sorted(n for n in claimed.keys() & actual.keys() if claimed[n] != actual[n])
    missing = sorted(actual.keys() - claimed.keys())
    extra = sorted(claimed.keys() - actual.keys())
    parts = [
        f"{label}: {', '.join(names)}"
        for label, names in (
            ("digest differs", wrong),
            ("not named", missing),
            ("names unknown files", extra),
        )
        if names
    ]
    return "; ".join(parts)
