"""Bad input to `build`: a compiler error and a missing toolchain are clear, and leave nothing
that a later step could pick up."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clones import clone_head, run_build

pytestmark = pytest.mark.integration


def test_a_compiler_error_names_lane_argv_and_the_compilers_last_lines(tmp_path: Path) -> None:
    clone = clone_head(tmp_path / "broken")
    lib = clone / "crates" / "core" / "src" / "lib.rs"
    lib.write_text(lib.read_text(encoding="utf-8") + "\nfn broken( {\n", encoding="utf-8")
    done = run_build(clone, lanes=["scalar-wasm32"])
    assert done.returncode == 3
    assert "lane scalar-wasm32: cargo failed" in done.stderr
    assert "argv: /usr/bin/cargo build --release --locked" in done.stderr
    assert "error" in done.stderr.split("last lines:")[1]
    assert "Traceback" not in done.stderr
    index = json.loads((clone / "build" / "index.json").read_text(encoding="utf-8"))
    assert [e["lane"] for e in index["lanes"]] == []
    assert [p.name for p in (clone / "build" / "scalar-wasm32").iterdir()] == []


def test_a_missing_toolchain_points_to_toolchain_install(tmp_path: Path) -> None:
    clone = clone_head(tmp_path / "no-cargo")
    lock = clone / "toolchain.lock"
    lock.write_text(
        lock.read_text(encoding="utf-8").replace(
            'cargo = "/usr/bin/cargo"', 'cargo = "/usr/bin/cargo-not-installed"'
        ),
        encoding="utf-8",
    )
    done = run_build(clone, lanes=["scalar-wasm32"])
    assert done.returncode == 1
    assert "rustc.cargo_version" in done.stderr
    assert "tinyrustlm-release toolchain install" in done.stderr
    assert not (clone / "build" / "index.json").exists()
