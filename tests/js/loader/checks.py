"""Assertions shared by the node and Chromium loader tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs; installed via cyclonedx

from pipeline.js.probes import DOT_SEMANTICS
from tests.js.loader.cases import AFTER_DEATH, RETRY_AFTER_DEATH, WORKER_DIES
from tests.js.loader.site import RELAXED_LANES
from verify.formats.receipt import CapabilityReceipt, RelaxedSemantics

SCHEMA = (
    Path(__file__).resolve().parents[3] / "manifests/schemas/tinyrustlm.capability-receipt.v2.json"
)

DOT = "i32x4.relaxed_dot_i8x16_i7x16_add_s"  # the one relaxed instruction the lanes admit


def by_name(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in results}


def check_receipt(receipt: dict[str, Any]) -> CapabilityReceipt:
    """A receipt validates against the committed JSON Schema and the pydantic model."""
    jsonschema.validate(receipt, json.loads(SCHEMA.read_text()))
    return CapabilityReceipt.model_validate(receipt)


def check_refused(result: dict[str, Any], code: str, after_instantiation: bool) -> None:
    assert result.get("error"), f"{result['name']}: not refused: {result.get('lane')}"
    assert result["error"]["code"] == code, result["error"]
    stats = result["stats"]
    assert stats["modelLoads"] == 0 and stats["live"] == 0, stats
    if not after_instantiation:
        assert stats["instantiations"] == 0, stats


def check_ran(
    result: dict[str, Any], lane: str, tokens: list[int] | None = None
) -> CapabilityReceipt:
    assert "error" not in result, result["error"]
    assert result["lane"] == lane, result.get("receipt", {}).get("attempts")
    if tokens is not None:
        assert result["tokens"] == tokens
        assert result["memoryUnchanged"] is True
    receipt = check_receipt(result["receipt"])
    assert receipt.module.artifact_id == lane
    assert receipt.attempts[-1].outcome == "selected"
    return receipt


def check_worker_death_fallback(
    results: dict[str, dict[str, Any]], tokens: list[int], threads: str, simd: str
) -> None:
    """A worker killed mid-prefill on a page: a typed `WorkerFailure` recorded against `threads`
    (the best lane, threaded); the next `load()` of the same site skips it (`LaneFailed`) and the
    next lane, `simd`, gives the golden tokens; `retryFailedLanes` runs `threads` again to the
    same tokens."""
    died = results[WORKER_DIES]
    assert "error" not in died, died["error"]
    assert died["lane"] == threads
    killed = died["killed"]
    assert not killed["ok"], killed
    assert (killed["name"], killed["code"]) == ("LoaderError", "WorkerFailure"), killed
    assert died["record"][threads]["code"] == "WorkerFailure", died["record"]
    assert died["stats"]["live"] == 0  # the dead lane's runtime was closed
    receipt = check_ran(results[AFTER_DEATH], simd, tokens)
    skipped = receipt.attempts[0]
    assert (skipped.artifact_id, skipped.error_code) == (threads, "LaneFailed"), receipt.attempts
    check_ran(results[RETRY_AFTER_DEATH], threads, tokens)


def check_relaxed_receipt(receipt: CapabilityReceipt, lane: str) -> RelaxedSemantics:
    """An engine that validates the relaxed probe (node, Chromium, Firefox): the receipt names
    the semantics its out-of-range dot showed (one of the allowed), and on a relaxed lane the
    admitted instruction and its executed count (tr_path_counters' relaxed kernel calls: the
    self-test's int8 kernels at least, never every SIMD call, as the f32 tier runs none)."""
    relaxed = receipt.relaxed_simd
    [seen] = relaxed.observed_semantics
    assert seen.instruction == DOT and seen.semantics in {s.name for s in DOT_SEMANTICS}
    if lane in RELAXED_LANES:
        assert relaxed.admitted == [DOT]
        assert list(relaxed.executed) == [DOT]
        assert 0 < relaxed.executed[DOT] < receipt.executed_path_evidence.simd_kernel_calls
        assert receipt.selection.kernel_set.startswith("relaxed-simd128")
    else:
        assert relaxed.admitted == [] and relaxed.executed == {}
    return seen
