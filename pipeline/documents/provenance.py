"""in-toto Statement v1 with a SLSA Provenance v1 predicate, as canonical JSON bytes.

Subjects are every bundle file that is not itself a signature or a checksum list: the
artifacts, the JS host files, manifest.json, sbom.cdx.json and verification-report.json.
The statement is the model `verify.formats.provenance.ReleaseProvenance` (the verifier reads
the same bytes with its `ProvenanceClaims`); `sigstore.dsse.Statement` checks the shape again
on the exact bytes we sign.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sigstore.dsse import Statement
from sigstore.errors import Error as SigstoreError

from pipeline import paths
from pipeline.documents.errors import DocumentError
from pipeline.documents.sbom import BuildStep, ToolchainPackage, purl
from pipeline.tree.sources import CrateSource
from verify.canonical import canonical_json
from verify.formats.in_toto import SLSA_PREDICATE_TYPE, STATEMENT_TYPE, Subject
from verify.formats.provenance import (
    BUILDER_ID,
    RELEASE_BUILD_TYPE,
    LaneCommand,
    ReleaseBuildDefinition,
    ReleaseBuilder,
    ReleaseInternals,
    ReleaseParameters,
    ReleasePredicate,
    ReleaseProvenance,
    ReleaseRunDetails,
    ResourceDescriptor,
    RunMetadata,
    SourceRef,
)


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


def _dependencies(inputs: ProvenanceInputs) -> list[ResourceDescriptor]:
    dependencies = [
        ResourceDescriptor(name="source", digest={"gitCommit": inputs.source_revision}),
        ResourceDescriptor(
            name=str(paths.LOCK_FILE), digest={"sha256": inputs.toolchain_lock_sha256}
        ),
    ]
    dependencies += [
        ResourceDescriptor(
            name=f"crate:{c.name}",
            uri=purl("cargo", c.name, c.version),
            digest={"sha256": c.sha256},
            annotations={"path": c.path},
        )
        for c in inputs.crates
    ]
    dependencies += [
        ResourceDescriptor(name=p.name, uri=p.purl, digest={"sha256": p.sha256})
        for p in inputs.toolchain
    ]
    return dependencies


def provenance_statement(inputs: ProvenanceInputs) -> ReleaseProvenance:
    build = ReleaseBuildDefinition(
        build_type=RELEASE_BUILD_TYPE,
        external_parameters=ReleaseParameters(
            source=SourceRef(revision=inputs.source_revision),
            lanes=list(inputs.lanes),
            version=inputs.version,
        ),
        internal_parameters=ReleaseInternals(
            source_date_epoch=inputs.source_date_epoch,
            toolchain_lock_sha256=inputs.toolchain_lock_sha256,
            commands={
                step.lane: LaneCommand(argv=list(step.argv), env=dict(step.env))
                for step in inputs.steps
            },
        ),
        resolved_dependencies=_dependencies(inputs),
    )
    run = ReleaseRunDetails(
        builder=ReleaseBuilder(id=BUILDER_ID, version={"tinyrustlm-release": inputs.version}),
        metadata=RunMetadata(invocation_id=inputs.build_id),
    )
    return ReleaseProvenance(
        type_=STATEMENT_TYPE,
        subject=[Subject.of(url, sha) for url, sha in inputs.subjects],
        predicate_type=SLSA_PREDICATE_TYPE,
        predicate=ReleasePredicate(build_definition=build, run_details=run),
    )


def statement_bytes(inputs: ProvenanceInputs) -> bytes:
    """Canonical statement bytes, shape-checked by sigstore's in-toto Statement model."""
    payload = canonical_json(provenance_statement(inputs).document())
    try:
        Statement(payload)
    except SigstoreError as exc:
        raise DocumentError(
            f"not an in-toto Statement v1: {exc}",
            where="provenance",
            error_id="documents.provenance-schema",
        ) from exc
    return payload
