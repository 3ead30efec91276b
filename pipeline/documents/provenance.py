"""in-toto Statement v1 with a SLSA Provenance v1 predicate, as canonical JSON bytes.

Subjects are every bundle file that is not itself a signature or a checksum list: the
artifacts, the JS host files, manifest.json, sbom.cdx.json and verification-report.json.
`sigstore.dsse.Statement` checks the statement's shape on the exact bytes we sign.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sigstore.dsse import Statement
from sigstore.errors import Error as SigstoreError

from pipeline import paths
from pipeline.documents.errors import DocumentError
from pipeline.documents.sbom import BuildStep, ToolchainPackage, purl
from pipeline.tree.sources import CrateSource
from verify.canonical import canonical_json

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
SLSA_PREDICATE_TYPE = "https://slsa.dev/provenance/v1"
# Names this pipeline's build process; a new meaning of the parameters needs a new version.
BUILD_TYPE = "https://tinyrustlm.dev/release/build-type/cargo-lanes/v1"
BUILDER_ID = "https://tinyrustlm.dev/release/builder/tinyrustlm-release"


@dataclass(frozen=True)
class ProvenanceInputs:
    version: str
    build_id: str
    source_revision: str
    source_date_epoch: int
    toolchain_lock_sha256: str
    lanes: Sequence[str]
    subjects: Sequence[tuple[str, str]]  # (bundle url, sha256)
    crates: Sequence[CrateSource]
    toolchain: Sequence[ToolchainPackage]
    steps: Sequence[BuildStep]


def statement_document(inputs: ProvenanceInputs) -> dict[str, Any]:
    dependencies: list[dict[str, Any]] = [
        {"name": "source", "digest": {"gitCommit": inputs.source_revision}},
        {"name": str(paths.LOCK_FILE), "digest": {"sha256": inputs.toolchain_lock_sha256}},
    ]
    dependencies += [
        {
            "name": f"crate:{c.name}",
            "uri": purl("cargo", c.name, c.version),
            "digest": {"sha256": c.sha256},
            "annotations": {"path": c.path},
        }
        for c in inputs.crates
    ]
    dependencies += [
        {"name": p.name, "uri": p.purl, "digest": {"sha256": p.sha256}} for p in inputs.toolchain
    ]
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": url, "digest": {"sha256": sha}} for url, sha in inputs.subjects],
        "predicateType": SLSA_PREDICATE_TYPE,
        "predicate": {
            "buildDefinition": {
                "buildType": BUILD_TYPE,
                "externalParameters": {
                    "source": {"revision": inputs.source_revision},
                    "lanes": list(inputs.lanes),
                    "version": inputs.version,
                },
                "internalParameters": {
                    "sourceDateEpoch": inputs.source_date_epoch,
                    "toolchainLockSha256": inputs.toolchain_lock_sha256,
                    "commands": {
                        step.lane: {"argv": list(step.argv), "env": dict(step.env)}
                        for step in inputs.steps
                    },
                },
                "resolvedDependencies": dependencies,
            },
            "runDetails": {
                "builder": {"id": BUILDER_ID, "version": {"tinyrustlm-release": inputs.version}},
                "metadata": {"invocationId": inputs.build_id},
            },
        },
    }


def statement_bytes(inputs: ProvenanceInputs) -> bytes:
    """Canonical statement bytes, shape-checked by sigstore's in-toto Statement model."""
    payload = canonical_json(statement_document(inputs))
    try:
        Statement(payload)
    except SigstoreError as exc:
        raise DocumentError(
            f"not an in-toto Statement v1: {exc}",
            where="provenance",
            error_id="documents.provenance-schema",
        ) from exc
    return payload
