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
    requests = doc.get("requests", [])
    ranges = [r["range"] for r in requests]
    if source == "http":  # header, directory, then the rest: each byte of the model sent once
        prefix = doc["prefixBytes"]
        asked = [f"bytes=0-{HEADER - 1}", f"bytes={HEADER}-{prefix - 1}", f"bytes={prefix}-"]
        assert ranges == asked, requests
        assert sum(r["sent"] for r in requests) == doc["size"], requests
    if source == "http-norange":
        # the header's answer was the whole model: cancelled once the header and directory were
        # read (a lane may start before the rest is asked for, and an engine without
        # backpressure would take in the whole body meanwhile), then the rest asked for from
        # where the head ended (answered whole again: the bytes before it skipped)
        [first, rest] = ranges
        assert first == f"bytes=0-{HEADER - 1}", requests
        assert rest.startswith("bytes=") and rest.endswith("-"), requests
        assert doc["prefixBytes"] <= int(rest[len("bytes=") : -1]) < doc["size"], requests
        assert [r["status"] for r in requests] == [200, 200], requests


@pytest.mark.parametrize(("lane", "workers"), RUNS, ids=IDS)
def test_a_model_whose_hash_is_wrong_is_freed_not_adopted(
    lane: str, workers: int, wasm_lanes: dict[str, Path], small_model: Path, drive: Drive
) -> None:
    doc = drive(wasm_lanes[lane], workers, small_model, "corrupt", "http", script=SCRIPT)
    assert not doc["loaded"]
    assert doc["error"]["code"] == "HashMismatch", doc["error"]
    # its window was freed: nothing the load allocated is still live
    assert doc["heap"]["live"] == doc["heap"]["liveBefore"], doc["heap"]


def _model_bytes_sent(doc: dict[str, Any]) -> int:
    return sum(r["sent"] for r in doc["requests"])


@pytest.mark.parametrize(("lane", "workers"), RUNS, ids=IDS)
def test_an_over_budget_model_is_refused_on_its_header_and_directory_alone(
    lane: str, workers: int, wasm_lanes: dict[str, Path], small_model: Path, drive: Drive
) -> None:
    size = small_model.stat().st_size
    budget = size + 4096  # over the declared size (so it is asked for), under the plan's peak
    doc = drive(wasm_lanes[lane], workers, small_model, "refuse", "http", budget, script=SCRIPT)
    assert not doc["loaded"]
    error = doc["error"]
    assert error["code"] == "ModelTooLarge", error
    detail = error["detail"]
    assert detail["budget"] == budget, detail
    assert detail["largest"] == max(detail["parts"], key=detail["parts"].__getitem__), detail
    assert f"budget of {budget} bytes" in error["message"], error["message"]
    assert f"largest part is {detail['largest']}" in error["message"], error["message"]
    prefix = doc["prefixBytes"]
    assert HEADER < prefix < size
    # every request was a bounded Range inside the header and directory; nothing else was sent
    ranges = [r["range"] for r in doc["requests"]]
    assert ranges == [f"bytes=0-{HEADER - 1}", f"bytes={HEADER}-{prefix - 1}"], doc["requests"]
    assert all(r["status"] == 206 for r in doc["requests"]), doc["requests"]
    assert _model_bytes_sent(doc) == prefix, doc["requests"]


@pytest.mark.parametrize(("lane", "workers"), RUNS, ids=IDS)
def test_a_server_that_ignores_range_is_cancelled_after_the_prefix(
    lane: str, workers: int, wasm_lanes: dict[str, Path], small_model: Path, drive: Drive
) -> None:
    size = small_model.stat().st_size
    budget = size + 4096
    doc = drive(
        wasm_lanes[lane], workers, small_model, "refuse", "http-norange", budget, script=SCRIPT
    )
    assert doc["error"]["code"] == "ModelTooLarge", doc["error"]
    # the header's request was answered with the whole model: the header and directory were
    # read from it, then it was cancelled; never another request
    assert [r["range"] for r in doc["requests"]] == [f"bytes=0-{HEADER - 1}"], doc["requests"]
    assert [r["status"] for r in doc["requests"]] == [200], doc["requests"]


@pytest.mark.parametrize(("lane", "workers"), RUNS[:1], ids=IDS[:1])
def test_a_declared_size_over_the_budget_is_refused_before_any_request(
    lane: str, workers: int, wasm_lanes: dict[str, Path], small_model: Path, drive: Drive
) -> None:
    size = small_model.stat().st_size
    doc = drive(wasm_lanes[lane], workers, small_model, "refuse", "http", size - 1, script=SCRIPT)
    error = doc["error"]
    assert error["code"] == "ModelTooLarge", error
    assert error["detail"]["budget"] == size - 1 and error["detail"]["largest"] == "weights"
    assert doc["requests"] == [], doc["requests"]
