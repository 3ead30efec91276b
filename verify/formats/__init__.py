"""Versioned machine formats as pydantic models; each is exported as a JSON Schema.

The models live in `verify` so that verifiers and the pipeline share one definition
(pipeline may import verify, never the reverse).
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

# schema name -> "module:ClassName". One row per format; tests keep manifests/schemas/ in sync.
SCHEMAS: dict[str, str] = {
    "tinyrustlm.module-manifest.v1": "verify.formats.manifest:ModuleManifest",
    "tinyrustlm.verification-report.v1": "verify.formats.report:VerificationReport",
    "tinyrustlm.golden-vector.v1": "verify.formats.golden:GoldenVector",
    "tinyrustlm.capability-receipt.v1": "verify.formats.receipt:CapabilityReceipt",
    "tinyrustlm.trusted-keys.v1": "verify.trusted_keys:TrustedKeysFile",
}


def model_class(schema_name: str) -> Any:
    module_name, _, class_name = SCHEMAS[schema_name].partition(":")
    return getattr(importlib.import_module(module_name), class_name)


def schema_json(schema_name: str) -> str:
    """The JSON Schema text exactly as committed under manifests/schemas/<name>.json."""
    schema = model_class(schema_name).model_json_schema()
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def export_all(folder: Path) -> list[Path]:
    """Write every schema whose model exists; returns the files written."""
    written: list[Path] = []
    for name in SCHEMAS:
        try:
            text = schema_json(name)
        except ModuleNotFoundError:
            continue  # the format's model has not been written yet
        path = folder / f"{name}.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        written.append(path)
    return written
