"""Builder-independent names for builder locations, and the check that none leaked.

Everything a release publishes (build records, SBOM, provenance, manifest, report) names a
location on the builder's machine by a placeholder, never by its absolute path: the checkout
(often under a user's home) is `$WORKSPACE`, cargo's home `$CARGO_HOME`. So two maintainers
releasing one commit with one key sign the same bytes, and no directory layout is published.

What counts as a leaked path (`absolute_paths_outside`): a `/` that starts a path — at the
start of a string or after a character that cannot end a name (not a letter, digit, `_`, `.`,
`/`, `~`, `$`, `@`, `%`, `-`), and not followed by another `/` (URLs; purls' `/` follow a
letter) — up to the next whitespace, `=`, `:`, `,`, `;` or quote, whose path is not under
one of `MACHINE_INDEPENDENT_ROOTS`. Those are the only absolute paths that are the same on
every machine: the Debian system folders the pinned toolchain lives in (`/usr/bin/rustc`,
`/usr/bin:/bin`), and the fixed targets `--remap-path-prefix` maps the builder's paths to
(`manifests/lanes.toml` `remap_workspace` and `remap_cargo_home`; a test keeps them covered).
A builder's location written as a URL counts too (`builder_urls_in`): any `file:/` URL (a
folder of the machine that wrote it, whatever its path; `file:artifacts/...`, a relative
reference such as the SBOM's, names a bundle file), and any URL of a loopback host
(`localhost`, `127.x.x.x`, `[::1]`, `0.0.0.0`: a server of that machine, often on a port of
the run).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

WORKSPACE = "$WORKSPACE"  # the repository checkout the build ran in
CARGO_HOME = "$CARGO_HOME"  # the CARGO_HOME the build gave cargo
STD_SYSROOT = "$STD_SYSROOT"  # the cache folder of std rebuilt for the lane (by its key)

# First path components that name the same thing on every Debian machine.
MACHINE_INDEPENDENT_ROOTS: tuple[str, ...] = (
    "/usr/",
    "/bin/",
    "/lib/",
    "/lib64/",
    "/sbin/",
    "/src/tinyrustlm",  # remap target of the workspace
    "/cargo",  # remap target of CARGO_HOME
    "/rustc/",  # remap target of the std sources (rustup's convention: /rustc/<commit>)
    "/rustc-std",  # remap target of the scratch folder std is rebuilt in
    "/rustc-sysroot",  # remap target of the rebuilt std's sysroot folder
)
_SYSTEM_FOLDERS = frozenset(root.rstrip("/") for root in MACHINE_INDEPENDENT_ROOTS)

# An absolute path: "/" + a non-empty run up to the next separator, where the "/" is not
# preceded by a path/word character or another slash, nor followed by one (`https://`).
_ABSOLUTE = re.compile(r"(?<![\w./~$@%-])/(?!/)[^\s=:,;'\"\x00-\x1f]*")


def to_placeholders(text: str, places: Sequence[tuple[str, str]]) -> str:
    """`text` with each real path of `places` ((real path, placeholder) pairs) replaced by
    its placeholder; longer real paths first, so a folder inside another keeps its own name."""
    for real, placeholder in sorted(places, key=lambda p: len(p[0]), reverse=True):
        if real:
            text = text.replace(real, placeholder)
    return text


def _allowed(path: str) -> bool:
    return path in _SYSTEM_FOLDERS or path.startswith(MACHINE_INDEPENDENT_ROOTS)


def absolute_paths_in(text: str) -> list[str]:
    """Every absolute path in `text` that is not machine-independent."""
    return [m.group(0) for m in _ABSOLUTE.finditer(text) if not _allowed(m.group(0))]


# A URL naming the machine that wrote it: an absolute file: URL, or a loopback host's.
_BUILDER_URL = re.compile(
    r"(?i)\bfile:/[^\s'\"\x00-\x1f]*"
    r"|\b[a-z][a-z0-9+.-]*://(?:[^/\s'\"@]*@)?"
    r"(?:localhost|127(?:\.[0-9]{1,3}){3}|0\.0\.0\.0|\[(?:0*:)*:?0*1\])(?![\w.-])"
    r"[^\s'\"\x00-\x1f]*"
)


def builder_urls_in(text: str) -> list[str]:
    """Every URL in `text` that names the builder's machine (a file: or loopback URL)."""
    return [m.group(0) for m in _BUILDER_URL.finditer(text)]


def builder_locations_in(text: str) -> list[str]:
    """Every builder location in `text`: absolute paths outside the machine-independent
    ones, and URLs of the builder's machine."""
    return builder_urls_in(text) + absolute_paths_in(text)


@dataclass(frozen=True)
class LeakedPath:
    where: str  # JSON pointer-ish location, e.g. predicate.buildDefinition...env.HOME
    path: str


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield f"{where}.{key}", str(key)
            yield from _strings(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{where}[{i}]")


def absolute_paths_outside(document: Any, where: str = "") -> list[LeakedPath]:
    """Every leaked builder location (absolute path, file: or loopback URL) in any string
    (keys included) of a parsed JSON document."""
    return [
        LeakedPath(at, path)
        for at, text in _strings(document, where)
        for path in builder_locations_in(text)
    ]
