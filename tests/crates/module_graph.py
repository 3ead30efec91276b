"""The `use crate::` graph of a Rust crate: which top-level module uses which, and its cycles.

A module is a top-level room of the crate: `src/a.rs` or `src/a/**.rs` is module `a`; the
crate root (`lib.rs`, `main.rs`) is the tree's trunk, not a room (its `mod` lines and the
items children take from it are the module tree itself, not a dependency). An edge `a -> b`
is any `crate::b...` path in a file of `a` (a `use` line, a grouped `use crate::{b, c}`, an
inline `crate::b::f()`, a macro's `$crate::b::`), comments and string literals excluded.
`super::` and `self::` paths stay inside a room and are not read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT_FILES = ("lib.rs", "main.rs")
# A `crate::` path: `crate::name` or `crate::{...}` (the group is read by _group_heads).
CRATE_PATH = re.compile(r"(?<![\w$])\$?crate\s*::\s*(\{|[A-Za-z_]\w*)")
# Comments and literals that may mention `crate::` without using it (strings first, so a
# `//` inside a string is not a comment; char literals so that '"' opens no string).
NOT_CODE = re.compile(
    r'r(#*)"(?:.|\n)*?"\1'  # raw strings
    r'|"(?:\\.|[^"\\])*"'  # strings
    r"|'(?:\\.|[^'\\])'"  # char literals (a lifetime has no closing quote)
    r"|//[^\n]*"  # line and doc comments
    r"|/\*(?:.|\n)*?\*/"  # block comments (not nested; none in this workspace)
)


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    file: str  # relative to the crate's src/
    line: int


def module_of(path: Path, src: Path) -> str | None:
    """The top-level module a source file belongs to; None for the crate root."""
    rel = path.relative_to(src)
    if len(rel.parts) == 1:
        return None if rel.name in ROOT_FILES else rel.stem
    return rel.parts[0]


def _blank(match: re.Match[str]) -> str:
    return re.sub(r"[^\n]", " ", match.group(0))  # keeps offsets and line numbers


def code_only(text: str) -> str:
    return NOT_CODE.sub(_blank, text)


def _group_heads(text: str, open_at: int) -> list[str]:
    """First names of the paths of the `{...}` group opening at `open_at`."""
    depth, start, heads = 0, open_at + 1, []
    for i in range(open_at, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
        if (text[i] == "," and depth == 1) or depth == 0:
            item = text[start:i].strip()
            name = re.match(r"[A-Za-z_]\w*", item)
            if name:
                heads.append(name.group(0))
            start = i + 1
        if depth == 0:
            return heads
    raise ValueError(f"unclosed `crate::{{` group at offset {open_at}")


def crate_paths(text: str) -> list[tuple[str, int]]:
    """(first path segment after `crate::`, line) of every crate path in code."""
    code = code_only(text)
    found = []
    for m in CRATE_PATH.finditer(code):
        line = code.count("\n", 0, m.start()) + 1
        if m.group(1) == "{":
            found += [(head, line) for head in _group_heads(code, m.start(1))]
        else:
            found.append((m.group(1), line))
    return found


def module_edges(src: Path) -> tuple[set[str], list[Edge]]:
    """The crate's top-level modules and every `crate::` edge between two different ones."""
    files = sorted(src.rglob("*.rs"))
    modules = {m for f in files if (m := module_of(f, src)) is not None}
    edges = []
    for f in files:
        source = module_of(f, src)
        if source is None:
            continue
        for target, line in crate_paths(f.read_text(encoding="utf-8")):
            if target in modules and target != source:
                edges.append(Edge(source, target, f.relative_to(src).as_posix(), line))
    return modules, edges


def find_cycle(modules: set[str], edges: list[Edge]) -> list[Edge] | None:
    """One cycle of the graph as its edges in order (first module first), or None."""
    out: dict[str, dict[str, Edge]] = {m: {} for m in modules}
    for e in edges:
        out[e.source].setdefault(e.target, e)  # the first place each edge is written
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[Edge] = []

    def visit(node: str) -> list[Edge] | None:
        state[node] = 1
        for target, edge in sorted(out[node].items()):
            if state.get(target) == 1:
                # every module on the path but this one left it by an edge of `path`
                start = next(i for i, e in enumerate(path) if e.source == target)
                return [*path[start:], edge]
            if state.get(target) is None:
                path.append(edge)
                found = visit(target)
                if found:
                    return found
                path.pop()
        state[node] = 2
        return None

    for node in sorted(modules):
        if state.get(node) is None and (cycle := visit(node)):
            return cycle
    return None


def describe(cycle: list[Edge]) -> str:
    names = " -> ".join([cycle[0].source, *(e.target for e in cycle)])
    where = "; ".join(f"{e.source} -> {e.target} at {e.file}:{e.line}" for e in cycle)
    return f"module cycle {names} ({where})"
