"""The SHA-256 of a file, read in blocks by `hashlib.file_digest` (never whole into memory).

Where the bytes are needed anyway (parsed, copied or bounded by `verify.inputs`), callers hash
the bytes they hold instead, so what is hashed is exactly what was used.
"""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of the file at `path` (an OSError as `open` raises it)."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()
