"""loader.js in node (>= 20) against a real release served over HTTP: lane choice, golden
tokens on every lane (the relaxed ones too: node's V8 runs relaxed SIMD), every refusal with
its code and nothing instantiated, fallback (a failing self-test on every lane, relaxed SIMD
turned off), cancellation, receipts valid against the schema (with the semantic probe's
finding)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from pipeline.serve import Site
from tests.js.loader.cases import (
    AFTER_INSTANTIATION,
    COSIGNED,
    REFUSALS,
    Case,
    Env,
    worker_death_cases,
)
from tests.js.loader.checks import (
    DOT,
    by_name,
    check_ran,
    check_refused,
    check_relaxed_receipt,
    check_worker_death_fallback,
)
from tests.js.loader.conftest import run_node_cases
from tests.js.loader.site import (
    LANE_ORDER,
    RELAXED_LANE,
    RELAXED_OFF,
    RELAXED_THREADS_LANE,
    SCALAR_LANE,
    SIMD_LANE,
    THREADS_LANE,
    deny_above,
)

pytestmark = pytest.mark.integration
WORKER_START_BOUND_MS = 3000
PAGE = 65536
THREADS_LANES = (RELAXED_THREADS_LANE, THREADS_LANE)


def node_cases(prompt: str) -> list[Case]:
    cases = [c for c, _ in REFUSALS]
    for lane in LANE_ORDER:
        options = deny_above(lane)
        cases += [
            Case(f"golden {lane}", prompt=prompt, options=options),
            Case(
                f"cancel prefill {lane}",
                prompt=prompt,
                options={**options, "prefillChunk": 1 if lane in THREADS_LANES else 4},
                extra={"cancelPrefillAt": 5},
            ),
            Case(
                f"cancel decode {lane}", prompt=prompt, options=options, extra={"cancelDecodeAt": 3}
            ),
        ]
    cases += [
        Case(
            "relaxed threads self-test fails",
            variant="relaxed-threads-self-test-fails",
            prompt=prompt,
        ),
        Case(
            "relaxed self-test fails",
            variant="relaxed-self-test-fails",
            prompt=prompt,
            options=deny_above(RELAXED_LANE),
        ),
        Case(
            "threads self-test fails",
            variant="threads-self-test-fails",
            prompt=prompt,
            options=RELAXED_OFF,
        ),
        Case(
            "simd self-test fails",
            variant="simd-self-test-fails",
            prompt=prompt,
            options={**deny_above(RELAXED_LANE), **RELAXED_OFF},
        ),
        Case("relaxed SIMD off", prompt=prompt, options=RELAXED_OFF),
        Case(
            "worker cannot start",
            prompt=prompt,
            options={"workerUrl": "STALLED", "startupMs": WORKER_START_BOUND_MS},
        ),
        Case("threads disabled by the manifest", variant="threads-disabled", prompt=prompt),
        dataclasses.replace(COSIGNED, prompt=prompt),
        *worker_death_cases(prompt),
    ]
    return cases


@pytest.fixture(scope="module")
def results(
    site: Path,
    isolated_server: tuple[Site, str],
    golden: dict[str, Any],
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, dict[str, Any]]:
    _, url = isolated_server
    env = Env(
        url=url,
        loader_root=site.as_uri() + "/",
        model_sha256=golden["model_sha256"],
        model_size=(site / "model.trlm").stat().st_size,
        stalled_worker=(site / "silent-worker.mjs").as_uri(),
    )
    specs = [c.spec(env) for c in node_cases(golden["prompt"])]
    return by_name(run_node_cases(specs, tmp_path_factory.mktemp("node"), site))


@pytest.mark.parametrize(("case", "code"), REFUSALS, ids=[c.name for c, _ in REFUSALS])
def test_refused_with_its_code_and_nothing_instantiated(
    results: dict[str, dict[str, Any]], case: Case, code: str
) -> None:
    check_refused(results[case.name], code, case.name in AFTER_INSTANTIATION)


@pytest.mark.parametrize("lane", LANE_ORDER)
def test_every_lane_gives_the_golden_tokens(
    results: dict[str, dict[str, Any]], golden: dict[str, Any], lane: str
) -> None:
    receipt = check_ran(results[f"golden {lane}"], lane, golden["tokens"])
    assert receipt.self_test.failed_test is None
    evidence = receipt.executed_path_evidence
    if lane == SCALAR_LANE:
        assert evidence.simd_kernel_calls == 0 < evidence.scalar_kernel_calls
    else:
        assert evidence.simd_kernel_calls > 0
    if lane in THREADS_LANES:
        assert (receipt.observed.workers_started, evidence.worker_ids_participating) == (2, [0, 1])
        assert receipt.self_test.atomics == receipt.self_test.thread_participation == "pass"
        assert receipt.observed.memory_mode == "wasm32-shared-fixed"
        # the shared memory the loader created is the plan's peak, page-rounded (its minimum:
        # lanes.toml shared_memory.min_bytes, which this plan is above)
        plan = results[f"golden {lane}"]["plan"]
        assert plan["workers"] == 2 and plan["parts"]["load_copy"] == 0
        assert receipt.observed.memory_bytes == -(-plan["peak"] // PAGE) * PAGE
    # node's V8 validates the relaxed probe and runs the semantic one on every lane
    seen = check_relaxed_receipt(receipt, lane)
    print(f"node: {DOT} out-of-range probe semantics {seen.semantics} {seen.result}")


def test_the_best_lane_in_node_is_relaxed_threads(results: dict[str, dict[str, Any]]) -> None:
    """No options: node (isolated, every probe validates) takes the relaxed threads lane."""
    receipt = check_ran(results[f"golden {RELAXED_THREADS_LANE}"], RELAXED_THREADS_LANE)
    assert [a.outcome for a in receipt.attempts] == ["selected"]


def test_relaxed_simd_off_skips_the_relaxed_lanes_and_says_why(
    results: dict[str, dict[str, Any]], golden: dict[str, Any]
) -> None:
    receipt = check_ran(results["relaxed SIMD off"], THREADS_LANE, golden["tokens"])
    assert [(a.artifact_id, a.outcome, a.error_code) for a in receipt.attempts] == [
        (RELAXED_THREADS_LANE, "skipped", "RelaxedSimdOff"),
        (RELAXED_LANE, "skipped", "RelaxedSimdOff"),
        (THREADS_LANE, "selected", None),
    ]
    assert receipt.relaxed_simd.observed_semantics == []  # the semantic probe was not run


@pytest.mark.parametrize("lane", LANE_ORDER)
def test_cancel_during_prefill_leaves_the_last_committed_token(
    results: dict[str, dict[str, Any]], golden: dict[str, Any], lane: str
) -> None:
    result = results[f"cancel prefill {lane}"]
    check_ran(result, lane, golden["tokens"])
    first = result["prefillCancelled"]
    assert first["cancelled"] is True and 5 <= first["committed"] < len(golden["prompt"]) + 1


@pytest.mark.parametrize("lane", LANE_ORDER)
def test_cancel_during_decode_stops_the_stream_and_resumes(
    results: dict[str, dict[str, Any]], golden: dict[str, Any], lane: str
) -> None:
    result = results[f"cancel decode {lane}"]
    check_ran(result, lane, golden["tokens"])
    assert result["tokensBeforeCancel"] == 3


@pytest.mark.parametrize(
    ("name", "failed", "runs"),
    [
        ("relaxed threads self-test fails", RELAXED_THREADS_LANE, THREADS_LANE),
        ("relaxed self-test fails", RELAXED_LANE, SIMD_LANE),
        ("threads self-test fails", THREADS_LANE, SIMD_LANE),
        ("simd self-test fails", SIMD_LANE, SCALAR_LANE),
    ],
    ids=["relaxed-threads->threads", "relaxed->simd128", "threads->simd128", "simd128->scalar"],
)
def test_a_failing_self_test_falls_back_and_is_recorded(
    results: dict[str, dict[str, Any]], golden: dict[str, Any], name: str, failed: str, runs: str
) -> None:
    receipt = check_ran(results[name], runs, golden["tokens"])
    attempt = next(a for a in receipt.attempts if a.artifact_id == failed)
    assert (attempt.outcome, attempt.step, attempt.error_code) == (
        "failed",
        "self-test",
        "SelfTestFailed",
    )
    assert "e2e.tiny_greedy" in attempt.detail


def test_a_worker_that_cannot_start_falls_back_to_relaxed(
    results: dict[str, dict[str, Any]], golden: dict[str, Any]
) -> None:
    result = results["worker cannot start"]
    receipt = check_ran(result, RELAXED_LANE, golden["tokens"])
    assert [(a.artifact_id, a.step) for a in receipt.attempts[:2]] == [
        (lane, "threads precondition 5") for lane in THREADS_LANES
    ]
    assert result["loadMs"] < 2 * WORKER_START_BOUND_MS + 10_000


def test_the_signed_manifest_can_disable_a_lane(results: dict[str, dict[str, Any]]) -> None:
    receipt = check_ran(results["threads disabled by the manifest"], RELAXED_THREADS_LANE)
    assert [(a.artifact_id, a.error_code) for a in receipt.attempts[:1]] == [
        (THREADS_LANE, "LaneDisabled")
    ]


def test_when_no_lane_is_left_one_error_lists_every_attempt(
    results: dict[str, dict[str, Any]],
) -> None:
    error = results["the only lane left fails its self-test"]["error"]
    attempts = [(a["artifact_id"], a["outcome"], a["error_code"]) for a in error["attempts"]]
    assert attempts == [
        *((lane, "skipped", "LaneDenied") for lane in LANE_ORDER if lane != SIMD_LANE),
        (SIMD_LANE, "failed", "SelfTestFailed"),
    ]
    assert all(lane in error["message"] for lane in LANE_ORDER)


def test_every_lane_reports_the_same_self_test_vector_set(
    results: dict[str, dict[str, Any]],
) -> None:
    digests = {
        results[f"golden {lane}"]["receipt"]["self_test"]["vector_set_sha256"]
        for lane in LANE_ORDER
    }
    assert len(digests) == 1


def test_a_cosigned_bundle_loads_under_a_two_of_two_policy(
    results: dict[str, dict[str, Any]], golden: dict[str, Any]
) -> None:
    """The release co-signed with `tinyrustlm-release sign` (two development keys), trusted by
    a v2 policy of both with threshold 2: verified, then run to the golden tokens."""
    check_ran(results[COSIGNED.name], RELAXED_THREADS_LANE, golden["tokens"])
    short = results["co-signed 2 of 3 required"]["error"]["message"]
    assert "2 of 3 required signatures on the manifest" in short


def test_a_worker_dies_and_the_next_load_of_the_site_falls_back(
    results: dict[str, dict[str, Any]], golden: dict[str, Any]
) -> None:
    check_worker_death_fallback(results, golden["tokens"], RELAXED_THREADS_LANE, THREADS_LANE)
