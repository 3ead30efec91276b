"""The release's provenance: an in-toto Statement v1 with a SLSA Provenance v1 predicate, the
DSSE payload of provenance.sigstore.json.

    subject                      every bundle file that is not a signature or a checksum list
    buildDefinition.buildType    RELEASE_BUILD_TYPE
      externalParameters         source revision, lanes, version
      internalParameters         SOURCE_DATE_EPOCH, toolchain.lock's SHA-256, each lane's command
      resolvedDependencies       source commit, toolchain.lock, crates, toolchain .debs
    runDetails                   the builder (and its version), the build id as invocationId

`ReleaseProvenance` is what the release writes (`pipeline.documents.provenance` builds it).
`ProvenanceClaims` is what the verifier reads of the same bytes: the statement's frame
strictly (type URIs, subjects), and of the predicate only what it can hold against the bundle,
the source revision. A predicate it cannot read states no revision (None), which is then
refused as not the manifest's: the builder's other words are not the verifier's to judge.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, get_args

from pydantic import (
    AliasPath,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)

from verify.formats.base import Sha256Hex
from verify.formats.in_toto import Camel, Statement
from verify.formats.manifest import GitRevision

# Names this pipeline's build process; a new meaning of the parameters needs a new version.
ReleaseBuildType = Literal["https://tinyrustlm.dev/release/build-type/cargo-lanes/v1"]
RELEASE_BUILD_TYPE: Final[ReleaseBuildType] = get_args(ReleaseBuildType)[0]
ReleaseBuilderId = Literal["https://tinyrustlm.dev/release/builder/tinyrustlm-release"]
BUILDER_ID: Final[ReleaseBuilderId] = get_args(ReleaseBuilderId)[0]


class SourceRef(Camel):
    revision: GitRevision


class RunMetadata(Camel):
    invocation_id: str


class ResourceDescriptor(Camel):
    """A resolved dependency (in-toto ResourceDescriptor): a name, its digests, maybe a purl."""

    name: str
    uri: str | None = None
    digest: dict[str, str]
    annotations: dict[str, str] | None = None


class ReleaseParameters(Camel):
    source: SourceRef
    lanes: list[str]
    version: str


class LaneCommand(Camel):
    argv: list[str]
    env: dict[str, str]


class ReleaseInternals(Camel):
    source_date_epoch: int
    toolchain_lock_sha256: Sha256Hex
    commands: dict[str, LaneCommand] = Field(description="lane id -> its build command")


class ReleaseBuildDefinition(Camel):
    build_type: ReleaseBuildType
    external_parameters: ReleaseParameters
    internal_parameters: ReleaseInternals
    resolved_dependencies: list[ResourceDescriptor]


class ReleaseBuilder(Camel):
    id: ReleaseBuilderId
    version: dict[str, str] = Field(description='{"tinyrustlm-release": <version>}')


class ReleaseRunDetails(Camel):
    builder: ReleaseBuilder
    metadata: RunMetadata


class ReleasePredicate(Camel):
    build_definition: ReleaseBuildDefinition
    run_details: ReleaseRunDetails


class ReleaseProvenance(Statement):
    """The release's provenance statement, as the release writes it."""

    predicate: ReleasePredicate


class RevisionClaim(BaseModel):
    """Of a SLSA predicate, the one fact the verifier checks: the source revision it names
    (None when it names none, or not where SLSA's buildDefinition puts it)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    revision: JsonValue = Field(
        default=None,
        validation_alias=AliasPath("buildDefinition", "externalParameters", "source", "revision"),
    )


def _unreadable_is_none(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    try:
        return handler(value)
    except ValidationError:
        return None


class ProvenanceClaims(Statement):
    """The provenance statement as the verifier reads it (see the module's docstring)."""

    predicate: Annotated[RevisionClaim | None, WrapValidator(_unreadable_is_none)] = None

    @property
    def source_revision(self) -> JsonValue:
        return None if self.predicate is None else self.predicate.revision
