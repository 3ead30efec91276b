"""A signed rebuild attestation: an in-toto Statement v1 whose SLSA Provenance v1 predicate
says "I rebuilt this release from its source and got these exact bytes".

Modelled on OSS Rebuild's two build types, folded into one statement:
`https://docs.oss-rebuild.dev/builds/Rebuild@v0.1` (the rebuild: source, toolchain, steps)
and `.../ArtifactEquivalence@v0.1` (rebuilt vs upstream digests, as resolvedDependencies).

    subject                      every file the rebuilder reproduced bit for bit: artifacts
                                 and documents (manifest.json, the provenance statement, ...)
    buildDefinition.buildType    REBUILD_BUILD_TYPE
      externalParameters         the release it rebuilt: version, source revision, build id
      internalParameters         SOURCE_DATE_EPOCH and the rebuilder's toolchain check result
      resolvedDependencies       source commit, toolchain.lock, and for every artifact its
                                 `upstream:` (bundle) and `rebuilt:` digests
    runDetails.byproducts        each unsigned document re-assembled from the rebuild, with
                                 `matched` (byte-identical to the bundle's)

No time of day is recorded, so one rebuilder attesting twice signs the same bytes.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field
from pydantic.alias_generators import to_camel

from verify.formats.base import Frozen, Sha256Hex
from verify.formats.manifest import GitRevision

REBUILD_ATTESTATION_SCHEMA = "tinyrustlm.rebuild-attestation.v1"
REBUILD_BUILD_TYPE = "https://tinyrustlm.dev/release/build-type/rebuild/v1"
REBUILDER_ID_PREFIX = "https://tinyrustlm.dev/release/rebuilder/"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
SLSA_PREDICATE_TYPE = "https://slsa.dev/provenance/v1"
UPSTREAM = "upstream:"
REBUILT = "rebuilt:"


class _Camel(Frozen):
    """A Frozen format whose JSON keys are in-toto's camelCase."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True
    )


class Digest(_Camel):
    sha256: Sha256Hex


class Subject(_Camel):
    name: str
    digest: Digest


class SourceRef(_Camel):
    revision: GitRevision


class RebuiltRelease(_Camel):
    version: str
    source: SourceRef
    build_id: Sha256Hex
    bundle: str = Field(description="the bundle's folder name, tinyrustlm-<version>")


class ToolchainCheck(_Camel):
    result: Literal["pass"]
    toolchain_lock_sha256: Sha256Hex
    drifted_fields: list[str] = Field(description="always empty: a drifted rebuilder stops")


class RebuildInternal(_Camel):
    source_date_epoch: int
    toolchain_check: ToolchainCheck


class Dependency(_Camel):
    name: str
    digest: dict[str, str]


class DocumentMatch(_Camel):
    name: str = Field(description="bundle path of an unsigned document")
    digest: Digest = Field(description="the rebuilder's re-assembled bytes")
    annotations: dict[str, bool] = Field(description='{"matched": byte-identical to the bundle}')


class BuildDefinition(_Camel):
    build_type: Literal["https://tinyrustlm.dev/release/build-type/rebuild/v1"]
    external_parameters: RebuiltRelease
    internal_parameters: RebuildInternal
    resolved_dependencies: list[Dependency]


class Builder(_Camel):
    id: str = Field(description=REBUILDER_ID_PREFIX + "<keyid>")


class RunMetadata(_Camel):
    invocation_id: str


class RunDetails(_Camel):
    builder: Builder
    metadata: RunMetadata
    byproducts: list[DocumentMatch]


class RebuildPredicate(_Camel):
    build_definition: BuildDefinition
    run_details: RunDetails


class RebuildStatement(_Camel):
    """tinyrustlm.rebuild-attestation.v1: the DSSE payload of rebuild.<keyid16>.sigstore.json."""

    type_: Literal["https://in-toto.io/Statement/v1"] = Field(alias="_type")
    subject: Annotated[list[Subject], Field(min_length=1)]
    predicate_type: Literal["https://slsa.dev/provenance/v1"]
    predicate: RebuildPredicate

    def attested(self) -> dict[str, str]:
        """subject name -> sha256."""
        return {s.name: s.digest.sha256 for s in self.subject}
