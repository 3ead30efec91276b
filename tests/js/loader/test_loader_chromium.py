"""loader.js in real headless Chromium against a real release served over HTTP.

Isolated page (COOP/COEP): the relaxed threads lane (Chromium runs relaxed SIMD) with 2
participating workers and the golden tokens, its receipt naming the admitted, executed and
observed relaxed instruction; the other four lanes when the better ones are denied; every
refusal with its code and nothing instantiated; fallback on a failing self-test and on a worker
that never starts (bounded); relaxed SIMD turned off; a lane disabled by the signed manifest.
Page without isolation: the relaxed lane is chosen and both threads lanes recorded as skipped.
Every receipt validates against the JSON Schema.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pipeline.conformance import browsers
from pipeline.conformance.browsers import CHROMIUM_FLAGS
from pipeline.serve import Site
from tests.js.loader.cases import AFTER_INSTANTIATION, COSIGNED, REFUSALS, Case, Env
from tests.js.loader.checks import DOT, by_name, check_ran, check_refused, check_relaxed_receipt
from tests.js.loader.conftest import STALLED_WORKER
from tests.js.loader.site import (
    LANE_ORDER,
    RELAXED_LANE,
    RELAXED_OFF,
    RELAXED_THREADS_LANE,
    SIMD_LANE,
    THREADS_LANE,
    deny_above,
)

pytestmark = pytest.mark.integration
CHROMIUM = shutil.which("chromium")
# the harness's one list: no sandbox as root, no background traffic off this host
FLAGS = [*CHROMIUM_FLAGS, "--enable-precise-memory-info"]  # exact performance.memory
PAGE_TIMEOUT_SECONDS = 300
WORKER_START_BOUND_MS = 3000
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)"
)


def run_page(
    server: tuple[Site, str],
    site: Path,
    cases: list[Case] | list[dict[str, Any]],
    model_sha256: str,
    profile: Path,
    page: str = "index.html",
    linger: float = 0.0,
    engine: str = "chromium",
    on_start: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Load the test page once in `profile` (Chromium, or another engine of the conformance
    harness: firefox, webkit); returns what it posted."""
    served, url = server
    env = Env(
        url=url,
        loader_root=url,
        model_sha256=model_sha256,
        model_size=(site / "model.trlm").stat().st_size,
        stalled_worker=f"{url}{STALLED_WORKER.lstrip('/')}",
    )
    specs = [c if isinstance(c, dict) else c.spec(env) for c in cases]
    served.overrides["/cases.json"] = json.dumps(specs).encode()
    served.posted.clear()
    served.got_post.clear()
    argv: list[str] = [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", f"{url}{page}"]
    launch_env: dict[str, str] | None = None
    if engine != "chromium":
        chosen = browsers.browser(engine)
        exe = chosen.executable()
        assert exe is not None, f"{engine} is not installed"
        launch = chosen.launch(exe, f"{url}{page}", profile)
        argv, launch_env = launch.argv, launch.env
    browser = subprocess.Popen(
        argv,
        env=launch_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own group: xvfb-run and the browser's children die with it
    )
    if on_start is not None:
        on_start(browser.pid)  # e.g. a memory sampler of the process group
    try:
        assert served.got_post.wait(PAGE_TIMEOUT_SECONDS), "the page reported nothing in time"
        time.sleep(linger)  # e.g. let the profile commit localStorage before the kill
        return served.posted[0]
    finally:
        os.killpg(browser.pid, signal.SIGKILL)
        browser.wait()


@pytest.fixture(scope="module")
def isolated(
    site: Path,
    isolated_server: tuple[Site, str],
    golden: dict[str, Any],
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed")
    prompt = golden["prompt"]
    cases = [c for c, _ in REFUSALS] + [
        Case(f"golden {lane}", prompt=prompt, options=deny_above(lane)) for lane in LANE_ORDER
    ]
    cases += [
        Case("cancel prefill threads", prompt=prompt, extra={"cancelPrefillAt": 5}),
        Case("cancel decode threads", prompt=prompt, extra={"cancelDecodeAt": 3}),
        Case(
            "relaxed threads self-test fails",
            variant="relaxed-threads-self-test-fails",
            prompt=prompt,
        ),
        Case(
            "threads self-test fails",
            variant="threads-self-test-fails",
            prompt=prompt,
            options=RELAXED_OFF,
        ),
        Case("relaxed SIMD off", prompt=prompt, options=RELAXED_OFF),
        Case(
            "worker cannot start",
            prompt=prompt,
            options={"workerUrl": "STALLED", "startupMs": WORKER_START_BOUND_MS},
        ),
        Case("threads disabled by the manifest", variant="threads-disabled", prompt=prompt),
        dataclasses.replace(COSIGNED, prompt=prompt),
    ]
    page = run_page(
        isolated_server, site, cases, golden["model_sha256"], tmp_path_factory.mktemp("profile")
    )
    assert "error" not in page, page
    assert page["cross_origin_isolated"] is True
    return by_name(page["results"])


@pytest.fixture(scope="module")
def plain(
    site: Path,
    plain_server: tuple[Site, str],
    golden: dict[str, Any],
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed")
    cases = [Case("golden, not isolated", prompt=golden["prompt"])]
    page = run_page(
        plain_server, site, cases, golden["model_sha256"], tmp_path_factory.mktemp("profile")
    )
    assert "error" not in page, page
    assert page["cross_origin_isolated"] is False
    return by_name(page["results"])


@needs_chromium
def test_isolated_page_runs_relaxed_threads_on_two_workers_with_the_golden_tokens(
    isolated: dict[str, Any], golden: dict[str, Any]
) -> None:
    """No options: the loader's first choice in Chromium is the relaxed threads lane."""
    result = isolated[f"golden {RELAXED_THREADS_LANE}"]
    receipt = check_ran(result, RELAXED_THREADS_LANE, golden["tokens"])
    assert [a.outcome for a in receipt.attempts] == ["selected"]
    assert receipt.observed.cross_origin_isolated is True
    assert (receipt.observed.workers_requested, receipt.observed.workers_started) == (2, 2)
    assert receipt.executed_path_evidence.worker_ids_participating == [0, 1]
    assert receipt.self_test.thread_participation == "pass"
    assert receipt.host_reported.browser_brand != "node"
    [seen] = receipt.relaxed_simd.observed_semantics
    print(f"chromium: {DOT} out-of-range probe semantics {seen.semantics} {seen.result}")


@needs_chromium
@pytest.mark.parametrize("lane", LANE_ORDER[1:])
def test_denied_lanes_give_the_next_lane_and_the_same_tokens(
    isolated: dict[str, Any], golden: dict[str, Any], lane: str
) -> None:
    receipt = check_ran(isolated[f"golden {lane}"], lane, golden["tokens"])
    assert [(a.artifact_id, a.error_code) for a in receipt.attempts[:-1]] == [
        (denied, "LaneDenied") for denied in LANE_ORDER[: LANE_ORDER.index(lane)]
    ]


@needs_chromium
@pytest.mark.parametrize("lane", LANE_ORDER)
def test_every_lanes_receipt_names_its_relaxed_instructions(
    isolated: dict[str, Any], lane: str
) -> None:
    check_relaxed_receipt(check_ran(isolated[f"golden {lane}"], lane), lane)


@needs_chromium
def test_not_isolated_chooses_relaxed_simd128(
    plain: dict[str, Any], golden: dict[str, Any]
) -> None:
    receipt = check_ran(plain["golden, not isolated"], RELAXED_LANE, golden["tokens"])
    assert receipt.observed.cross_origin_isolated is False
    assert [(a.artifact_id, a.error_code) for a in receipt.attempts[:2]] == [
        (RELAXED_THREADS_LANE, "NotIsolated"),
        (THREADS_LANE, "NotIsolated"),
    ]


@needs_chromium
def test_relaxed_simd_off_in_chromium_runs_threads(
    isolated: dict[str, Any], golden: dict[str, Any]
) -> None:
    receipt = check_ran(isolated["relaxed SIMD off"], THREADS_LANE, golden["tokens"])
    assert [(a.artifact_id, a.error_code) for a in receipt.attempts[:2]] == [
        (RELAXED_THREADS_LANE, "RelaxedSimdOff"),
        (RELAXED_LANE, "RelaxedSimdOff"),
    ]
    assert receipt.relaxed_simd.observed_semantics == []


@needs_chromium
@pytest.mark.parametrize(("case", "code"), REFUSALS, ids=[c.name for c, _ in REFUSALS])
def test_refused_in_chromium_with_its_code_and_nothing_instantiated(
    isolated: dict[str, Any], case: Case, code: str
) -> None:
    check_refused(isolated[case.name], code, case.name in AFTER_INSTANTIATION)


@needs_chromium
@pytest.mark.parametrize(
    ("name", "failed", "runs"),
    [
        ("relaxed threads self-test fails", RELAXED_THREADS_LANE, THREADS_LANE),
        ("threads self-test fails", THREADS_LANE, SIMD_LANE),  # relaxed SIMD off
    ],
    ids=["relaxed-threads->threads", "threads->simd128"],
)
def test_a_failing_self_test_falls_back_in_chromium(
    isolated: dict[str, Any], golden: dict[str, Any], name: str, failed: str, runs: str
) -> None:
    receipt = check_ran(isolated[name], runs, golden["tokens"])
    attempt = next(a for a in receipt.attempts if a.artifact_id == failed)
    assert (attempt.outcome, attempt.step, attempt.error_code) == (
        "failed",
        "self-test",
        "SelfTestFailed",
    )


@needs_chromium
def test_a_worker_that_never_starts_falls_back_within_the_bound(
    isolated: dict[str, Any], golden: dict[str, Any]
) -> None:
    result = isolated["worker cannot start"]
    receipt = check_ran(result, RELAXED_LANE, golden["tokens"])
    assert [(a.artifact_id, a.step) for a in receipt.attempts[:2]] == [
        (lane, "threads precondition 5") for lane in (RELAXED_THREADS_LANE, THREADS_LANE)
    ]
    assert "no answer within 3000 ms" in receipt.attempts[0].detail
    assert result["loadMs"] < 2 * WORKER_START_BOUND_MS + 10_000


@needs_chromium
def test_cancel_on_the_threads_lane_keeps_the_committed_state(
    isolated: dict[str, Any], golden: dict[str, Any]
) -> None:
    prefill = isolated["cancel prefill threads"]
    check_ran(prefill, RELAXED_THREADS_LANE, golden["tokens"])
    assert prefill["prefillCancelled"]["cancelled"] is True
    decode = isolated["cancel decode threads"]
    check_ran(decode, RELAXED_THREADS_LANE, golden["tokens"])
    assert decode["tokensBeforeCancel"] == 3


@needs_chromium
def test_the_signed_manifest_can_disable_threads_in_chromium(isolated: dict[str, Any]) -> None:
    receipt = check_ran(isolated["threads disabled by the manifest"], RELAXED_THREADS_LANE)
    assert [(a.artifact_id, a.error_code) for a in receipt.attempts[:1]] == [
        (THREADS_LANE, "LaneDisabled")
    ]


@needs_chromium
def test_a_cosigned_bundle_loads_in_chromium_under_a_two_of_two_policy(
    isolated: dict[str, Any], golden: dict[str, Any]
) -> None:
    """The release co-signed with `tinyrustlm-release sign` by a second key, trusted by a v2
    policy of both keys with threshold 2: WebCrypto checks both signatures, the threads lane
    runs to the golden tokens (one short of 3 of 3 is refused: REFUSALS)."""
    receipt = check_ran(isolated[COSIGNED.name], RELAXED_THREADS_LANE, golden["tokens"])
    assert receipt.host_reported.browser_brand != "node"
    short = isolated["co-signed 2 of 3 required"]["error"]["message"]
    assert "2 of 3 required signatures on the manifest" in short
