"""Assertions shared by the node and Chromium loader tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs; installed via cyclonedx

from tests.js.loader.cases import AFTER_DEATH, RETRY_AFTER_DEATH, WORKER_DIES
from verify.formats.receipt import CapabilityReceipt

SCHEMA = (
    Path(__file__).resolve().parents[3] / "manifests/schemas/tinyrustlm.capability-receipt.v1.json"
)


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
    """A worker killed mid-prefill on a page: a typed `WorkerFailure` recorded against the threads
    lane; the next `load()` of the same site skips it (`LaneFailed`) and simd128 gives the golden
    tokens; `retryFailedLanes` runs the threads lane again to the same tokens."""
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
