"""`tinyrustlm-release release`: source tree -> signed bundle in dist/.

Release data flows through typed step results, each step a function of the previous one:

    request -> Checked -> Built -> Verified -> Tested -> Signed -> Bundled

    1 toolchain check   the tree is committed, the installed toolchain matches toolchain.lock
    2 build             every lane, deterministically (pipeline.lanebuild)
    3 verify            every artifact inspected against its lane policy; any failure stops
    4 smoke             each artifact's self-test result from the build index; any non-pass stops
    5 sign              read the material, assemble manifest, SBOM and provenance (pure,
                        `pipeline.assemble`), then DSSE-sign them into sigstore bundles
    6 bundle            staged, fsynced, renamed into dist/tinyrustlm-<version>/

`STEPS` holds the six functions (tests swap one with `dataclasses.replace`). Nothing is
written into dist/ unless steps 1-5 passed. The bundle is a pure function of the commit, the
build outputs and the key: SOURCE_DATE_EPOCH is HEAD's committer time and the expiry a fixed
period after it, so releasing twice from one commit gives identical bytes.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pipeline.assemble import Documents, ReleaseMaterial, assemble
from pipeline.errors import EXIT_OK, CheckFailed, PipelineError
from pipeline.inputs import load_model
from pipeline.keys import SigningKey, check_signing_key, resolve_signing_key
from pipeline.lanebuild.records import BuildIndex, BuildRecord
from pipeline.manifest import LaneContract, artifact_files, compiler_versions, js_host_files
from pipeline.sbom import BuildStep, ToolchainPackage
from pipeline.sign import sign_to_sigstore_bundle
from pipeline.sources import (
    GitFacts,
    crate_sources,
    git_facts,
    project_version,
    python_requirements,
    require_clean,
)
from verify.bundle.dsse import IN_TOTO_PAYLOAD_TYPE
from verify.bundle.layout import MANIFEST, MANIFEST_SIGNATURE, PROVENANCE_SIGNATURE, bundle_name
from verify.bundle.report_check import Deriver, default_deriver, failed_findings
from verify.errors import VerifyError
from verify.formats.manifest import MANIFEST_PAYLOAD_TYPE, KeyClass, MemoryRules, ModuleManifest
from verify.policy import DEFAULT_POLICY_DIR, load_wasm_policies
from verify.wasm.features import PROPOSAL_NAMES

# A manifest is valid for this long after SOURCE_DATE_EPOCH (fixed, so bundles reproduce).
MANIFEST_VALIDITY_SECONDS = 365 * 24 * 3600
Say = Callable[[str], None]


@dataclass(frozen=True)
class ReleaseRequest:
    """What the caller asked for: the only input of step 1."""

    repo_root: Path
    dist: Path
    lanes: tuple[str, ...] | None = None
    force: bool = False
    rebuild: bool = False
    allow_dirty: bool = False
    key_path: Path | None = None
    key_class: KeyClass = "release"
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    now: int = field(default_factory=lambda: int(time.time()))
    derive: Deriver | None = None  # verify step's report maker (None: verify.inspect)
    say: Say = print  # progress lines (set by run_release)
    # wasm lanes the signed manifest switches off: a rollback without a rebuild
    disabled_lanes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Checked:
    """Step 1: the source tree is releasable."""

    request: ReleaseRequest
    git: GitFacts
    version: str
    detail: str


@dataclass(frozen=True)
class Built:
    """Step 2: one artifact and one build record per lane, of this tree."""

    checked: Checked
    index: BuildIndex
    artifacts: Mapping[str, Path]  # lane -> where its bytes are
    records: Mapping[str, BuildRecord]  # lane -> how it was built
    detail: str


@dataclass(frozen=True)
class Verified:
    """Step 3: every artifact's findings pass the lane policy."""

    built: Built
    report: Mapping[str, Any]
    detail: str


@dataclass(frozen=True)
class Tested:
    """Step 4: every artifact's self-test passed (and, with --conformance, the matrix ran)."""

    verified: Verified
    detail: str
    conformance: bytes | None = None  # conformance.json, shipped and attested when present
    # the manifest signature the matrix's loader verified (step 5 must produce the same bytes)
    conformance_manifest_signature: bytes | None = None


@dataclass(frozen=True)
class Signed:
    """Step 5: the assembled documents and their signatures."""

    tested: Tested
    key: SigningKey
    documents: Documents
    signatures: Mapping[str, bytes]  # bundle path -> sigstore bundle JSON
    detail: str

    @property
    def files(self) -> dict[str, bytes]:
        """Every bundle file but SHA256SUMS and the tarball (those are the bundle writer's)."""
        return {**self.documents.files, **self.signatures}


@dataclass(frozen=True)
class Bundled:
    """Step 6: the bundle is published."""

    signed: Signed
    bundle: Path
    detail: str

    @property
    def manifest(self) -> ModuleManifest:
        return self.signed.documents.manifest

    @property
    def key(self) -> SigningKey:
        return self.signed.key


class _Result(Protocol):
    @property
    def detail(self) -> str: ...


# -- 1 toolchain check --------------------------------------------------------------------
def preflight(request: ReleaseRequest) -> Checked:
    """Source-tree checks that must pass before anything slow runs."""
    facts = git_facts(request.repo_root)
    require_clean(facts, request.allow_dirty)
    check_signing_key(request.repo_root, request.key_path, dict(request.env), request.key_class)
    version = project_version(request.repo_root)
    final = request.dist / bundle_name(version)
    if final.exists() and not request.force:  # refuse now, not after a long build
        raise CheckFailed(
            f"a bundle of version {version} already exists",
            where=str(final),
            hint="bump [project].version, or pass --force to replace it",
        )
    if facts.commit_time + MANIFEST_VALIDITY_SECONDS <= request.now:
        raise CheckFailed(
            "HEAD was committed more than the manifest validity period ago: the bundle "
            "would be born expired",
            where=f"git revision {facts.revision}",
            hint="release from a recent commit",
        )
    dirty = " (dirty tree allowed)" if facts.dirty else ""
    return Checked(request, facts, version, f"revision {facts.revision[:12]}{dirty}")


def step_toolchain_check(request: ReleaseRequest) -> Checked:
    from pipeline.toolchain.check import check_installed

    checked = preflight(request)
    check_installed(request.repo_root)
    return replace(checked, detail=f"{checked.detail}, toolchain matches toolchain.lock")


# -- 2 build ------------------------------------------------------------------------------
def built_from_index(checked: Checked, index: BuildIndex) -> Built:
    """A Built of the lanes in `index` whose paths are relative to the repository root
    (only the requested lanes, if the request names some)."""
    root = checked.request.repo_root
    if checked.request.lanes:  # the index also keeps other lanes' earlier builds
        wanted = set(checked.request.lanes)
        index = index.model_copy(update={"lanes": [e for e in index.lanes if e.lane in wanted]})
    records: dict[str, BuildRecord] = {}
    for entry in index.lanes:
        records[entry.lane] = load_model(BuildRecord, root / entry.record, "build-record")
    artifacts = {e.lane: root / e.artifact for e in index.lanes}
    detail = f"{len(index.lanes)} lane(s): {', '.join(e.lane for e in index.lanes)}"
    return Built(checked, index, artifacts, records, detail)


def step_build(checked: Checked) -> Built:
    from pipeline.lanebuild.driver import build_lanes

    request = checked.request
    lanes = list(request.lanes) if request.lanes else None
    index = build_lanes(
        request.repo_root, lanes, request.rebuild, say=lambda line: request.say(f"    {line}")
    )
    return built_from_index(checked, index)


def build_from_records(folders: Sequence[Path]) -> Callable[[Checked], Built]:
    """Step 2 for `release --from-records DIR...`: lanes built elsewhere, each checked
    against this tree (pipeline.lanebuild.handoff), instead of building here."""

    def from_records(checked: Checked) -> Built:
        from pipeline.lanebuild.handoff import import_records
        from pipeline.toolchain.lockfile import lock_digest

        root = checked.request.repo_root
        handed = import_records(root, checked.git, folders)
        if checked.request.lanes:
            handed = [h for h in handed if h.entry.lane in set(checked.request.lanes)]
        index = BuildIndex(
            source_revision=checked.git.revision,
            source_date_epoch=checked.git.commit_time,
            toolchain_lock_sha256=lock_digest(root / "toolchain.lock"),
            lanes=[h.entry for h in handed],
        )
        lanes = ", ".join(f"{h.entry.lane} ({h.folder.name})" for h in handed)
        return Built(
            checked,
            index,
            {h.entry.lane: h.artifact for h in handed},
            {h.entry.lane: h.record for h in handed},
            f"{len(handed)} lane(s) from records: {lanes}",
        )

    return from_records


def _check_index(checked: Checked, index: BuildIndex) -> None:
    """The build must be of this commit and this toolchain.lock."""
    git = checked.git
    if index.source_revision != git.revision:
        raise CheckFailed(
            f"build index is of revision {index.source_revision[:12]}, HEAD is {git.revision[:12]}",
            where="build/index.json",
        )
    if index.source_date_epoch != git.commit_time:
        raise CheckFailed(
            "build index SOURCE_DATE_EPOCH is not HEAD's commit time", where="build/index.json"
        )
    from pipeline.toolchain.lockfile import lock_digest

    if index.toolchain_lock_sha256 != lock_digest(checked.request.repo_root / "toolchain.lock"):
        raise CheckFailed(
            "build index was made with a different toolchain.lock", where="build/index.json"
        )


# -- 3 verify -----------------------------------------------------------------------------
def step_verify(built: Built) -> Verified:
    _check_index(built.checked, built.index)
    artifacts = [(built.artifacts[e.lane], e.lane) for e in built.index.lanes]
    try:
        report = (built.checked.request.derive or default_deriver())(artifacts)
    except VerifyError as exc:
        raise CheckFailed(f"verification could not run: {exc.message}", where=exc.where) from exc
    failing = failed_findings(report)
    if failing:
        raise CheckFailed(
            f"{len(failing)} failing finding(s): {', '.join(failing)}",
            where="verification report",
            hint="tinyrustlm-verify artifact --build-index build/index.json shows the evidence",
        )
    total = sum(len(a.get("findings", [])) for a in report.get("artifacts", []))
    return Verified(built, report, f"{len(artifacts)} artifact(s), {total} finding(s), all pass")


# -- 4 smoke ------------------------------------------------------------------------------
def step_smoke(verified: Verified) -> Tested:
    lanes = verified.built.index.lanes
    bad = [
        f"{e.lane}: {e.smoke.status} {e.smoke.detail}".strip()
        for e in lanes
        if e.smoke.status != "pass"
    ]
    if bad:
        raise CheckFailed(
            f"self-test did not pass for {len(bad)} lane(s): {'; '.join(bad)}",
            where="build/index.json smoke",
        )
    engines = sorted({e.smoke.engine for e in lanes})
    return Tested(verified, f"{len(lanes)} pass ({', '.join(engines)})")


# -- 5 sign -------------------------------------------------------------------------------
def lane_contracts(lanes: Sequence[str]) -> dict[str, LaneContract]:
    """Each wasm lane's manifest promises, derived from the verifier's lane policy.

    A host must support every proposal the policy allows (the module may use any of them),
    and every proposal the policy does not allow is forbidden. Names are the reference's
    (LLVM target-feature names: simd128, atomics, bulk-memory, mutable-globals, ...).
    Shared memory needs SharedArrayBuffer, hence cross-origin isolation.
    """
    policies = load_wasm_policies()
    feature = {p: row[2] for p, row in PROPOSAL_NAMES.items() if row[2]}
    contracts: dict[str, LaneContract] = {}
    for lane in lanes:
        if lane not in policies:
            raise PipelineError(f"the lane policy has no wasm lane {lane!r}",
                                where=str(DEFAULT_POLICY_DIR / "wasm.json"))  # fmt: skip
        policy = policies[lane]
        memory = MemoryRules(shared=policy.memory.shared, growth=policy.memory.growth)
        contracts[lane] = LaneContract(
            required_features=tuple(f for p, f in feature.items() if p & policy.allowed),
            forbidden_features=tuple(f for p, f in feature.items() if not p & policy.allowed),
            requires_cross_origin_isolation=memory.shared,
            memory=memory,
        )
    return contracts


def _toolchain_packages(repo_root: Path) -> tuple[ToolchainPackage, ...]:
    from pipeline.toolchain.lockfile import load_lock

    lock = load_lock(repo_root / "toolchain.lock")
    return tuple(
        ToolchainPackage(p.name, p.version, p.architecture, p.sha256) for p in lock.package
    )


def read_material(tested: Tested) -> ReleaseMaterial:
    """Everything the documents are made of, read from the tree and the build (the I/O half
    of step 5; `pipeline.assemble.assemble` is the pure half)."""
    built = tested.verified.built
    root = built.checked.request.repo_root
    index = built.index
    wasm_lanes = [e.lane for e in index.lanes if e.kind == "wasm"]
    disabled = built.checked.request.disabled_lanes
    unknown = sorted(set(disabled) - set(wasm_lanes))
    if unknown:
        raise CheckFailed(
            f"--disable-lane names no wasm lane of this release: {', '.join(unknown)}",
            where="release --disable-lane",
            hint=f"wasm lanes: {', '.join(wasm_lanes)}",
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
        version=built.checked.version,
        index=index,
        report=tested.verified.report,
        artifacts=tuple(artifact_files(index, built.artifacts)),
        js_files=tuple(js_host_files(root)),
        contracts=lane_contracts(wasm_lanes),
        crates=tuple(crate_sources(root)),
        toolchain=_toolchain_packages(root),
        python=tuple(python_requirements(root)),
        steps=steps,
        expires_epoch=index.source_date_epoch + MANIFEST_VALIDITY_SECONDS,
        compiler=compiler_versions(root),
        conformance=tested.conformance,
        disabled_lanes=tuple(sorted(set(disabled))),
    )


def sign_documents(documents: Documents, key: SigningKey) -> dict[str, bytes]:
    """The two sigstore bundles: over the manifest, and over the provenance statement."""
    return {
        MANIFEST_SIGNATURE: sign_to_sigstore_bundle(
            key.private_key, MANIFEST_PAYLOAD_TYPE, documents.files[MANIFEST]
        ),
        PROVENANCE_SIGNATURE: sign_to_sigstore_bundle(
            key.private_key, IN_TOTO_PAYLOAD_TYPE, documents.statement
        ),
    }


def step_sign(tested: Tested) -> Signed:
    request = tested.verified.built.checked.request
    key = resolve_signing_key(
        request.repo_root, request.key_path, dict(request.env), request.key_class
    )
    documents = assemble(read_material(tested), key.key_class)
    signatures = sign_documents(documents, key)
    ran_on = tested.conformance_manifest_signature
    if ran_on is not None and ran_on != signatures[MANIFEST_SIGNATURE]:
        raise CheckFailed(
            "the conformance matrix ran on a signed manifest other than the one being released",
            where=MANIFEST_SIGNATURE,
            hint="the manifest must not depend on conformance.json, nor the key change between "
            "steps 4 and 5",
        )
    build_id = documents.manifest.build_id
    detail = f"key {key.keyid[:16]}… ({key.key_class}), build id {build_id[:16]}…"
    return Signed(tested, key, documents, signatures, detail)


# -- 6 bundle -----------------------------------------------------------------------------
def step_bundle(signed: Signed) -> Bundled:
    from pipeline.bundle import write_bundle

    built = signed.tested.verified.built
    request = built.checked.request
    manifest = signed.documents.manifest
    native = frozenset(a.url for a in manifest.native_artifacts)
    bundle = write_bundle(
        request.dist,
        manifest.version,
        signed.files,
        built.index.source_date_epoch,
        force=request.force,
        executable=native,
    )
    return Bundled(signed, bundle, str(bundle))


@dataclass(frozen=True)
class Steps:
    """The six step functions, in order; each takes the previous step's result."""

    toolchain_check: Callable[[ReleaseRequest], Checked] = step_toolchain_check
    build: Callable[[Checked], Built] = step_build
    verify: Callable[[Built], Verified] = step_verify
    smoke: Callable[[Verified], Tested] = step_smoke
    sign: Callable[[Tested], Signed] = step_sign
    bundle: Callable[[Signed], Bundled] = step_bundle


STEPS = Steps()
STEP_TITLES = ("toolchain check", "build", "verify", "smoke", "sign", "bundle")
A = TypeVar("A")
R = TypeVar("R", bound=_Result)


def run_release(request: ReleaseRequest, steps: Steps = STEPS, say: Say = print) -> Bundled:
    """Run the six steps in order, holding build/.release.lock so two releases never
    interleave (dist/ has its own lock for the final write; nothing goes there before 6)."""
    from pipeline.bundle import release_lock

    request = replace(request, say=say)
    total = len(STEP_TITLES)

    def step(number: int, run: Callable[[A], R], previous: A) -> R:
        title = STEP_TITLES[number - 1]
        say(f"[{number}/{total}] {title} ...")
        result = run(previous)
        say(f"[{number}/{total}] {title}: ok ({result.detail})")
        return result

    with release_lock(request.repo_root / "build"):
        checked = step(1, steps.toolchain_check, request)
        built = step(2, steps.build, checked)
        verified = step(3, steps.verify, built)
        tested = step(4, steps.smoke, verified)
        signed = step(5, steps.sign, tested)
        return step(6, steps.bundle, signed)


def summary(done: Bundled) -> str:
    manifest = done.manifest
    key = done.key
    lines = [
        f"bundle     {done.bundle}",
        f"version    {manifest.version} (revision {manifest.source_revision})",
        f"build id   {manifest.build_id}",
        f"key        {key.keyid} ({key.key_class}: {key.source})",
        f"expires    {datetime.fromtimestamp(manifest.expires_epoch, UTC):%Y-%m-%dT%H:%M:%SZ}",
    ]
    digests = dict(manifest.listed_files())
    for url, lane in manifest.lanes():
        lines.append(f"  {lane:<26} sha256 {digests[url][:16]}  {url}")
    if key.key_class == "development":
        root = done.signed.tested.verified.built.checked.request.repo_root
        lines.append(
            "signed with the development key: verify with --allow-dev-key and "
            f"--trusted-keys {root / '.dev-keys/development.trusted-keys.json'}"
        )
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--key",
        type=Path,
        default=None,
        help="Ed25519 private key PEM (default: $TINYRUSTLM_RELEASE_KEY, "
        "else the development key in .dev-keys/)",
    )
    parser.add_argument(
        "--key-class",
        choices=["release", "development"],
        default="release",
        help="class recorded for --key/$TINYRUSTLM_RELEASE_KEY (default release)",
    )
    parser.add_argument(
        "--lane",
        action="append",
        dest="lanes",
        metavar="ID",
        help="release only these lanes (repeatable; default: all)",
    )
    parser.add_argument("--dist", type=Path, default=Path("dist"), help="output folder")
    parser.add_argument(
        "--force", action="store_true", help="replace an existing bundle of the same version"
    )
    parser.add_argument("--rebuild", action="store_true", help="ignore the build cache")
    parser.add_argument(
        "--conformance",
        action="store_true",
        help="run the conformance matrix (all engines) and ship conformance.json",
    )
    parser.add_argument(
        "--conformance-cases", type=int, default=100, metavar="N", help="cases (default 100)"
    )
    parser.add_argument(
        "--conformance-require",
        default="",
        metavar="ENGINES",
        help="stop unless each of these engines has passing and no failing rows",
    )
    parser.add_argument(
        "--disable-lane",
        action="append",
        default=[],
        dest="disabled_lanes",
        metavar="ID",
        help="switch this wasm lane off in the signed manifest (repeatable; no rebuild needed)",
    )
    parser.add_argument(
        "--from-records",
        nargs="+",
        type=Path,
        default=None,
        metavar="DIR",
        help="assemble from lanes built elsewhere (`build --lane X --records-out DIR`) "
        "instead of building here",
    )
    parser.add_argument(
        "--allow-dirty",
        action="store_true",
        help="release from a tree with uncommitted changes (local trials only)",
    )


def run(args: argparse.Namespace) -> int:
    repo_root = Path.cwd()
    request = ReleaseRequest(
        repo_root=repo_root,
        dist=args.dist if args.dist.is_absolute() else repo_root / args.dist,
        lanes=tuple(args.lanes) if args.lanes else None,
        force=args.force,
        rebuild=args.rebuild,
        allow_dirty=args.allow_dirty,
        key_path=args.key,
        key_class=args.key_class,
        disabled_lanes=tuple(args.disabled_lanes),
    )
    steps = STEPS
    if args.from_records:
        steps = replace(steps, build=build_from_records(args.from_records))
    if args.conformance or args.conformance_require:
        from pipeline.conformance.matrix import Options
        from pipeline.conformance.release_step import with_conformance

        require = [n for n in args.conformance_require.split(",") if n]
        options = Options(cases=args.conformance_cases)
        steps = replace(steps, smoke=with_conformance(steps.smoke, options, require))
    print(summary(run_release(request, steps)))
    return EXIT_OK
