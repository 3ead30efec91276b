"""The threads lane's import admits the largest model the project packs.

The host creates the threads lane's shared memory itself, initial == maximum, at the memory
plan's peak and within the limits the module's import declares (lanes.toml `shared_memory`,
linked as --initial-memory/--max-memory): the `bench` preset's plan (2 workers, its full
context, loaded in place; `inspect-model --plan`) must lie within them.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pipeline.modelpack import PRESETS, pack
from pipeline.tree.lanes import WASM_PAGE, load_lanes

pytestmark = pytest.mark.integration


def test_bench_model_fits_the_threads_lane_import(built_clone: Path, tmp_path: Path) -> None:
    model = tmp_path / "bench.trlm"
    model.write_bytes(pack(PRESETS["bench"], 7))
    index = json.loads((built_clone / "build" / "index.json").read_text(encoding="utf-8"))
    native = next(e for e in index["lanes"] if e["lane"] == "x86_64-unknown-linux-gnu")
    cli = built_clone / native["artifact"]
    done = subprocess.run(
        [str(cli), "inspect-model", str(model), "--plan", "--workers", "2", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    plan = json.loads(done.stdout)
    assert plan["parts"]["load_copy"] == 0 and plan["workers"] == 2
    lanes = load_lanes(built_clone / "manifests" / "lanes.toml")
    limits = lanes.select(["simd128-threads-wasm32"])[0].shared_memory
    assert limits is not None
    created = max(limits.min_bytes, -(-plan["peak_bytes"] // WASM_PAGE) * WASM_PAGE)
    assert limits.min_bytes <= created <= limits.max_bytes, (created, limits)
