"""Failure injection at the seams (issue 33 item 6) through the loader's session API on the real
Wasm lanes (tests/crates/lanes/seams.mjs): a prefill in JS chunks of 1, 16, 17, 64 and 256 (the
largest tile of the `small` model's context) tokens, cancelled inside the operation at the
first, a middle and the last barrier of every forward (threads lane) or after every chunk
(simd128): what `prefill()` reports committed is exactly the session's position (a tile
boundary), the cache holds exactly those tokens, and resuming gives the uncancelled digest and
tokens. That no K/V row beyond the committed count is read is proven in Rust
(crates/core/tests/prefill_cancel_poison.rs: NaN in every uncommitted row changes nothing).
A worker or the leader killed mid-prefill gives `LoaderError` `WorkerFailure` (never a hang:
every driver call is bounded), every later call too, and the lane is recorded as failed: the
next load's lane choice skips it (`LaneFailed`) and the next lane gives the tokens the threads
lane gave before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.crates.lanes.conftest import Drive

HERE = Path(__file__).resolve().parent
THREADS = "simd128-threads-wasm32"
SIMD = "simd128-wasm32"
SCALAR = "scalar-wasm32"
# (JS chunk, Rust tile): chunks smaller, equal, one over, a multiple of the tile, and the
# largest tile (256 = the `small` model's context)
RUNS = [(1, 16), (16, 16), (17, 16), (64, 16), (256, 16), (256, 256), (64, 17)]

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def seams(drive: Drive) -> Drive:
    def run(*args: str | Path) -> Any:
        return drive(*args, script=HERE / "seams.mjs", timeout=240)

    return run


def commit_points(prompt: int, chunk: int, tile: int) -> list[int]:
    """Every position a cancel may leave: each tile boundary inside each chunk."""
    points = {0}
    for start in range(0, prompt, chunk):
        end = min(start + chunk, prompt)
        points |= {min(start + t, end) for t in range(tile, end - start + tile, tile)}
    return sorted(points)


def _check(doc: dict[str, Any]) -> list[int]:
    reference = doc["reference"]
    assert reference["committed"] == doc["prompt"] and not reference["cancelled"]
    assert reference["digest"]["position"] == doc["prompt"]
    points = commit_points(doc["prompt"], doc["chunk"], doc["tile"])
    seen = []
    for trial in doc["trials"]:
        where = f"chunk {doc['chunk']}, tile {doc['tile']}, at {trial['at']}"
        assert trial["cancelled"], where
        # the committed count is exact: reported == the session's position == the cache
        assert trial["committed"] == trial["position"] == trial["cache"], where
        assert trial["committed"] in points, where
        resumed = trial["resumed"]
        assert resumed["committed"] == doc["prompt"] - trial["committed"], where
        assert resumed["digest"] == reference["digest"], f"{where}: resumed state differs"
        assert resumed["tokens"] == reference["tokens"], where
        seen.append(trial["committed"])
    assert seen == sorted(seen)
    return seen


@pytest.mark.parametrize(("chunk", "tile"), RUNS, ids=[f"chunk{c}-tile{t}" for c, t in RUNS])
def test_threads_cancel_inside_a_chunk_commits_exactly(
    chunk: int, tile: int, wasm_lanes: dict[str, Path], small_model: Path, seams: Drive
) -> None:
    doc = seams("chunks", wasm_lanes[THREADS], 2, small_model, chunk, tile)
    assert doc["threads"] and doc["barriers"] > 0
    seen = _check(doc)
    # every commit point but the whole prompt was cancelled at (inside chunks too)
    assert sorted(set(seen)) == commit_points(doc["prompt"], chunk, tile)[:-1]


@pytest.mark.parametrize("chunk", [1, 16, 17, 64])
def test_simd_cancel_between_chunks_commits_exactly(
    chunk: int, wasm_lanes: dict[str, Path], small_model: Path, seams: Drive
) -> None:
    doc = seams("chunks", wasm_lanes[SIMD], 0, small_model, chunk, 16)
    assert not doc["threads"]
    seen = _check(doc)
    assert seen == [j * chunk for j in range(1, len(seen) + 1)] and len(seen) > 0


@pytest.mark.parametrize("victim", ["0", "1", "leader"])
def test_a_dead_worker_is_a_typed_error_and_the_next_load_falls_back(
    victim: str,
    wasm_lanes: dict[str, Path],
    small_model: Path,
    seams: Drive,
    tmp_path: Path,
) -> None:
    manifest = tmp_path / "manifest.json"
    threads = ["simd128", "atomics", "bulk-memory", "mutable-globals"]
    features = {THREADS: threads, SIMD: ["simd128"]}
    artifacts = [
        {
            "id": lane,
            "required_features": features.get(lane, []),
            "requires_cross_origin_isolation": lane == THREADS,
        }
        for lane in (SCALAR, SIMD, THREADS)
    ]
    manifest.write_text(json.dumps({"artifacts": artifacts}))
    doc = seams("die", wasm_lanes[THREADS], 2, small_model, wasm_lanes[SIMD], victim, manifest)
    for call in ("prefill", "again", "decode"):
        failed = doc[call]
        assert not failed["ok"], call
        assert (failed["name"], failed["code"]) == ("LoaderError", "WorkerFailure"), failed
        assert failed["detail"]["lane"] == THREADS
    assert doc["prefill"]["detail"]["committed"] >= 5
    assert doc["record"][THREADS]["code"] == "WorkerFailure"
    assert doc["next"]["candidates"] == [SIMD, SCALAR]
    [skipped] = doc["next"]["attempts"]
    assert (skipped["artifact_id"], skipped["error_code"]) == (THREADS, "LaneFailed")
    assert doc["retry"] == [THREADS, SIMD, SCALAR]  # retryFailedLanes
    # the next lane runs the same prompt to the same tokens the threads lane gave before
    assert doc["fallback"]["lane"] == 1
    assert doc["fallback"]["committed"] == doc["prompt"]
    assert doc["fallback"]["tokens"] == doc["reference"] and len(doc["reference"]) == 4
