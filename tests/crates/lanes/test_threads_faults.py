"""Fault injection on the threads lane: cancellation at every barrier of a decode step leaves
the session at its last committed token; a worker killed mid-operation yields WorkerFailure
(never a hang: every driver call is bounded) and a lower lane that still works."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.crates.lanes.conftest import GOLDEN, Drive

THREADS = "simd128-threads-wasm32"
WORKER_FAILURE = 16
LIVENESS_MS = 1500


@pytest.mark.integration
@pytest.mark.parametrize("workers", [1, 2], ids=["threads-1", "threads-2"])
def test_cancellation_at_every_barrier(
    workers: int, wasm_lanes: dict[str, Path], small_model: Path, drive: Drive
) -> None:
    doc = drive("cancel", wasm_lanes[THREADS], workers, small_model)
    reference = doc["reference"]
    assert all(step[0] == 0 for step in reference)
    # one barrier per unit phase: attention units (Q/K/V rows + attention), output rows,
    # gate/up rows, down rows per layer (4 layers in
    # `small`), plus the logits
    assert doc["barriers_per_step"] == 4 * 4 + 1
    assert [t["barrier"] for t in doc["trials"]] == list(range(1, doc["barriers_per_step"] + 1))
    for trial in doc["trials"]:
        assert trial["code"] == doc["cancelled_code"], trial
        # nothing of the cancelled step was committed: the session continues exactly as if
        # the cancelled call had never been made
        assert trial["resumed"] == reference[1:], trial["barrier"]


@pytest.mark.integration
@pytest.mark.parametrize("victim", [0, 1], ids=["operation-runner", "row-worker"])
def test_killed_worker_fails_the_pool_and_the_lower_lane_works(
    victim: int, wasm_lanes: dict[str, Path], small_model: Path, drive: Drive
) -> None:
    """Worker 0 runs whole operations, worker 1 only row shares: either death must surface."""
    lower = wasm_lanes["simd128-wasm32"]
    doc = drive(
        "kill", wasm_lanes[THREADS], 2, small_model, lower, LIVENESS_MS, victim, timeout=120
    )
    assert doc["prefill"] == 0
    codes = [step[0] for step in doc["steps"]]
    assert codes[0] == 0
    # the step running when the worker died may still have finished; after that, every
    # operation fails with WorkerFailure and the pool stays failed
    assert codes[-2:] == [WORKER_FAILURE, WORKER_FAILURE]
    assert set(codes[1:]) <= {0, WORKER_FAILURE}
    assert doc["worker_counters"]["state"] == 2
    assert doc["host_failures"], "the host saw the worker die"
    greedy = next(
        r
        for r in json.loads((GOLDEN / "e2e_decode.json").read_text())
        if r["id"] == "e2e_decode.small.greedy"
    )
    fallback = doc["fallback"]
    assert fallback["lane"] == 1 and fallback["code"] == 0
    assert fallback["tokens"] == greedy["expected"]["values"][:3]


@pytest.mark.integration
def test_module_hash_gate(wasm_lanes: dict[str, Path], drive: Drive) -> None:
    """The host refuses bytes that are not the expected module; the right hash starts workers."""
    doc = drive("hash", wasm_lanes[THREADS], 2)
    assert doc["refused"] and "not the expected" in doc["refused"]
    assert doc["accepted"] == {"workers": 2, "sha256": doc["sha256"]}
