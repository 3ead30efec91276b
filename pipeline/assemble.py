"""Assemble a release's documents — manifest, SBOM, provenance, report — from its material.

`assemble` is pure: everything it needs (artifact bytes, JS files, crate digests, toolchain
packages, build commands, the verification report) is read beforehand into one frozen
`ReleaseMaterial`, so the same material gives the same bytes on every machine, and signing
(`pipeline.release`) is a separate step over the result.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.lanebuild.records import BuildIndex
from pipeline.manifest import BundleFile, LaneContract, build_manifest, manifest_bytes
from pipeline.provenance import ProvenanceInputs, statement_bytes
from pipeline.sbom import BuildStep, SbomInputs, ToolchainPackage, check_sbom, sbom_bytes
from pipeline.sources import CrateSource, PythonRequirement
from verify.bundle.layout import MANIFEST, REPORT, SBOM
from verify.canonical import canonical_json
from verify.formats.manifest import CompilerVersions, KeyClass, ModuleManifest


@dataclass(frozen=True)
class ReleaseMaterial:
    """Everything a release's documents are made of, already read from disk."""

    version: str
    index: BuildIndex
    report: Mapping[str, Any]  # tinyrustlm.verification-report.v1 document
    artifacts: tuple[BundleFile, ...]
    js_files: tuple[BundleFile, ...]
    contracts: Mapping[str, LaneContract]
    crates: tuple[CrateSource, ...]
    toolchain: tuple[ToolchainPackage, ...]
    python: tuple[PythonRequirement, ...]
    steps: tuple[BuildStep, ...]
    expires_epoch: int
    compiler: CompilerVersions | None = None  # pinned rustc/LLVM, quoted by receipts


@dataclass(frozen=True)
class Documents:
    """The unsigned bundle: every file but the signatures and checksums, plus the in-toto
    statement the provenance signature will carry."""

    manifest: ModuleManifest
    files: Mapping[str, bytes]  # bundle-relative path -> bytes
    statement: bytes


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def assemble(material: ReleaseMaterial, key_class: KeyClass) -> Documents:
    """Manifest, report, SBOM and provenance statement of one release (no I/O, no keys)."""
    index = material.index
    manifest = build_manifest(
        index=index,
        artifacts=material.artifacts,
        js_files=material.js_files,
        contracts=material.contracts,
        version=material.version,
        key_class=key_class,
        expires_epoch=material.expires_epoch,
        compiler=material.compiler,
    )
    files: dict[str, bytes] = {f.url: f.data for f in (*material.artifacts, *material.js_files)}
    files[MANIFEST] = manifest_bytes(manifest)
    files[REPORT] = canonical_json(dict(material.report)) + b"\n"
    files[SBOM] = sbom_bytes(
        SbomInputs(
            version=material.version,
            build_id=manifest.build_id,
            source_revision=index.source_revision,
            source_date_epoch=index.source_date_epoch,
            files=manifest.listed_files(),
            crates=material.crates,
            toolchain=material.toolchain,
            python=material.python,
            steps=material.steps,
        )
    )
    check_sbom(files[SBOM])
    subjects = [(url, _sha(files[url])) for url, _ in manifest.listed_files()]
    subjects += [(name, _sha(files[name])) for name in (MANIFEST, SBOM, REPORT)]
    statement = statement_bytes(
        ProvenanceInputs(
            version=material.version,
            build_id=manifest.build_id,
            source_revision=index.source_revision,
            source_date_epoch=index.source_date_epoch,
            toolchain_lock_sha256=index.toolchain_lock_sha256,
            lanes=[e.lane for e in index.lanes],
            subjects=subjects,
            crates=material.crates,
            toolchain=material.toolchain,
            steps=material.steps,
        )
    )
    return Documents(manifest, files, statement)
