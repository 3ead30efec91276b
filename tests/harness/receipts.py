"""A minimal, schema-valid loader capability receipt for hand-made conformance rows."""

from __future__ import annotations

import hashlib
from typing import Any

from verify.canonical import canonical_json
from verify.formats.conformance import TIER_NUMERICAL_MODES
from verify.formats.receipt import RECEIPT_MODELS, RECEIPT_SCHEMA

# the brand each loader engine reports in `host_reported.browser_brand`
BRANDS = {"chromium": "Chromium", "firefox": "Firefox", "webkit": "Safari", "node": "node"}


def loader_receipt(
    engine: str,
    lane: str,
    artifact_sha256: str,
    manifest_sha256: str,
    tier: str = "f32",
    schema: str = RECEIPT_SCHEMA,
) -> dict[str, Any]:
    """The current schema's receipt, or with `schema` an older one (v1: no relaxed_simd)."""
    receipt: dict[str, Any] = {
        "schema": schema,
        "created_utc": "2026-01-01T00:00:00Z",
        "runtime_semantics": 1,
        "abi_version": 1,
        "host_reported": {"browser_brand": BRANDS[engine], "browser_version": "1"},
        "module": {
            "artifact_id": lane,
            "sha256": artifact_sha256,
            "build_manifest_sha256": manifest_sha256,
            "rustc": "1.96.0",
            "llvm": "22.1.8",
            "compile_features": [],
        },
        "observed": {
            "cross_origin_isolated": True,
            "feature_probes": {},
            "workers_requested": 0,
            "workers_started": 0,
            "memory_mode": "growable",
            "memory_bytes": 65536,
        },
        "selection": {
            "numerical_mode": TIER_NUMERICAL_MODES[tier],
            "kernel_set": "scalar",
            "quant_layouts": [],
            "kv_format": "f32",
        },
        "self_test": {"vector_set_sha256": "d" * 64, "scalar": "pass"},
        "executed_path_evidence": {"scalar_kernel_calls": 1, "simd_kernel_calls": 0},
    }
    if schema != "tinyrustlm.capability-receipt.v1":
        receipt["relaxed_simd"] = {"admitted": [], "executed": {}, "observed_semantics": []}
    RECEIPT_MODELS[schema].model_validate(receipt)  # a fixture that drifts fails here
    return receipt


def receipt_sha256(receipt: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(receipt)).hexdigest()
