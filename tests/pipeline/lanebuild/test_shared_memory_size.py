"""The threads lane's fixed shared memory admits the largest model the project packs.

The size in lanes.toml (initial == maximum, no growth) must hold tr_preflight's peak for the
`bench` preset at its full context, plus the model's own bytes in the host transfer window
while it is loaded.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pipeline.modelpack import PRESETS, pack
from pipeline.tree.lanes import load_lanes

pytestmark = pytest.mark.integration


def test_bench_model_fits_the_threads_lane_memory(built_clone: Path, tmp_path: Path) -> None:
    model = tmp_path / "bench.trlm"
    model.write_bytes(pack(PRESETS["bench"], 7))
    index = json.loads((built_clone / "build" / "index.json").read_text(encoding="utf-8"))
    native = next(e for e in index["lanes"] if e["lane"] == "x86_64-unknown-linux-gnu")
    done = subprocess.run(
        [str(built_clone / native["artifact"]), "inspect-model", str(model), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    plan = json.loads(done.stdout)
    needed = max(plan["peak_prefill_bytes"], plan["steady_decode_bytes"]) + model.stat().st_size
    lanes = load_lanes(built_clone / "manifests" / "lanes.toml")
    threads = lanes.select(["simd128-threads-wasm32"])[0]
    assert threads.shared_memory_bytes is not None
    assert needed <= threads.shared_memory_bytes, (needed, threads.shared_memory_bytes)
