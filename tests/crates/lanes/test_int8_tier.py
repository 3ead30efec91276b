"""The integer tier end to end on every Wasm lane (CONTRACT.md §10): a format-v2 model
(`pack-model --preset small-int8`, the `small` weights) prefilled with every tile 1..16 and the
prompt's length gives — for every golden prompt — the same logits and K/V digests, the same
greedy tokens and the same state after decoding on the scalar lane (the oracle), the simd128
lane, the threads lane with 1, 2 and 3 workers, and the relaxed-SIMD lanes (alone; with
threads, 1, 2 and 3 workers; node's native relaxed semantics): bit for bit ACROSS lanes, which
the f32 tier only promises within a lane."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pipeline.modelpack import PRESETS, pack
from tests.crates.lanes.conftest import GOLDEN, Drive

TILES = tuple(range(1, 17))
SCALAR, SIMD, THREADS = "scalar-wasm32", "simd128-wasm32", "simd128-threads-wasm32"
RELAXED, RELAXED_THREADS = "relaxed-simd128-wasm32", "relaxed-simd128-threads-wasm32"
RUNS = [(SIMD, 0), (THREADS, 1), (THREADS, 2), (THREADS, 3)]
RUNS += [(RELAXED, 0), (RELAXED_THREADS, 1), (RELAXED_THREADS, 2), (RELAXED_THREADS, 3)]
RUN_IDS = ["simd128", "threads-1", "threads-2", "threads-3"]
RUN_IDS += ["relaxed", "relaxed-threads-1", "relaxed-threads-2", "relaxed-threads-3"]


@pytest.fixture(scope="module")
def int8_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("models") / "small-int8.trlm"
    path.write_bytes(pack(PRESETS["small-int8"], 7))
    return path


@pytest.fixture(scope="module")
def oracle(wasm_lanes: dict[str, Path], int8_model: Path, drive: Drive) -> Any:
    doc = drive("prefill", wasm_lanes[SCALAR], 0, GOLDEN, int8_model, *TILES)
    by_prompt: dict[str, list[dict[str, Any]]] = {}
    for r in doc["results"]:
        by_prompt.setdefault(r["prompt"], []).append(r)
    assert len(by_prompt) >= 3, "every distinct golden prompt ran"
    for prompt, runs in by_prompt.items():
        first = runs[0]
        assert first["tile"] == 1 and (first["tile_code"], first["code"]) == (0, 0), prompt
        assert first["prefilled"]["logits"] != "0"
        for r in runs[1:]:
            where = f"scalar {prompt} tile {r['tile']}"
            assert (r["tile_code"], r["code"]) == (0, 0), where
            assert r["prefilled"] == first["prefilled"], f"{where}: logits or K/V != T = 1"
            assert (r["tokens"], r["decoded"]) == (first["tokens"], first["decoded"]), where
    return doc


@pytest.mark.integration
@pytest.mark.parametrize(("lane", "workers"), RUNS, ids=RUN_IDS)
def test_every_lane_tile_and_worker_count_equals_the_scalar_oracle(
    lane: str,
    workers: int,
    wasm_lanes: dict[str, Path],
    int8_model: Path,
    drive: Drive,
    oracle: Any,
) -> None:
    doc = drive("prefill", wasm_lanes[lane], workers, GOLDEN, int8_model, *TILES)
    assert doc["workers"] == workers
    assert len(doc["results"]) == len(oracle["results"])
    for got, want in zip(doc["results"], oracle["results"], strict=True):
        where = f"{lane}/{workers} {got['prompt']} tile {got['tile']}"
        assert got == want, f"{where}: differs from the scalar oracle"
    # tr_path_counters' relaxed kernel calls: the relaxed lanes' int8 matvec/matmul only (of
    # their SIMD calls, attention and the f32 glue run none); every other lane none at all
    counters = doc["counters"]
    if lane in (RELAXED, RELAXED_THREADS):
        assert 0 < counters["relaxed"] < counters["simd"], counters
    else:
        assert counters["relaxed"] == 0, counters


@pytest.mark.integration
def test_the_tier_is_the_headers(
    wasm_lanes: dict[str, Path], small_model: Path, drive: Drive, oracle: Any
) -> None:
    # the same weights as format v1 run the f32 kernels: other logits (the tier really switched)
    f32 = drive("prefill", wasm_lanes[SCALAR], 0, GOLDEN, small_model, 1)
    int8 = {(r["prompt"], r["tile"]): r for r in oracle["results"]}
    for r in f32["results"]:
        assert r["prefilled"]["logits"] != int8[(r["prompt"], r["tile"])]["prefilled"]["logits"]
