"""CycloneDX 1.6 SBOM of a release, written as JSON by hand.

cyclonedx-python-lib's object model has no `formulation`, so the document is built here as
plain data and the library's strict 1.6 JSON validator checks it (tests, and `check_sbom`).
Components: every bundle file (type `file`, SHA-256, made by the model the verifier reads
them with, `verify.formats.cyclonedx.FileComponent`: it compares them with the bytes), the
crates (source tree digests), the toolchain .debs (pkg:deb purls, .deb SHA-256) and the
pipeline's pinned Python closure. `formulation` records each lane's build command.
"""

from __future__ import annotations

import shlex
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from packageurl import PackageURL

from pipeline.documents.errors import DocumentError
from pipeline.tree.sources import CrateSource, PythonRequirement
from verify.canonical import canonical_json
from verify.formats.cyclonedx import BOM_FORMAT, SPEC_VERSION, FileComponent

# uuid5 namespace for the serial number: same build id, same serial (deterministic bundles).
SERIAL_NAMESPACE = uuid.UUID("6f1c3b0e-3a51-5e7e-9d35-2f9a1c0b7d11")
TOOL_NAME = "tinyrustlm-release"


@dataclass(frozen=True)
class ToolchainPackage:
    name: str
    version: str
    architecture: str
    sha256: str  # of the .deb

    @property
    def purl(self) -> str:
        """pkg:deb/debian/NAME@VERSION?arch=ARCH (version percent-encoded: `+` is %2B)."""
        return purl(
            "deb",
            self.name,
            self.version,
            namespace="debian",
            qualifiers={"arch": self.architecture},
        )


@dataclass(frozen=True)
class BuildStep:
    lane: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class SbomInputs:
    version: str
    build_id: str
    source_revision: str
    source_date_epoch: int
    files: Sequence[tuple[str, str]]  # (bundle url, sha256)
    crates: Sequence[CrateSource]
    toolchain: Sequence[ToolchainPackage]
    python: Sequence[PythonRequirement]
    steps: Sequence[BuildStep]


def purl(
    kind: str,
    name: str,
    version: str,
    namespace: str | None = None,
    qualifiers: dict[str, str] | None = None,
) -> str:
    return str(
        PackageURL(
            type=kind, namespace=namespace, name=name, version=version, qualifiers=qualifiers
        ).to_string()
    )


def _utc(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _sha256(digest: str) -> list[dict[str, str]]:
    return [{"alg": "SHA-256", "content": digest}]


def sbom_document(inputs: SbomInputs) -> dict[str, Any]:
    release_ref = f"tinyrustlm@{inputs.version}"
    # the file components through the verifier's model of them (verify.formats.cyclonedx)
    components = [FileComponent.of(url, sha).document() for url, sha in inputs.files]
    for crate in inputs.crates:
        licence = [{"expression": crate.license}] if crate.license else []
        components.append(
            {
                **({"licenses": licence} if licence else {}),
                "type": "library",
                "bom-ref": f"crate:{crate.name}",
                "name": crate.name,
                "version": crate.version,
                "purl": purl("cargo", crate.name, crate.version),
                "hashes": _sha256(crate.sha256),
                "properties": [
                    {"name": "tinyrustlm:source-path", "value": crate.path},
                    {
                        "name": "tinyrustlm:source-digest",
                        "value": "sha256 over 'path NUL sha256 LF' of every tracked file, sorted",
                    },
                ],
            }
        )
    for package in inputs.toolchain:
        components.append(
            {
                "type": "application",
                "bom-ref": f"deb:{package.name}:{package.architecture}",
                "name": package.name,
                "version": package.version,
                "scope": "excluded",
                "purl": package.purl,
                "hashes": _sha256(package.sha256),
            }
        )
    for req in inputs.python:
        components.append(
            {
                "type": "library",
                "bom-ref": f"pypi:{req.name}",
                "name": req.name,
                "version": req.version,
                "scope": "excluded",
                "purl": purl("pypi", req.name, req.version),
            }
        )
    refs = [c["bom-ref"] for c in components]
    if len(set(refs)) != len(refs):
        raise DocumentError(
            "two SBOM components have the same bom-ref",
            where="sbom",
            error_id="documents.sbom-duplicate-ref",
        )
    tasks = [
        {
            "bom-ref": f"task:build:{step.lane}",
            "uid": f"build-{step.lane}",
            "name": f"build {step.lane}",
            "taskTypes": ["build"],
            "steps": [
                {
                    "name": "cargo",
                    "commands": [
                        {
                            "executed": shlex.join(step.argv),
                            "properties": [{"name": f"env:{k}", "value": v} for k, v in step.env],
                        }
                    ],
                }
            ],
        }
        for step in inputs.steps
    ]
    return {
        "bomFormat": BOM_FORMAT,
        "specVersion": SPEC_VERSION,
        "serialNumber": f"urn:uuid:{uuid.uuid5(SERIAL_NAMESPACE, inputs.build_id)}",
        "version": 1,
        "metadata": {
            "timestamp": _utc(inputs.source_date_epoch),
            "tools": {
                "components": [
                    {"type": "application", "name": TOOL_NAME, "version": inputs.version}
                ]
            },
            "component": {
                "type": "application",
                "bom-ref": release_ref,
                "name": "tinyrustlm",
                "version": inputs.version,
                "properties": [
                    {"name": "tinyrustlm:source-revision", "value": inputs.source_revision},
                    {"name": "tinyrustlm:build-id", "value": inputs.build_id},
                ],
            },
        },
        "components": components,
        "dependencies": [
            {"ref": release_ref, "dependsOn": [f"file:{url}" for url, _ in inputs.files]},
        ],
        "formulation": [
            {
                "bom-ref": "formulation:release",
                "workflows": [
                    {
                        "bom-ref": "workflow:build",
                        "uid": "build",
                        "name": "build every lane with the pinned toolchain",
                        "taskTypes": ["build"],
                        "tasks": tasks,
                    }
                ],
            }
        ],
    }


def sbom_bytes(inputs: SbomInputs) -> bytes:
    """sbom.cdx.json: canonical JSON (deterministic), newline-terminated."""
    return canonical_json(sbom_document(inputs)) + b"\n"


def check_sbom(data: bytes) -> None:
    """Strict CycloneDX 1.6 schema validation with cyclonedx-python-lib."""
    # The one function-local import of pipeline/: the validator takes 3.5 s to import
    # (measured, `python -X importtime`), which every other command would pay at start-up.
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    error = JsonStrictValidator(SchemaVersion.V1_6).validate_str(data.decode("utf-8"))
    if error is not None:
        raise DocumentError(
            f"SBOM is not valid CycloneDX 1.6: {error}",
            where="sbom.cdx.json",
            error_id="documents.sbom-schema",
        )
