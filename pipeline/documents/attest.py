"""`reproduce --attest`: sign what a rebuild established (verify/formats/rebuild.py).

The statement is canonical JSON signed as DSSE in a sigstore bundle v0.3 with the release's
own machinery (`pipeline.documents.sign`); written as rebuild.<keyid[:16]>.sigstore.json.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline import paths
from pipeline.documents.keys import SigningKey
from pipeline.documents.sign import sign_to_sigstore_bundle
from pipeline.io.atomic import write_atomic
from verify.bundle.layout import bundle_name
from verify.canonical import canonical_json
from verify.formats.in_toto import IN_TOTO_PAYLOAD_TYPE, SLSA_PREDICATE_TYPE, STATEMENT_TYPE
from verify.formats.manifest import ModuleManifest
from verify.formats.rebuild import (
    REBUILD_BUILD_TYPE,
    REBUILDER_ID_PREFIX,
    REBUILT,
    UPSTREAM,
    RebuildStatement,
)


@dataclass(frozen=True)
class Compared:
    """One bundle file and its rebuilt twin."""

    name: str
    expected_sha256: str
    rebuilt_sha256: str

    @property
    def identical(self) -> bool:
        return self.expected_sha256 == self.rebuilt_sha256


def attestation_name(keyid: str) -> str:
    return f"rebuild.{keyid[:16]}.sigstore.json"


def rebuild_statement(
    manifest: ModuleManifest,
    artifacts: Sequence[Compared],
    documents: Sequence[Compared],
    keyid: str,
) -> RebuildStatement:
    """Subjects: every compared file that reproduced bit for bit (artifacts and documents:
    manifest.json, SBOM, report, the provenance statement, SHA256SUMS, tarball); evidence:
    every artifact's two digests and every document's `matched` verdict, so the attestation
    states each file it compared and what it found."""
    reproduced = [c for c in (*artifacts, *documents) if c.identical]
    doc = {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": a.name, "digest": {"sha256": a.rebuilt_sha256}} for a in reproduced],
        "predicateType": SLSA_PREDICATE_TYPE,
        "predicate": {
            "buildDefinition": {
                "buildType": REBUILD_BUILD_TYPE,
                "externalParameters": {
                    "version": manifest.version,
                    "source": {"revision": manifest.source_revision},
                    "buildId": manifest.build_id,
                    "bundle": bundle_name(manifest.version),
                },
                "internalParameters": {
                    "sourceDateEpoch": manifest.source_date_epoch,
                    "toolchainCheck": {
                        "result": "pass",
                        "toolchainLockSha256": manifest.toolchain_lock_sha256,
                        "driftedFields": [],
                    },
                },
                "resolvedDependencies": [
                    {"name": "source", "digest": {"gitCommit": manifest.source_revision}},
                    {
                        "name": str(paths.LOCK_FILE),
                        "digest": {"sha256": manifest.toolchain_lock_sha256},
                    },
                    *(
                        {"name": f"{side}{a.name}", "digest": {"sha256": sha}}
                        for a in artifacts
                        for side, sha in (
                            (UPSTREAM, a.expected_sha256),
                            (REBUILT, a.rebuilt_sha256),
                        )
                    ),
                ],
            },
            "runDetails": {
                "builder": {"id": REBUILDER_ID_PREFIX + keyid},
                "metadata": {"invocationId": manifest.build_id},
                "byproducts": [
                    {
                        "name": d.name,
                        "digest": {"sha256": d.rebuilt_sha256},
                        "annotations": {"matched": d.identical},
                    }
                    for d in documents
                ],
            },
        },
    }
    return RebuildStatement.model_validate(doc)


def write_attestation(statement: RebuildStatement, key: SigningKey, out: Path) -> Path:
    """Sign `statement` and write it to `out` (a folder: the standard file name in it)."""
    payload = canonical_json(statement.document())
    signed = sign_to_sigstore_bundle(key.private_key, IN_TOTO_PAYLOAD_TYPE, payload)
    path = out / attestation_name(key.keyid) if out.is_dir() else out
    write_atomic(path, signed)
    return path
