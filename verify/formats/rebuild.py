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

from typing import Final, Literal, get_args

from pydantic import Field

from verify.formats.base import Sha256Hex
from verify.formats.in_toto import Camel, Digest, Statement
from verify.formats.provenance import RunMetadata, SourceRef

REBUILD_ATTESTATION_SCHEMA = "tinyrustlm.rebuild-attestation.v1"
RebuildBuildType = Literal["https://tinyrustlm.dev/release/build-type/rebuild/v1"]
REBUILD_BUILD_TYPE: Final[RebuildBuildType] = get_args(RebuildBuildType)[0]
REBUILDER_ID_PREFIX = "https://tinyrustlm.dev/release/rebuilder/"
UPSTREAM = "upstream:"
REBUILT = "rebuilt:"


class RebuiltRelease(Camel):
    version: str
    source: SourceRef
    build_id: Sha256Hex
    bundle: str = Field(description="the bundle's folder name, tinyrustlm-<version>")


class ToolchainCheck(Camel):
    result: Literal["pass"]
    toolchain_lock_sha256: Sha256Hex
    drifted_fields: list[str] = Field(description="always empty: a drifted rebuilder stops")


class RebuildInternal(Camel):
    source_date_epoch: int
    toolchain_check: ToolchainCheck


class Dependency(Camel):
    name: str
    digest: dict[str, str]


class DocumentMatch(Camel):
    name: str = Field(description="bundle path of an unsigned document")
    digest: Digest = Field(description="the rebuilder's re-assembled bytes")
    annotations: dict[str, bool] = Field(description='{"matched": byte-identical to the bundle}')


class BuildDefinition(Camel):
    build_type: RebuildBuildType
    external_parameters: RebuiltRelease
    internal_parameters: RebuildInternal
    resolved_dependencies: list[Dependency]


class Builder(Camel):
    id: str = Field(description=REBUILDER_ID_PREFIX + "<keyid>")


class RunDetails(Camel):
    builder: Builder
    metadata: RunMetadata
    byproducts: list[DocumentMatch]


class RebuildPredicate(Camel):
    build_definition: BuildDefinition
    run_details: RunDetails


class RebuildStatement(Statement):
    """tinyrustlm.rebuild-attestation.v1: the DSSE payload of rebuild.<keyid16>.sigstore.json."""

    predicate: RebuildPredicate
