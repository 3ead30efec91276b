"""loader.js in node (>= 20) against a real release served over HTTP: lane choice, golden
tokens on every lane, every refusal with its code and nothing instantiated, fallback,
cancellation, receipts valid against the schema."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pipeline.serve import Site
from pipeline.toolchain import nodejs
from tests.js.loader.cases import (
    AFTER_INSTANTIATION,
    COSIGNED,
    REFUSALS,
    Case,
    Env,
    worker_death_cases,
)
from tests.js.loader.checks import (
    by_name,
    check_ran,
    check_refused,
    check_worker_death_fallback,
)
from tests.js.loader.site import SCALAR_LANE, SIMD_LANE, THREADS_LANE

pytestmark = pytest.mark.integration
NODE_TIMEOUT_SECONDS = 600
DENY_THREADS = {"denyLanes": [THREADS_LANE]}
DENY_BOTH = {"denyLanes": [THREADS_LANE, SIMD_LANE]}
WORKER_START_BOUND_MS = 3000
PAGE = 65536


def node_cases(prompt: str) -> list[Case]:
    cases = [c for c, _ in REFUSALS]
    for lane, options in ((THREADS_LANE, {}), (SIMD_LANE, DENY_THREADS), (SCALAR_LANE, DENY_BOTH)):
        cases += [
            Case(f"golden {lane}", prompt=prompt, options=options),
            Case(
                f"cancel prefill {lane}",
                prompt=prompt,
                options={**options, "prefillChunk": 1 if lane == THREADS_LANE else 4},
                extra={"cancelPrefillAt": 5},
            ),
            Case(
                f"cancel decode {lane}", prompt=prompt, options=options, extra={"cancelDecodeAt": 3}
            ),
        ]
    cases += [
        Case("threads self-test fails", variant="threads-self-test-fails", prompt=prompt),
        Case(
            "simd self-test fails",
            variant="simd-self-test-fails",
            prompt=prompt,
            options=DENY_THREADS,
        ),
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
    spec = tmp_path_factory.mktemp("node") / "cases.json"
    spec.write_text(json.dumps([c.spec(env) for c in node_cases(golden["prompt"])]))
    done = subprocess.run(
        [str(nodejs.executable()), str(site / "drive.mjs"), str(spec)],
        capture_output=True,
        text=True,
        timeout=NODE_TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return by_name(json.loads(done.stdout))


@pytest.mark.parametrize(("case", "code"), REFUSALS, ids=[c.name for c, _ in REFUSALS])
def test_refused_with_its_code_and_nothing_instantiated(
    results: dict[str, dict[str, Any]], case: Case, code: str
) -> None:
    check_refused(results[case.name], code, case.name in AFTER_INSTANTIATION)


@pytest.mark.parametrize("lane", [THREADS_LANE, SIMD_LANE, SCALAR_LANE])
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
    if lane == THREADS_LANE:
        assert (receipt.observed.workers_started, evidence.worker_ids_participating) == (2, [0, 1])
        assert receipt.self_test.atomics == receipt.self_test.thread_participation == "pass"
        assert receipt.observed.memory_mode == "wasm32-shared-fixed"
        # the shared memory the loader created is the plan's peak, page-rounded (its minimum:
        # lanes.toml shared_memory.min_bytes, which this plan is above)
        plan = results[f"golden {lane}"]["plan"]
        assert plan["workers"] == 2 and plan["parts"]["load_copy"] == 0
        assert receipt.observed.memory_bytes == -(-plan["peak"] // PAGE) * PAGE


@pytest.mark.parametrize("lane", [THREADS_LANE, SIMD_LANE, SCALAR_LANE])
def test_cancel_during_prefill_leaves_the_last_committed_token(
    results: dict[str, dict[str, Any]], golden: dict[str, Any], lane: str
) -> None:
    result = results[f"cancel prefill {lane}"]
    check_ran(result, lane, golden["tokens"])
    first = result["prefillCancelled"]
    assert first["cancelled"] is True and 5 <= first["committed"] < len(golden["prompt"]) + 1


@pytest.mark.parametrize("lane", [THREADS_LANE, SIMD_LANE, SCALAR_LANE])
def test_cancel_during_decode_stops_the_stream_and_resumes(
    results: dict[str, dict[str, Any]], golden: dict[str, Any], lane: str
) -> None:
    result = results[f"cancel decode {lane}"]
    check_ran(result, lane, golden["tokens"])
    assert result["tokensBeforeCancel"] == 3


@pytest.mark.parametrize(
    ("name", "failed", "runs"),
    [
        ("threads self-test fails", THREADS_LANE, SIMD_LANE),
        ("simd self-test fails", SIMD_LANE, SCALAR_LANE),
    ],
    ids=["threads->simd128", "simd128->scalar"],
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


def test_a_worker_that_cannot_start_falls_back_to_simd128(
    results: dict[str, dict[str, Any]], golden: dict[str, Any]
) -> None:
    result = results["worker cannot start"]
    receipt = check_ran(result, SIMD_LANE, golden["tokens"])
    attempt = receipt.attempts[0]
    assert (attempt.artifact_id, attempt.step) == (THREADS_LANE, "threads precondition 5")
    assert result["loadMs"] < WORKER_START_BOUND_MS + 10_000


def test_the_signed_manifest_can_disable_a_lane(results: dict[str, dict[str, Any]]) -> None:
    receipt = check_ran(results["threads disabled by the manifest"], SIMD_LANE)
    assert receipt.attempts[0].error_code == "LaneDisabled"


def test_when_no_lane_is_left_one_error_lists_every_attempt(
    results: dict[str, dict[str, Any]],
) -> None:
    error = results["the only lane left fails its self-test"]["error"]
    attempts = [(a["artifact_id"], a["outcome"], a["error_code"]) for a in error["attempts"]]
    assert attempts == [
        (THREADS_LANE, "skipped", "LaneDenied"),
        (SCALAR_LANE, "skipped", "LaneDenied"),
        (SIMD_LANE, "failed", "SelfTestFailed"),
    ]
    assert all(lane in error["message"] for lane in (THREADS_LANE, SIMD_LANE, SCALAR_LANE))


def test_every_lane_reports_the_same_self_test_vector_set(
    results: dict[str, dict[str, Any]],
) -> None:
    digests = {
        results[f"golden {lane}"]["receipt"]["self_test"]["vector_set_sha256"]
        for lane in (THREADS_LANE, SIMD_LANE, SCALAR_LANE)
    }
    assert len(digests) == 1


def test_a_cosigned_bundle_loads_under_a_two_of_two_policy(
    results: dict[str, dict[str, Any]], golden: dict[str, Any]
) -> None:
    """The release co-signed with `tinyrustlm-release sign` (two development keys), trusted by
    a v2 policy of both with threshold 2: verified, then run to the golden tokens."""
    check_ran(results[COSIGNED.name], THREADS_LANE, golden["tokens"])
    short = results["co-signed 2 of 3 required"]["error"]["message"]
    assert "2 of 3 required signatures on the manifest" in short


def test_a_worker_dies_and_the_next_load_of_the_site_falls_back(
    results: dict[str, dict[str, Any]], golden: dict[str, Any]
) -> None:
    check_worker_death_fallback(results, golden["tokens"], THREADS_LANE, SIMD_LANE)
