"""The `use crate::` graph of crates/cli and crates/core has no cycle (tests/crates/module_graph.py
reads it); the reader's own cases on small made-up crates, each able to fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.crates.module_graph import crate_paths, describe, find_cycle, module_edges

CRATES = Path(__file__).resolve().parents[2] / "crates"
CHECKED = ("cli", "core")


@pytest.mark.parametrize("crate", CHECKED)
def test_the_crate_has_no_module_cycle(crate: str) -> None:
    modules, edges = module_edges(CRATES / crate / "src")
    assert len(modules) >= 5, "the reader found the crate's modules"
    assert edges, "the reader found the crate's `crate::` edges"
    cycle = find_cycle(modules, edges)
    assert cycle is None, f"crates/{crate}: {describe(cycle)}"


PATHS = [
    ("use-line", "use crate::a::{self, B};", ["a"]),
    ("grouped-use", "use crate::{a, b::C, c::{d, e}};", ["a", "b", "c"]),
    ("multi-line-group", "use crate::{\n    a,\n    b::{C, D},\n};", ["a", "b"]),
    ("inline-path", "let x = crate::a::f(crate::b::G);", ["a", "b"]),
    ("macro-crate", "$crate::error::E::stdout", ["error"]),
    ("spaced", "use crate :: a;", ["a"]),
    ("line-comment", "// crate::a::f\n/// see crate::b\n//! crate::c", []),
    ("block-comment", "/* crate::a */ x", []),
    ("string", 'let s = "crate::a"; let r = r#"crate::b"#;', []),
    ("char-then-path", "let q = '\"'; crate::a::f();", ["a"]),
    ("other-crate", "use tinyrustlm_core::a; use mycrate::b;", []),
]


@pytest.mark.parametrize(("text", "heads"), [p[1:] for p in PATHS], ids=[p[0] for p in PATHS])
def test_crate_paths(text: str, heads: list[str]) -> None:
    assert [h for h, _line in crate_paths(text)] == heads


def _crate(root: Path, files: dict[str, str]) -> Path:
    src = root / "src"
    for name, text in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    return src


GRAPHS = [
    ("acyclic", {"a.rs": "use crate::b::X;", "b.rs": "use crate::c;", "c.rs": ""}, None),
    (
        "two-module-cycle",
        {"a.rs": "use crate::b::X;", "b.rs": "\n\nfn f() { crate::a::g() }"},
        "module cycle a -> b -> a (a -> b at a.rs:1; b -> a at b.rs:3)",
    ),
    (
        "three-module-cycle-behind-a-tail",
        {
            "t.rs": "use crate::a;",
            "a.rs": "use crate::b;",
            "b.rs": "use crate::c;",
            "c.rs": "use crate::{t2, a};",
            "t2.rs": "",
        },
        "module cycle a -> b -> c -> a (a -> b at a.rs:1; b -> c at b.rs:1; c -> a at c.rs:1)",
    ),
    (
        "nested-files-are-one-module",
        {
            "k/mod.rs": "use crate::m;",
            "k/s.rs": "use crate::k::X;",
            "m.rs": "use crate::q;",
            "q.rs": "",
        },
        None,
    ),
    (
        "cycle-through-a-nested-file",
        {"k/mod.rs": "", "k/s.rs": "use crate::m;", "m.rs": "use crate::k::s::f;"},
        "module cycle k -> m -> k (k -> m at k/s.rs:1; m -> k at m.rs:1)",
    ),
    (
        "root-items-are-not-edges",
        {"lib.rs": "mod a; mod b; use crate::a::X;", "a.rs": "use crate::Root;", "b.rs": ""},
        None,
    ),
]


@pytest.mark.parametrize(("files", "want"), [g[1:] for g in GRAPHS], ids=[g[0] for g in GRAPHS])
def test_find_cycle(tmp_path: Path, files: dict[str, str], want: str | None) -> None:
    cycle = find_cycle(*module_edges(_crate(tmp_path, files)))
    assert (None if cycle is None else describe(cycle)) == want
