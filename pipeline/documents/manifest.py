"""Build the signed module manifest from a build index (plus the JS host files).

The manifest names every file of the bundle that is a release artifact by a bundle-relative
url and its SHA-256; the build id binds the manifest to those bytes. `build_manifest` is pure
(bytes in, manifest out); reading files is `artifact_files`/`js_host_files`. Nothing here signs;
`pipeline.documents.sign` signs the canonical bytes this module returns.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from pipeline.documents.errors import DocumentError, DocumentRefused
from pipeline.js import package
from pipeline.lanebuild.records import BuildIndex
from pipeline.toolchain.lockfile import ToolchainLock
from pipeline.tree.snapshot import SourceFile
from verify.canonical import canonical_model
from verify.formats.manifest import (
    CompilerVersions,
    HostFile,
    KeyClass,
    MemoryRules,
    ModuleManifest,
    NativeArtifact,
    WasmArtifact,
    build_id,
)

ARTIFACTS_DIR = "artifacts"
JS_DIR = "js"
NPM_DIR = "npm"
# The JS module every .wasm is instantiated by: the manifest pairs each module with it.
JS_GLUE_NAME = "host.js"


@dataclass(frozen=True)
class LaneContract:
    """What a wasm lane promises a host: the reference manifest's per-artifact fields."""

    required_features: tuple[str, ...]
    forbidden_features: tuple[str, ...]
    requires_cross_origin_isolation: bool = False
    memory: MemoryRules | None = None
    # the relaxed-SIMD instructions the built module holds (name, count), from the report
    relaxed_instructions: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class BundleFile:
    """One file placed in the bundle: where its bytes come from and what they must hash to."""

    url: str
    data: bytes
    sha256: str
    size: int
    lane: str = ""


def _read_checked(path: Path, sha256: str, where: str) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DocumentError(
            f"cannot read artifact: {exc.strerror}",
            where=where,
            error_id="documents.artifact-unreadable",
        ) from exc
    actual = hashlib.sha256(data).hexdigest()
    if actual != sha256:
        raise DocumentRefused(
            f"artifact bytes changed since the build: sha256 {actual[:16]}… != {sha256[:16]}…",
            where=where,
            hint="rebuild (tinyrustlm-release build --force) before releasing",
            error_id="documents.artifact-changed",
        )
    return data


def artifact_files(index: BuildIndex, sources: Mapping[str, Path]) -> list[BundleFile]:
    """One BundleFile per lane (its bytes read from `sources[lane]` and checked against the
    index), named by the build's content-addressed file name."""
    files: list[BundleFile] = []
    for entry in index.lanes:
        source = sources[entry.lane]
        data = _read_checked(source, entry.sha256, f"build index lane {entry.lane}: {source}")
        url = f"{ARTIFACTS_DIR}/{source.name}"
        files.append(BundleFile(url, data, entry.sha256, len(data), entry.lane))
    urls = [f.url for f in files]
    if len(set(urls)) != len(urls):
        raise DocumentError(
            "two lanes produced the same artifact file name",
            where="build index",
            error_id="documents.duplicate-artifact",
        )
    return files


def js_host_files(sources: Sequence[SourceFile]) -> list[BundleFile]:
    """The tree's JS host files as the bundle's js/ files (same order), then, when they are an
    npm package (a package.json among them), `npm/tinyrustlm-loader-<version>.tgz`: `npm pack`
    of exactly these bytes, reproducible, a signed subject like every other file."""
    files = [
        BundleFile(f"{JS_DIR}/{f.name}", f.data, hashlib.sha256(f.data).hexdigest(), len(f.data))
        for f in sources
    ]
    if any(f.name == "package.json" for f in sources):
        name, data = package.pack_sources([(f.name, f.data) for f in sources])
        files.append(
            BundleFile(f"{NPM_DIR}/{name}", data, hashlib.sha256(data).hexdigest(), len(data))
        )
    return files


def compiler_versions(lock: ToolchainLock) -> CompilerVersions:
    """The pinned rustc and LLVM versions (toolchain.lock), which receipts quote."""
    return CompilerVersions(rustc=lock.rustc.release, llvm=lock.rustc.llvm_version)


def build_manifest(
    *,
    index: BuildIndex,
    artifacts: Sequence[BundleFile],
    js_files: Sequence[BundleFile],
    contracts: Mapping[str, LaneContract],
    version: str,
    key_class: KeyClass,
    expires_epoch: int,
    compiler: CompilerVersions | None = None,
    disabled_lanes: Sequence[str] = (),
    unsmoked_lanes: Sequence[str] = (),
) -> ModuleManifest:
    """The manifest of one release, build id included."""
    by_lane = {entry.lane: entry for entry in index.lanes}
    glue = next((f.url for f in js_files if f.url == f"{JS_DIR}/{JS_GLUE_NAME}"), None)
    wasm: list[WasmArtifact] = []
    native: list[NativeArtifact] = []
    for file in artifacts:
        entry = by_lane[file.lane]
        if entry.kind == "native":
            native.append(
                NativeArtifact(
                    id=entry.lane,
                    target=entry.target,
                    url=file.url,
                    sha256=file.sha256,
                    size=file.size,
                )
            )
            continue
        contract = contracts.get(entry.lane)
        if contract is None:
            raise DocumentError(
                f"no feature contract for wasm lane {entry.lane!r}",
                where="verify/policy/wasm.json",
                hint="every wasm lane needs required/forbidden features for the manifest",
                error_id="documents.no-feature-contract",
            )
        wasm.append(
            WasmArtifact(
                id=entry.lane,
                url=file.url,
                sha256=file.sha256,
                size=file.size,
                required_features=list(contract.required_features),
                forbidden_features=list(contract.forbidden_features),
                requires_cross_origin_isolation=contract.requires_cross_origin_isolation,
                memory=contract.memory,
                js_glue=glue,
                relaxed_instructions=dict(contract.relaxed_instructions),
            )
        )
    fields = {
        "schema": "tinyrustlm.module-manifest.v1",
        "version": version,
        "source_revision": index.source_revision,
        "toolchain_lock_sha256": index.toolchain_lock_sha256,
        "source_date_epoch": index.source_date_epoch,
        "expires_epoch": expires_epoch,
        "key_class": key_class,
        "artifacts": [a.model_dump(mode="json", exclude_none=True) for a in wasm],
        "native_artifacts": [a.model_dump(mode="json") for a in native],
        "js_files": [
            HostFile(url=f.url, sha256=f.sha256, size=f.size).model_dump(mode="json")
            for f in js_files
        ],
    }
    if compiler is not None:
        fields["compiler"] = compiler.model_dump(mode="json")
    if disabled_lanes:
        fields["disabled_lanes"] = list(disabled_lanes)
    if unsmoked_lanes:
        fields["unsmoked_lanes"] = list(unsmoked_lanes)
    try:
        draft = ModuleManifest.model_validate({**fields, "build_id": "0" * 64})
    except ValidationError as exc:
        raise DocumentError(
            f"manifest does not validate: {exc}",
            where="manifest",
            error_id="documents.manifest-schema",
        ) from exc
    fields["build_id"] = build_id(draft, {f.url: f.data for f in [*artifacts, *js_files]})
    return ModuleManifest.model_validate(fields)


def manifest_bytes(manifest: ModuleManifest) -> bytes:
    """The signed payload and the bundle's manifest.json: canonical JSON, nothing appended."""
    return canonical_model(manifest)
