"""Fixtures for the lane tests: the five wasm lanes built by the real driver, the kernel
harness built with each lane's flags, the `small` model, and the node driver (drive.mjs)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pipeline.bench.harness_build import build_kernel_harness
from pipeline.lanebuild.driver import build_lanes
from pipeline.modelpack import PRESETS, pack
from pipeline.toolchain import nodejs
from pipeline.tree.lanes import load_lanes
from pipeline.tree.snapshot import read_tree

REPO_ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent
GOLDEN = REPO_ROOT / "tests" / "golden"
WASM_LANES = (
    "scalar-wasm32",
    "simd128-wasm32",
    "simd128-threads-wasm32",
    "relaxed-simd128-wasm32",
    "relaxed-simd128-threads-wasm32",
)
# node must never hang a test run: every driver call is bounded
DRIVE_TIMEOUT_S = 300

Drive = Callable[..., Any]


def _require_tools() -> None:
    if not Path("/usr/bin/rustc").exists():
        pytest.skip("pinned toolchain not installed: run `tinyrustlm-release toolchain install`")
    nodejs.executable()  # the project's node (requirements.lock); missing -> NodeMissing


@pytest.fixture(scope="session")
def wasm_lanes() -> dict[str, Path]:
    """lane id -> artifact, built (or taken from the cache) by pipeline.lanebuild."""
    _require_tools()
    index = build_lanes(read_tree(REPO_ROOT), lanes=list(WASM_LANES), say=lambda _line: None)
    return {e.lane: REPO_ROOT / e.artifact for e in index.lanes if e.lane in WASM_LANES}


@pytest.fixture(scope="session")
def harness() -> Callable[[str], Path]:
    """lane id -> the kernel harness (pipeline/bench/harness) built with that lane's target
    features (cached)."""
    _require_tools()
    lanes = {lane.id: lane for lane in load_lanes(REPO_ROOT / "manifests" / "lanes.toml").lane}
    built: dict[str, Path] = {}

    def build(lane_id: str) -> Path:
        if lane_id not in built:
            built[lane_id] = build_kernel_harness(REPO_ROOT, lanes[lane_id])
        return built[lane_id]

    return build


@pytest.fixture(scope="session")
def small_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The golden vectors' `small` model fixture (pack-model --preset small --seed 7)."""
    data = pack(PRESETS["small"], 7)
    fixture = json.loads((GOLDEN / "e2e_decode.json").read_text())[0]["inputs"]["model"]
    assert hashlib.sha256(data).hexdigest() == fixture["sha256"], (
        "packer no longer makes the golden fixture"
    )
    path = tmp_path_factory.mktemp("models") / "small.trlm"
    path.write_bytes(data)
    return path


@pytest.fixture(scope="session")
def drive() -> Drive:
    """Runs `node tests/crates/lanes/drive.mjs ARGS...` and returns its JSON document."""

    def run(
        *args: str | Path, timeout: float = DRIVE_TIMEOUT_S, script: Path = HERE / "drive.mjs"
    ) -> Any:
        done = subprocess.run(
            [str(nodejs.executable()), str(script), *map(str, args)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "NODE_NO_WARNINGS": "1"},
        )
        if done.returncode != 0:
            tail = done.stderr[-4000:]
            pytest.fail(f"{script.name} {args[0]} failed ({done.returncode}):\n{tail}")
        return json.loads(done.stdout)

    return run
