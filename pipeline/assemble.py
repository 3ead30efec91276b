"""Assemble a release's documents — manifest, SBOM, provenance, report — from its material.

`assemble` is pure: everything it needs (artifact bytes, JS files, crate digests, toolchain
packages, build commands, the verification report) is read beforehand into one frozen
`ReleaseMaterial`, so the same material gives the same bytes on every machine, and signing
(`pipeline.release`) is a separate step over the result.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.errors import CheckFailed
from pipeline.lanebuild.records import BuildIndex
from pipeline.manifest import BundleFile, LaneContract, build_manifest, manifest_bytes
from pipeline.provenance import ProvenanceInputs, statement_bytes
from pipeline.sbom import BuildStep, SbomInputs, ToolchainPackage, check_sbom, sbom_bytes
from pipeline.sources import CrateSource, PythonRequirement
from verify.bundle.layout import CONFORMANCE, MANIFEST, OPTIONAL_ATTESTED_FILES, REPORT, SBOM
from verify.canonical import canonical_json
from verify.formats.manifest import CompilerVersions, KeyClass, ModuleManifest
from verify.placeholders import absolute_paths_outside


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
    conformance: bytes | None = None  # conformance.json (release --conformance)
    disabled_lanes: tuple[str, ...] = ()  # signed rollback flags (release --disable-lane)


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
        disabled_lanes=material.disabled_lanes,
    )
    files: dict[str, bytes] = {f.url: f.data for f in (*material.artifacts, *material.js_files)}
    files[MANIFEST] = manifest_bytes(manifest)
    files[REPORT] = canonical_json(dict(material.report)) + b"\n"
    if material.conformance is not None:
        files[CONFORMANCE] = material.conformance
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
    attested = (MANIFEST, SBOM, REPORT, *(n for n in OPTIONAL_ATTESTED_FILES if n in files))
    subjects += [(name, _sha(files[name])) for name in attested]
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
    _refuse_builder_paths({**files, "provenance statement": statement})
    return Documents(manifest, files, statement)


def _refuse_builder_paths(documents: Mapping[str, bytes]) -> None:
    """The release signs nothing `verify bundle` step 10 would refuse: no builder paths."""
    for name, data in documents.items():
        if not name.endswith(".json") and name != "provenance statement":
            continue
        leaked = absolute_paths_outside(json.loads(data))
        if leaked:
            raise CheckFailed(
                f"would publish the builder's absolute path {leaked[0].path!r} "
                f"({len(leaked)} in all)",
                where=f"{name}: {leaked[0].where.lstrip('.')}",
                hint="name builder locations by $WORKSPACE/... or $CARGO_HOME/... "
                "(rebuild with --force if the build records predate that)",
            )
