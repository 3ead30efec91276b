"""Assertions shared by the node and Chromium loader tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs; installed via cyclonedx

from verify.formats.receipt import CapabilityReceipt

SCHEMA = (
    Path(__file__).resolve().parents[3] / "manifests/schemas/tinyrustlm.capability-receipt.v2.json"
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
