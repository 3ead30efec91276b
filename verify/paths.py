"""Find strings that look like absolute file-system paths in raw bytes (wasm or native).

A build path leaks the builder's machine into the artifact and breaks reproducibility;
which prefixes are acceptable is policy (verify/policy/*.json), not decided here.
"""

from __future__ import annotations

import re

# A POSIX path with at least two components, the first of two or more characters, not
# preceded by a path character (so `src/lib.rs` inside a relative path is not taken for
# `/lib.rs`); or a drive path with a two-letter run somewhere. The length rules keep short
# byte patterns in machine code (`/u/A`, `A:\-`) from looking like paths.
_POSIX = rb"(?<![\w.~/-])/[A-Za-z_.][\w.+@-]+(?:/[\w.+@-]+)+/?"
_WINDOWS = rb"(?<![A-Za-z0-9])[A-Za-z]:[\\/](?:[\w.+@ -]+[\\/])*[\w.+@-]*[A-Za-z]{2}[\w.+@-]*"
PATH_PATTERN = re.compile(_POSIX + b"|" + _WINDOWS)
MAX_REPORTED = 200  # enough to judge; bounds the report for a pathological input


def absolute_paths(data: bytes) -> tuple[str, ...]:
    """Distinct path-like strings in first-seen order (decoded as latin-1, never failing)."""
    seen: dict[str, None] = {}
    for match in PATH_PATTERN.finditer(data):
        seen.setdefault(match.group().decode("latin-1"), None)
        if len(seen) >= MAX_REPORTED:
            break
    return tuple(seen)


def outside(paths: tuple[str, ...], allowed_prefixes: tuple[str, ...]) -> tuple[str, ...]:
    """The paths under none of the allowed prefixes ("/a/b/" also allows the directory "/a/b")."""
    exact = tuple(prefix.rstrip("/") for prefix in allowed_prefixes)
    return tuple(p for p in paths if not p.startswith(allowed_prefixes) and p not in exact)
