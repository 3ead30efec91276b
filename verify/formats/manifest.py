"""`tinyrustlm.module-manifest.v1`: what a release contains, signed as canonical JSON.

The reference's manifest (schema, runtime_semantics, abi_version, artifacts with id, url,
sha256, required/forbidden features, cross-origin isolation, memory) plus what a verifier
needs to tie it to one build: release version, source revision, toolchain.lock digest,
SOURCE_DATE_EPOCH, native artifacts, JS host files, key class, build id and expiry.
Every `url` is a path relative to the bundle root.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import Field, model_validator

from verify.canonical import canonical_json
from verify.formats.base import Frozen, LaneId, Sha256Hex
from verify.formats.release_version import ReleaseVersion

MANIFEST_SCHEMA = "tinyrustlm.module-manifest.v1"
# DSSE payloadType of the signed manifest (the provenance uses in-toto's own type).
MANIFEST_PAYLOAD_TYPE = "application/vnd.tinyrustlm.module-manifest.v1+json"

GitRevision = Annotated[str, Field(pattern=r"^[0-9a-f]{40}([0-9a-f]{24})?$")]
# Bundle-relative POSIX path: relative, no empty segments, no segment starting with "."
# (so no `.`, `..` or hidden files).
BundlePath = Annotated[
    str, Field(pattern=r"^[A-Za-z0-9_+-][A-Za-z0-9._+-]*(/[A-Za-z0-9_+-][A-Za-z0-9._+-]*)*$")
]
KeyClass = Literal["release", "development"]


class MemoryRules(Frozen):
    """How the module's linear memory may behave (the reference's `memory` object)."""

    shared: bool
    growth: bool


class WasmArtifact(Frozen):
    id: LaneId
    url: BundlePath = Field(description="content-addressed file, relative to the bundle root")
    sha256: Sha256Hex
    size: int = Field(ge=0)
    required_features: list[str]
    forbidden_features: list[str]
    requires_cross_origin_isolation: bool = False
    memory: MemoryRules | None = None
    js_glue: BundlePath | None = Field(
        None, description="url of the JS host file this module is instantiated by (a pair)"
    )
    relaxed_instructions: dict[str, int] | None = Field(
        None,
        description="relaxed-SIMD instructions the module's code holds, Wasm name -> count, "
        "counted from the final bytes by verify's inventory ({}: none; absent in manifests "
        "made before the relaxed lanes); verify bundle recounts them",
    )


class NativeArtifact(Frozen):
    id: LaneId
    target: str
    url: BundlePath
    sha256: Sha256Hex
    size: int = Field(ge=0)


class HostFile(Frozen):
    """A JavaScript host or loader module shipped beside the .wasm files."""

    url: BundlePath
    sha256: Sha256Hex
    size: int = Field(ge=0)


class CompilerVersions(Frozen):
    """The pinned compiler that built every artifact (from toolchain.lock), for receipts."""

    rustc: str
    llvm: str


class ModuleManifest(Frozen):
    schema_: Literal["tinyrustlm.module-manifest.v1"] = Field(
        "tinyrustlm.module-manifest.v1", alias="schema"
    )
    runtime_semantics: int = 1
    abi_version: int = 1
    version: ReleaseVersion = Field(description="release version (pyproject [project].version)")
    source_revision: GitRevision
    toolchain_lock_sha256: Sha256Hex
    source_date_epoch: int = Field(ge=0)
    expires_epoch: int = Field(description="verifiers refuse the manifest at or after this time")
    key_class: KeyClass
    build_id: Sha256Hex = Field(
        description="SHA-256 of the canonical manifest without build_id, then every listed "
        "file's bytes in manifest order (artifacts, native_artifacts, js_files)"
    )
    artifacts: list[WasmArtifact]
    native_artifacts: list[NativeArtifact] = Field(default_factory=list)
    js_files: list[HostFile] = Field(default_factory=list)
    compiler: CompilerVersions | None = None
    disabled_lanes: list[LaneId] | None = Field(
        None,
        description="wasm lane ids a loader must not select (a signed rollback switch: a "
        "lane can be turned off for a release by re-signing, without a rebuild)",
    )
    unsmoked_lanes: list[LaneId] | None = Field(
        None,
        description="lanes shipped although their self-test did not run on the release "
        "machine (no engine there), each named by the maintainer (release --ship-unsmoked)",
    )

    @model_validator(mode="after")
    def _disabled_lanes_are_wasm_lanes(self) -> ModuleManifest:
        known = {a.id for a in self.artifacts}
        unknown = sorted(set(self.disabled_lanes or []) - known)
        if unknown:
            raise ValueError(f"disabled_lanes names no wasm artifact: {unknown}")
        every = known | {a.id for a in self.native_artifacts}
        unknown = sorted(set(self.unsmoked_lanes or []) - every)
        if unknown:
            raise ValueError(f"unsmoked_lanes names no artifact: {unknown}")
        return self

    def listed_files(self) -> list[tuple[str, str]]:
        """(url, sha256) of every file the manifest names, in manifest order."""
        return [(url, sha) for url, sha, _ in self.listed_sizes()]

    def listed_sizes(self) -> list[tuple[str, str, int]]:
        """(url, sha256, size) of every file the manifest names, in manifest order: wasm
        artifacts, native artifacts, JS files. The one definition of that order (the build
        id hashes the files in it)."""
        rows = [(a.url, a.sha256, a.size) for a in self.artifacts]
        rows += [(a.url, a.sha256, a.size) for a in self.native_artifacts]
        rows += [(f.url, f.sha256, f.size) for f in self.js_files]
        return rows

    def lanes(self) -> list[tuple[str, str]]:
        """(url, lane id) of every wasm and native artifact, in manifest order."""
        return [(a.url, a.id) for a in self.artifacts] + [
            (a.url, a.id) for a in self.native_artifacts
        ]


def manifest_without_build_id(manifest: ModuleManifest) -> bytes:
    """Canonical JSON of the manifest minus `build_id`: the first input of the build id."""
    doc = manifest.model_dump(mode="json", by_alias=True, exclude_none=True)
    del doc["build_id"]
    return canonical_json(doc)


def build_id(manifest: ModuleManifest, file_bytes: Mapping[str, bytes]) -> str:
    """The reference's public build id: SHA-256(canonical manifest || listed files' bytes).

    The manifest is taken without `build_id`, so the id can live inside the manifest it
    identifies (its own value is ignored); then every file it lists, in the one order
    `listed_sizes` defines, looked up by url in `file_bytes`. The pipeline computes the id
    with this function and the bundle verifier recomputes it with it.
    """
    digest = hashlib.sha256(manifest_without_build_id(manifest))
    for url, _ in manifest.listed_files():
        digest.update(file_bytes[url])
    return digest.hexdigest()
