"""The loader's step 8 loads the model in place and admits it before its bytes are fetched
(issue 33 items 1 and 4), on every Wasm lane in node (tests/crates/lanes/inplace.mjs drives
crates/wasm/js/session.js `admitAndLoad` itself, with a real lane and a local HTTP server).

Item 1: the model streams into its final window and `tr_model_adopt` makes it the model's
bytes: the allocator's high-water mark over the static base while it loads (and, unthreaded,
the Wasm memory's size) is at most the plan's load peak (model + its other parts, no load copy)
+ 5%; a model whose hash is not the expected one is refused and its window freed, never adopted.

Item 4: a model over the budget is refused with ModelTooLarge naming the budget and the largest
part, and the server sent nothing of it beyond its header and directory (bounded Range requests;
a server that ignores Range is cancelled after the prefix); none at all when its declared size
alone is over the budget."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.crates.lanes.conftest import Drive

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "inplace.mjs"
RUNS = [
    ("scalar-wasm32", 0),
    ("simd128-wasm32", 0),
    ("simd128-threads-wasm32", 1),
]
IDS = [f"{r[0]}-w{r[1]}" for r in RUNS]
SLACK = 1.05  # peak Wasm memory while loading <= the plan's load peak + 5%
HEADER = 64  # MODEL_HEADER_BYTES

pytestmark = pytest.mark.integration


def _check_in_place(doc: dict[str, Any], where: str) -> None:
    assert doc["loaded"], f"{where}: {doc.get('error')}"
    plan = doc["plan"]
    parts = plan["parts"]
    assert parts["load_copy"] == 0, f"{where}: admitted with a load copy planned: {parts}"
    assert parts["weights"] >= doc["size"], where
    measured = doc["heap"]["measured"]
    assert measured <= SLACK * plan["peakLoad"], (
        f"{where}: loading peaked at {measured} bytes, over the plan's load peak "
        f"{plan['peakLoad']} + 5% (model {doc['size']})"
    )
    if doc["workers"] == 0:  # unthreaded: the memory only grows, its size is its high-water mark
        memory = doc["memoryBytes"]
        assert memory <= SLACK * plan["peakLoad"], f"{where}: Wasm memory {memory} while loading"
    assert doc["modelLoads"] == 1, where
    assert doc["decoded"] == {"prefill": 0, "decode": 0}, where


@pytest.mark.parametrize(("lane", "workers"), RUNS, ids=IDS)
@pytest.mark.parametrize("source", ["bytes", "http", "http-norange"])
def test_the_model_loads_in_place_within_its_plan(
    lane: str,
    workers: int,
    source: str,
    wasm_lanes: dict[str, Path],
    small_model: Path,
    drive: Drive,
) -> None:
    doc = drive(wasm_lanes[lane], workers, small_model, "load", source, script=SCRIPT)
    _check_in_place(doc, f"{lane} workers={workers} source={source}")
    if source != "bytes":  # the whole model was sent once (the prefix may be asked for twice)
        body = [r for r in doc["requests"] if r["sent"] > 0]
        assert sum(r["sent"] for r in body) <= doc["size"] + 4096 + 2 * HEADER, doc["requests"]


@pytest.mark.parametrize(("lane", "workers"), RUNS, ids=IDS)
def test_a_model_whose_hash_is_wrong_is_freed_not_adopted(
    lane: str, workers: int, wasm_lanes: dict[str, Path], small_model: Path, drive: Drive
) -> None:
    doc = drive(wasm_lanes[lane], workers, small_model, "corrupt", "http", script=SCRIPT)
    assert not doc["loaded"]
    assert doc["error"]["code"] == "HashMismatch", doc["error"]
    # its window was freed: nothing the load allocated is still live
    assert doc["heap"]["live"] == doc["heap"]["liveBefore"], doc["heap"]
