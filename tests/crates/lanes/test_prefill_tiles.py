"""Tiled prefill and head-partitioned attention on every Wasm lane (tr_session_prefill_tile,
tr_session_digest): for every golden prompt, prefill with tiles 1, 2, 7, 16 and the prompt's
length gives the logits and K/V of token-by-token prefill bit for bit, and the same decode;
the threads lane with 1, 2 and 3 workers (Q/K/V rows and attention split by kv-head units,
rows split by worker) equals the simd128 lane bit for bit; cancellation at every barrier of
a tiled prefill leaves the last committed tile and the next prefill continues exactly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.crates.lanes.conftest import GOLDEN, Drive

TILES = (1, 2, 7, 16)
SIMD = "simd128-wasm32"
THREADS = "simd128-threads-wasm32"
# (lane, workers): every lane, the threads lane with 1, 2 and 3 workers
RUNS = [("scalar-wasm32", 0), (SIMD, 0), (THREADS, 1), (THREADS, 2), (THREADS, 3)]
RUN_IDS = ["scalar", "simd128", "threads-1", "threads-2", "threads-3"]


def _by_prompt(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for r in doc["results"]:
        out.setdefault(r["prompt"], []).append(r)
    return out


@pytest.fixture(scope="module")
def simd_reference(wasm_lanes: dict[str, Path], small_model: Path, drive: Drive) -> Any:
    return drive("prefill", wasm_lanes[SIMD], 0, GOLDEN, small_model, *TILES)


@pytest.mark.integration
@pytest.mark.parametrize(("lane", "workers"), RUNS, ids=RUN_IDS)
def test_every_tile_size_equals_token_by_token_prefill(
    lane: str,
    workers: int,
    wasm_lanes: dict[str, Path],
    small_model: Path,
    drive: Drive,
    simd_reference: Any,
) -> None:
    doc = drive("prefill", wasm_lanes[lane], workers, GOLDEN, small_model, *TILES)
    assert doc["workers"] == workers
    prompts = _by_prompt(doc)
    assert len(prompts) >= 3, "every distinct golden prompt ran"
    for prompt, runs in prompts.items():
        oracle = runs[0]
        assert oracle["tile"] == 1 and oracle["code"] == 0 and oracle["tile_code"] == 0
        assert oracle["prefilled"]["logits"] != "0"
        for r in runs[1:]:
            where = f"{prompt} tile {r['tile']}"
            assert (r["tile_code"], r["code"]) == (0, 0), where
            assert r["prefilled"] == oracle["prefilled"], f"{where}: logits or K/V != T = 1"
            assert r["tokens"] == oracle["tokens"], where
            assert r["decoded"] == oracle["decoded"], f"{where}: state after decoding differs"
    if lane == THREADS:
        # the partitioned schedule equals the single-threaded simd128 lane bit for bit
        assert doc["results"] == simd_reference["results"]


@pytest.mark.integration
@pytest.mark.parametrize("tile", [1, 7, 16], ids=["tile-1", "tile-7", "tile-16"])
@pytest.mark.parametrize("workers", [1, 2], ids=["threads-1", "threads-2"])
def test_cancellation_at_every_barrier_of_a_tiled_prefill(
    tile: int, workers: int, wasm_lanes: dict[str, Path], small_model: Path, drive: Drive
) -> None:
    doc = drive("prefill-cancel", wasm_lanes[THREADS], workers, small_model, tile, timeout=600)
    n = doc["prompt_len"]
    tiles = -(-n // tile)
    # per tile: 4 barriers per layer (attention units, output, gate/up, down) x 4 layers, + logits
    assert doc["barriers"] == tiles * (4 * 4 + 1)
    committed = set()
    for trial in doc["trials"]:
        at = trial["cancelled"]["position"]
        assert trial["code"] == doc["cancelled_code"], trial["barrier"]
        assert at % tile == 0 and at < n, trial["barrier"]
        if at:
            assert trial["cancelled"] == trial["prefix"], f"barrier {trial['barrier']}: != T = 1"
        else:
            assert trial["cancelled"]["logits"] == "0"
        assert trial["resumed_code"] == 0
        assert trial["resumed"] == doc["full"], f"barrier {trial['barrier']}: resumed state differs"
        committed.add(at)
    assert committed == set(range(0, n, tile)), "cancelled at every tile boundary"
