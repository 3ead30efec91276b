"""crates/wasm/js/constants.js is generated from its Rust sources (pipeline/jsconstants.py):
current, and the generator follows a change of each source."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pipeline import jsconstants
from pipeline.errors import PipelineError

REPO_ROOT = Path(__file__).resolve().parents[3]
SOURCES = (
    jsconstants.LANES_RS,
    jsconstants.KERNELS_RS,
    jsconstants.CATEGORIES_RS,
    jsconstants.QUANT_RS,
    jsconstants.MODEL_RS,
)


def test_constants_js_is_current() -> None:
    assert jsconstants.main(["--check"]) == 0


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the Rust sources the generator reads."""
    for rel in SOURCES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO_ROOT / rel, tmp_path / rel)
    for path in (REPO_ROOT / jsconstants.WASM_SRC).glob("*.rs"):
        shutil.copy(path, tmp_path / jsconstants.WASM_SRC / path.name)
    return tmp_path


def edit(root: Path, rel: Path, old: str, new: str) -> None:
    text = (root / rel).read_text(encoding="utf-8")
    assert old in text, f"{rel} no longer has {old!r}"
    (root / rel).write_text(text.replace(old, new), encoding="utf-8")


def test_a_renamed_category_reaches_the_js(tree: Path) -> None:
    edit(tree, jsconstants.CATEGORIES_RS, '"prng"]', '"rng"]')
    assert jsconstants.categories(tree)[-1] == "rng"
    assert "'rng'" in jsconstants.render(tree)


def test_a_new_layout_reaches_the_js(tree: Path) -> None:
    edit(
        tree,
        jsconstants.QUANT_RS,
        '(2, Layout::Q4, "q4-block-v1")]',
        '(2, Layout::Q4, "q4-block-v1"), (3, Layout::Q4, "q2-block-v1")]',
    )
    edit(
        tree,
        jsconstants.QUANT_RS,
        "LAYOUTS: [(u32, Layout, &str); 3]",
        "LAYOUTS: [(u32, Layout, &str); 4]",
    )
    assert jsconstants.layouts(tree) == ["f32", "q8-block-v1", "q4-block-v1", "q2-block-v1"]


def test_the_model_tiers_and_integer_kernel_sets_come_from_rust(tree: Path) -> None:
    assert jsconstants.model_tiers(tree) == {1: "f32", 2: "int8"}
    assert jsconstants.model_magic(tree) == "TRLMODEL"
    assert jsconstants.kernel_sets(tree, "KERNEL_SET_INT8", "int8-v1")[0] == "scalar-int8-v1"
    edit(
        tree, jsconstants.MODEL_RS, "FORMAT_VERSION_INT8: u32 = 2;", "FORMAT_VERSION_INT8: u32 = 7;"
    )
    assert jsconstants.model_tiers(tree) == {1: "f32", 7: "int8"}
    assert "MODEL_TIERS = Object.freeze({ 1: 'f32', 7: 'int8' })" in jsconstants.render(tree)


def test_a_tier_from_version_does_not_map_is_an_error(tree: Path) -> None:
    edit(tree, jsconstants.MODEL_RS, "FORMAT_VERSION_INT8 => Ok(Tier::Int8),", "")
    with pytest.raises(PipelineError, match="does not name every tier"):
        jsconstants.model_tiers(tree)


def test_a_lane_without_its_kernel_set_is_an_error(tree: Path) -> None:
    edit(
        tree,
        jsconstants.LANES_RS,
        "pub const LANE_SIMD128: u32 = 1;",
        "pub const LANE_SIMD256: u32 = 1;",
    )
    with pytest.raises(PipelineError, match="LANE_SIMD256"):
        jsconstants.kernel_sets(tree)


def test_an_export_the_loader_needs_must_exist(tree: Path) -> None:
    edit(tree, jsconstants.WASM_SRC / "lib.rs", "fn tr_path_counters(", "fn tr_path_counts(")
    with pytest.raises(PipelineError, match="tr_path_counters"):
        jsconstants.render(tree)
