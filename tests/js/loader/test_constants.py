"""crates/wasm/js/constants.js is generated from its Rust sources, verify's lane policy and
feature table, and the probe sources (pipeline/js/constants.py): current, and the generator
follows a change of each source."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from pipeline.errors import PipelineError
from pipeline.js import constants
from pipeline.js.probes import SOURCE_DIR as PROBES_DIR
from verify.policy import WasmPolicy, load_wasm_policies
from verify.wasm.features import Proposal

REPO_ROOT = Path(__file__).resolve().parents[3]
SOURCES = (
    constants.LANES_RS,
    constants.KERNELS_RS,
    constants.CATEGORIES_RS,
    constants.QUANT_RS,
    constants.MODEL_RS,
    constants.REUSE_RS,
)


def test_constants_js_is_current() -> None:
    assert constants.main(["--check"]) == 0


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the Rust sources the generator reads."""
    for rel in SOURCES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO_ROOT / rel, tmp_path / rel)
    for path in (REPO_ROOT / constants.WASM_SRC).glob("*.rs"):
        shutil.copy(path, tmp_path / constants.WASM_SRC / path.name)
    shutil.copytree(REPO_ROOT / PROBES_DIR, tmp_path / PROBES_DIR)
    return tmp_path


def edit(root: Path, rel: Path, old: str, new: str) -> None:
    text = (root / rel).read_text(encoding="utf-8")
    assert old in text, f"{rel} no longer has {old!r}"
    (root / rel).write_text(text.replace(old, new), encoding="utf-8")


def test_a_renamed_category_reaches_the_js(tree: Path) -> None:
    edit(tree, constants.CATEGORIES_RS, '"prng"]', '"rng"]')
    assert constants.categories(tree)[-1] == "rng"
    assert "'rng'" in constants.render(tree)


def test_a_new_layout_reaches_the_js(tree: Path) -> None:
    edit(
        tree,
        constants.QUANT_RS,
        '(2, Layout::Q4, "q4-block-v1")]',
        '(2, Layout::Q4, "q4-block-v1"), (3, Layout::Q4, "q2-block-v1")]',
    )
    edit(
        tree,
        constants.QUANT_RS,
        "LAYOUTS: [(u32, Layout, &str); 3]",
        "LAYOUTS: [(u32, Layout, &str); 4]",
    )
    assert constants.layouts(tree) == ["f32", "q8-block-v1", "q4-block-v1", "q2-block-v1"]


def test_the_model_tiers_and_integer_kernel_sets_come_from_rust(tree: Path) -> None:
    assert constants.model_tiers(tree) == {1: "f32", 2: "int8"}
    assert constants.model_magic(tree) == "TRLMODEL"
    assert constants.kernel_sets(tree, "KERNEL_SET_INT8", "int8-v1")[0] == "scalar-int8-v1"
    edit(tree, constants.MODEL_RS, "FORMAT_VERSION_INT8: u32 = 2;", "FORMAT_VERSION_INT8: u32 = 7;")
    assert constants.model_tiers(tree) == {1: "f32", 7: "int8"}
    assert "MODEL_TIERS = Object.freeze({ 1: 'f32', 7: 'int8' })" in constants.render(tree)


def test_a_tier_from_version_does_not_map_is_an_error(tree: Path) -> None:
    edit(tree, constants.MODEL_RS, "FORMAT_VERSION_INT8 => Ok(Tier::Int8),", "")
    with pytest.raises(PipelineError, match="does not name every tier"):
        constants.model_tiers(tree)


def test_a_lane_without_its_kernel_set_is_an_error(tree: Path) -> None:
    edit(
        tree,
        constants.LANES_RS,
        "pub const LANE_SIMD128: u32 = 1;",
        "pub const LANE_SIMD256: u32 = 1;",
    )
    with pytest.raises(PipelineError, match="LANE_SIMD256"):
        constants.kernel_sets(tree)


def test_an_export_the_loader_needs_must_exist(tree: Path) -> None:
    edit(tree, constants.WASM_SRC / "lib.rs", "fn tr_path_counters(", "fn tr_path_counts(")
    with pytest.raises(PipelineError, match="tr_path_counters"):
        constants.render(tree)


THREADS = "simd128-threads-wasm32"
RELAXED_THREADS = "relaxed-simd128-threads-wasm32"  # shares the threads lane's exports


def changed(lane: str, **fields: object) -> dict[str, WasmPolicy]:
    """The shipped wasm lane policies with `fields` of `lane` replaced."""
    policies = load_wasm_policies()
    policies[lane] = dataclasses.replace(policies[lane], **fields)  # type: ignore[arg-type]
    return policies


def changed_threads(**fields: object) -> dict[str, WasmPolicy]:
    """`changed` on every shared-memory lane alike (the loader has one list for them)."""
    policies = load_wasm_policies()
    for lane in (THREADS, RELAXED_THREADS):
        policies[lane] = dataclasses.replace(policies[lane], **fields)  # type: ignore[arg-type]
    return policies


def test_the_loader_exports_are_the_lane_policy() -> None:
    policies = load_wasm_policies()
    required, threads = constants.loader_exports(policies)
    assert required == ["memory", *policies["scalar-wasm32"].required_exports]
    assert set(threads) == {
        *policies[THREADS].required_exports,
        *policies[THREADS].required_globals,
    } - set(required)
    assert {"tr_worker_main", "__stack_pointer", "__tls_base"} <= set(threads)


def test_an_export_added_to_the_policy_reaches_the_js(tree: Path) -> None:
    extra = (*load_wasm_policies()[THREADS].required_exports, "tr_fault_cancel_at_barrier")
    text = constants.render(tree, changed_threads(required_exports=extra))
    threads_line = next(line for line in text.splitlines() if "THREADS_EXPORTS =" in line)
    assert "'tr_fault_cancel_at_barrier'" in threads_line


@pytest.mark.parametrize(
    ("lane", "fields", "message"),
    [
        ("scalar-wasm32", {"required_globals": ("__stack_pointer",)}, "other exports than"),
        ("simd128-wasm32", {"required_exports": ("tr_abi_version",)}, "other exports than"),
        (THREADS, {"required_exports": ("tr_worker_main",)}, "lacks an export"),
        (THREADS, {"memory": dataclasses.replace(
            load_wasm_policies()[THREADS].memory, source="export")}, "import its shared memory"),
    ],
    ids=["single-lane-extra", "single-lane-fewer", "threads-lane-fewer", "threads-own-memory"],
)  # fmt: skip
def test_a_policy_the_loader_cannot_check_is_an_error(
    lane: str, fields: dict[str, object], message: str
) -> None:
    with pytest.raises(PipelineError, match=message):
        constants.loader_exports(changed(lane, **fields))


def test_an_export_the_policy_requires_must_exist_in_rust(tree: Path) -> None:
    extra = (*load_wasm_policies()[THREADS].required_exports, "tr_not_in_rust")
    with pytest.raises(PipelineError, match="tr_not_in_rust"):
        constants.render(tree, changed_threads(required_exports=extra))


def test_feature_probes_come_from_the_feature_table_and_policy() -> None:
    ids = ["bulk-memory", "relaxed-simd", "simd128", "threads", "other"]
    probes = constants.feature_probes(load_wasm_policies(), ids)
    assert probes["mutable-globals"] is None  # the lowest lane's: no probe
    assert probes["simd128"] == "simd128"  # a probe named by the LLVM name
    assert probes["relaxed-simd"] == "relaxed-simd"  # the relaxed lanes' feature
    assert probes["atomics"] == "threads"  # ... or by verify's proposal name
    assert "memory64" not in probes  # no probe, and no lane allows it


def test_a_lane_feature_without_a_probe_is_an_error(tree: Path) -> None:
    (tree / PROBES_DIR / "bulk-memory.wat").unlink()
    with pytest.raises(PipelineError, match="bulk-memory"):
        constants.render(tree)


def test_a_feature_the_lowest_lane_gains_needs_no_probe() -> None:
    base = load_wasm_policies()["scalar-wasm32"].allowed
    policies = changed("scalar-wasm32", allowed=base | Proposal.SIGN_EXTENSION)
    probes = constants.feature_probes(
        policies, ["bulk-memory", "relaxed-simd", "simd128", "threads"]
    )
    assert probes["sign-ext"] is None
