"""The lane cache key covers the driver's own code: editing how the driver calls cargo
invalidates every cached lane, with no version constant to bump by hand. Fast."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pipeline.lanebuild import inputs
from pipeline.tree.lanes import load_lanes

REPO_ROOT = Path(__file__).resolve().parents[3]
LANE = load_lanes(REPO_ROOT / "manifests" / "lanes.toml").lane[0]
# (file of the driver package, text to find, replacement): edits a maintainer could make
EDITS = [
    ("cargo.py", '"--remap-path-prefix", f"{workspace}={lanes.remap_workspace}",', ""),
    ("stdbuild.py", '"CARGO_INCREMENTAL": "0",', '"CARGO_INCREMENTAL": "1",'),
    ("stdbuild.py", '"-C", "embed-bitcode=yes",', '"-C", "embed-bitcode=no",'),
    ("smoke.py", '"--workers", "2"', '"--workers", "1"'),
]


def _key(monkeypatch: pytest.MonkeyPatch, driver: Path) -> str:
    monkeypatch.setattr(inputs, "DRIVER_DIR", driver)
    return inputs.lane_inputs(LANE, REPO_ROOT / "crates", "1" * 64, "0" * 64).input_digest


@pytest.mark.parametrize(
    ("name", "find", "replace"), EDITS, ids=[f"{e[0]}:{e[2] or 'drop'}" for e in EDITS]
)
def test_a_driver_edit_changes_every_lanes_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str, find: str, replace: str
) -> None:
    copy = tmp_path / "driver"
    shutil.copytree(inputs.DRIVER_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = _key(monkeypatch, copy)
    assert before == _key(monkeypatch, inputs.DRIVER_DIR)  # the copy is the driver
    text = (copy / name).read_text()
    assert text.count(find) == 1, f"{name} no longer holds {find!r}"
    (copy / name).write_text(text.replace(find, replace))
    assert _key(monkeypatch, copy) != before


def test_the_key_is_stable_for_an_unchanged_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _key(monkeypatch, inputs.DRIVER_DIR) == _key(monkeypatch, inputs.DRIVER_DIR)


def test_a_wasm_host_edit_changes_the_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The wasmtime smoke runs through pipeline/wasmhost.py: its engine is part of the key."""
    copy = tmp_path / "wasmhost.py"
    text = inputs.WASM_HOST.read_text()
    find = "config.wasm_multi_memory = False"
    assert text.count(find) == 1, f"wasmhost.py no longer holds {find!r}"
    copy.write_text(text)
    monkeypatch.setattr(inputs, "WASM_HOST", copy)
    before = _key(monkeypatch, inputs.DRIVER_DIR)
    copy.write_text(text.replace(find, "config.wasm_multi_memory = True"))
    assert _key(monkeypatch, inputs.DRIVER_DIR) != before
