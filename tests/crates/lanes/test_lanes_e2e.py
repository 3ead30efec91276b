"""End to end through the shipped lane modules: the golden token sequences of the `small`
model on every wasm lane, and the threads lane (1, 2, 3 workers) and the relaxed-SIMD lanes
(whose f32 tier is the simd128 kernels: no relaxed instruction) bit-identical to the
single-threaded simd128 lane (tokens and final PRNG state), with every worker participating."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.crates.lanes.conftest import GOLDEN, Drive
from tests.crates.runtime import forward_ref
from tests.crates.runtime.test_e2e_reference import E2E, reference_run

RUNS = [
    ("scalar-wasm32", 0),
    ("simd128-wasm32", 0),
    ("simd128-threads-wasm32", 1),
    ("simd128-threads-wasm32", 2),
    ("simd128-threads-wasm32", 3),
    ("relaxed-simd128-wasm32", 0),
    ("relaxed-simd128-threads-wasm32", 2),
]
IDS = ["scalar", "simd128", "threads-1", "threads-2", "threads-3", "relaxed", "relaxed-threads-2"]
LANE_IDS = {
    "scalar-wasm32": 0,
    "simd128-wasm32": 1,
    "simd128-threads-wasm32": 2,
    "relaxed-simd128-wasm32": 3,
    "relaxed-simd128-threads-wasm32": 4,
}

_cache: dict[tuple[str, int], Any] = {}


def _run(drive: Drive, lanes: dict[str, Path], model: Path, lane: str, workers: int) -> Any:
    if (lane, workers) not in _cache:
        _cache[(lane, workers)] = drive("e2e", lanes[lane], workers, GOLDEN, model)
    return _cache[(lane, workers)]


@pytest.mark.integration
@pytest.mark.parametrize(("lane", "workers"), RUNS, ids=IDS)
def test_golden_token_sequences(
    lane: str, workers: int, wasm_lanes: dict[str, Path], small_model: Path, drive: Drive
) -> None:
    doc = _run(drive, wasm_lanes, small_model, lane, workers)
    assert doc["lane"] == LANE_IDS[lane]
    golden = {r["id"]: r for r in json.loads((GOLDEN / "e2e_decode.json").read_text())}
    assert {r["id"] for r in doc["results"]} == set(golden)
    for r in doc["results"]:
        assert golden[r["id"]]["alternate_tolerance"] is None  # tokens never get a tier
        assert r["code"] == 0, r["id"]
        assert r["tokens"] == golden[r["id"]]["expected"]["values"], r["id"]
    counters = doc["counters"]
    if lane == "scalar-wasm32":
        assert counters["simd"] == 0 and counters["scalar"] > 0
    else:
        assert counters["simd"] > 0
    assert counters["relaxed"] == 0  # the f32 tier runs no relaxed instruction, in any lane
    if workers:
        w = counters["workers"]
        assert w["workers"] == workers
        assert w["participated"] == (1 << workers) - 1  # every worker owned rows
        assert w["state"] == 1  # the pool is still ready


PARALLEL = [("simd128-threads-wasm32", w) for w in (1, 2, 3)]
PARALLEL += [("relaxed-simd128-wasm32", 0), ("relaxed-simd128-threads-wasm32", 2)]


@pytest.mark.integration
@pytest.mark.parametrize(
    ("lane", "workers"), PARALLEL, ids=[*IDS[2:5], "relaxed", "relaxed-threads-2"]
)
def test_bit_identical_to_simd(
    lane: str, workers: int, wasm_lanes: dict[str, Path], small_model: Path, drive: Drive
) -> None:
    simd = _run(drive, wasm_lanes, small_model, "simd128-wasm32", 0)["results"]
    other = _run(drive, wasm_lanes, small_model, lane, workers)["results"]
    assert other == simd  # same tokens, same final PRNG state, same codes


SIMD_RUNS = RUNS[1:]
_model: dict[str, forward_ref.Generated] = {}  # vector id -> the simd model's run (~5 s each)


@pytest.mark.integration
@pytest.mark.parametrize(("lane", "workers"), SIMD_RUNS, ids=IDS[1:])
def test_simd_lanes_match_the_documented_simd_model(
    lane: str, workers: int, wasm_lanes: dict[str, Path], small_model: Path, drive: Drive
) -> None:
    """The simd128 lane and the threads lane with 1, 2 and 3 workers against the independent
    forward pass with the documented simd128 trees (tests/crates/runtime/forward_ref.py): every
    token and the final PRNG state."""
    doc = _run(drive, wasm_lanes, small_model, lane, workers)
    got = {r["id"]: (r["code"], r["tokens"], r["rng_state"]) for r in doc["results"]}
    for vector in E2E:
        if vector.id not in _model:
            _model[vector.id] = reference_run(vector, forward_ref.SIMD128)
        model = _model[vector.id]
        want = (0, model.tokens, f"0x{model.rng_state:016x}")
        assert got[vector.id] == want, vector.id
