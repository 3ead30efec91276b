"""Assemble a release's documents — manifest, SBOM, provenance, reports — from its material.

`documents_of(built, report, key_class)` is the one way a release and a rebuild make them:
`material_of` gathers everything (artifact bytes checked against the index, the tree's JS
files, crate digests, toolchain packages, build commands, the verification report) into one
frozen `ReleaseMaterial`, and `assemble` is pure over it, so the same material gives the same
bytes on every machine. Signing (`pipeline.release.steps`) is a separate step over the result.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pipeline.documents.errors import DocumentError, DocumentRefused
from pipeline.documents.manifest import (
    BundleFile,
    LaneContract,
    artifact_files,
    build_manifest,
    compiler_versions,
    js_host_files,
    manifest_bytes,
)
from pipeline.documents.provenance import ProvenanceInputs, statement_bytes
from pipeline.documents.sbom import BuildStep, SbomInputs, ToolchainPackage, check_sbom, sbom_bytes
from pipeline.lanebuild.built import Built
from pipeline.lanebuild.records import BuildIndex
from pipeline.tree.sources import CrateSource, PythonRequirement
from verify.bundle.layout import (
    ATTESTED_FIXED_FILES,
    CONFORMANCE,
    MANIFEST,
    MEMORY_PLAN,
    OPTIONAL_ATTESTED_FILES,
    PROVENANCE_STATEMENT,
    REPORT,
    REPORT_PAGE,
    SBOM,
)
from verify.bundle.page.inputs import page_inputs
from verify.bundle.page.page import shipped_page
from verify.formats.manifest import CompilerVersions, KeyClass, MemoryRules, ModuleManifest
from verify.formats.report import VerificationReport, report_bytes
from verify.placeholders import absolute_paths_outside
from verify.policy import DEFAULT_POLICY_DIR, WasmPolicy, load_wasm_policies
from verify.wasm.features import PROPOSAL_NAMES


@dataclass(frozen=True)
class ReleaseMaterial:
    """Everything a release's documents are made of, already read from disk."""

    version: str
    index: BuildIndex
    report: VerificationReport
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
    memory_plan: bytes | None = None  # memory-plan.json (pipeline.release.memory_plan)
    disabled_lanes: tuple[str, ...] = ()  # signed rollback flags (release --disable-lane)
    unsmoked_lanes: tuple[str, ...] = ()  # shipped without a self-test (release --ship-unsmoked)
    # the previous release's documents for report.html's diff (previous/...; release --previous)
    previous: Mapping[str, bytes] | None = None


@dataclass(frozen=True)
class Documents:
    """The unsigned bundle: every file but the signatures and checksums, plus the in-toto
    statement the provenance signature will carry."""

    manifest: ModuleManifest
    files: Mapping[str, bytes]  # bundle-relative path -> bytes
    statement: bytes


# A manifest is valid for this long after SOURCE_DATE_EPOCH (fixed, so bundles reproduce).
MANIFEST_VALIDITY_SECONDS = 365 * 24 * 3600


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
        unsmoked_lanes=material.unsmoked_lanes,
    )
    files: dict[str, bytes] = {f.url: f.data for f in (*material.artifacts, *material.js_files)}
    files[MANIFEST] = manifest_bytes(manifest)
    files[REPORT] = report_bytes(material.report)
    if material.conformance is not None:
        files[CONFORMANCE] = material.conformance
    if material.memory_plan is not None:
        files[MEMORY_PLAN] = material.memory_plan
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
    files.update(material.previous or {})
    files[REPORT_PAGE] = shipped_page(page_inputs(files), files)
    subjects = [(url, _sha(files[url])) for url, _ in manifest.listed_files()]
    attested = (*ATTESTED_FIXED_FILES, *(n for n in OPTIONAL_ATTESTED_FILES if n in files))
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
    _refuse_builder_paths({**files, PROVENANCE_STATEMENT: statement})
    return Documents(manifest, files, statement)


def _refuse_builder_paths(documents: Mapping[str, bytes]) -> None:
    """The release signs nothing `verify bundle` step 10 would refuse: no builder paths."""
    for name, data in documents.items():
        if not name.endswith(".json") and name != PROVENANCE_STATEMENT:
            continue
        leaked = absolute_paths_outside(json.loads(data))
        if leaked:
            raise DocumentRefused(
                f"would publish the builder's absolute path {leaked[0].path!r} "
                f"({len(leaked)} in all)",
                where=f"{name}: {leaked[0].where.lstrip('.')}",
                hint="name builder locations by $WORKSPACE/... or $CARGO_HOME/... "
                "(rebuild with --force if the build records predate that)",
                error_id="documents.builder-path",
            )


@functools.cache
def _shipped_wasm_policies() -> dict[str, WasmPolicy]:
    """verify's shipped wasm.json, parsed once per process (steps 5 and 7 both need it)."""
    return load_wasm_policies()


def lane_contracts(
    lanes: Sequence[str], report: VerificationReport | None = None
) -> dict[str, LaneContract]:
    """Each wasm lane's manifest promises, derived from the verifier's lane policy.

    A host must support every proposal the policy allows (the module may use any of them),
    and every proposal the policy does not allow is forbidden. Names are the reference's
    (LLVM target-feature names: simd128, atomics, bulk-memory, mutable-globals, ...).
    Shared memory needs SharedArrayBuffer, hence cross-origin isolation. The relaxed-SIMD
    instructions each module holds come from `report` (verify's count of the final bytes).
    """
    held = {
        a.lane: tuple(sorted(a.wasm.relaxed_instructions.items()))
        for a in (report.artifacts if report else [])
        if a.wasm is not None
    }
    policies = _shipped_wasm_policies()
    feature = {p: row[2] for p, row in PROPOSAL_NAMES.items() if row[2]}
    contracts: dict[str, LaneContract] = {}
    for lane in lanes:
        if lane not in policies:
            raise DocumentError(
                f"the lane policy has no wasm lane {lane!r}",
                error_id="documents.no-lane-policy",
                where=str(DEFAULT_POLICY_DIR / "wasm.json"),
            )
        policy = policies[lane]
        memory = MemoryRules(shared=policy.memory.shared, growth=policy.memory.growth)
        contracts[lane] = LaneContract(
            required_features=tuple(f for p, f in feature.items() if p & policy.allowed),
            forbidden_features=tuple(f for p, f in feature.items() if not p & policy.allowed),
            requires_cross_origin_isolation=memory.shared,
            memory=memory,
            relaxed_instructions=held.get(lane, ()),
        )
    return contracts


def material_of(
    built: Built,
    report: VerificationReport,
    *,
    disabled_lanes: Sequence[str] = (),
    unsmoked_lanes: Sequence[str] = (),
    conformance: bytes | None = None,
    previous: Mapping[str, bytes] | None = None,
    memory_plan: bytes | None = None,
) -> ReleaseMaterial:
    """Everything the documents are made of: the build's artifacts (their bytes checked
    against the index) and what the tree snapshot already read."""
    tree, index = built.tree, built.index
    wasm_lanes = built.wasm_lanes
    unknown = sorted(set(disabled_lanes) - set(wasm_lanes))
    if unknown:
        raise DocumentRefused(
            f"--disable-lane names no wasm lane of this release: {', '.join(unknown)}",
            where="release --disable-lane",
            hint=f"wasm lanes: {', '.join(wasm_lanes)}",
            error_id="documents.disable-lane-unknown",
        )
    steps = tuple(
        BuildStep(
            e.lane,
            tuple(built.records[e.lane].argv),
            tuple(sorted(built.records[e.lane].env.items())),
        )
        for e in index.lanes
    )
    return ReleaseMaterial(
        version=tree.version,
        index=index,
        report=report,
        artifacts=tuple(artifact_files(index, built.artifacts)),
        js_files=tuple(js_host_files(tree.js_files)),
        contracts=lane_contracts(wasm_lanes, report),
        crates=tree.crates,
        toolchain=tuple(
            ToolchainPackage(p.name, p.version, p.architecture, p.sha256) for p in tree.lock.package
        ),
        python=tree.python,
        steps=steps,
        expires_epoch=index.source_date_epoch + MANIFEST_VALIDITY_SECONDS,
        compiler=compiler_versions(tree.lock),
        conformance=conformance,
        memory_plan=memory_plan,
        disabled_lanes=tuple(sorted(set(disabled_lanes))),
        unsmoked_lanes=tuple(sorted(set(unsmoked_lanes))),
        previous=previous,
    )


def documents_of(
    built: Built,
    report: VerificationReport,
    key_class: KeyClass,
    *,
    disabled_lanes: Sequence[str] = (),
    unsmoked_lanes: Sequence[str] = (),
    conformance: bytes | None = None,
    previous: Mapping[str, bytes] | None = None,
    memory_plan: bytes | None = None,
) -> Documents:
    """Manifest, report, SBOM and provenance statement of a build: the one function a release
    and a rebuild both make their documents with."""
    material = material_of(
        built,
        report,
        disabled_lanes=disabled_lanes,
        unsmoked_lanes=unsmoked_lanes,
        conformance=conformance,
        previous=previous,
        memory_plan=memory_plan,
    )
    return assemble(material, key_class)
