"""`tinyrustlm-release release`: source tree -> signed bundle in dist/.

Six numbered steps, taken from `STEPS` (a table, so tests can swap any of them for a fake):

    1 toolchain check   the tree is committed, the installed toolchain matches toolchain.lock
    2 build             every lane, deterministically (pipeline.lanebuild)
    3 verify            every artifact inspected against its lane policy; any failure stops
    4 smoke             each artifact's self-test result from the build index; any non-pass stops
    5 sign              manifest, SBOM, provenance; DSSE-signed into sigstore bundles
    6 bundle            staged, fsynced, renamed into dist/tinyrustlm-<version>/

Nothing is written into dist/ unless steps 1-5 passed. The bundle is a pure function of the
commit, the build outputs and the key: SOURCE_DATE_EPOCH is HEAD's committer time and the
expiry a fixed period after it, so releasing twice from one commit gives identical bytes.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pipeline.errors import EXIT_OK, CheckFailed, PipelineError
from pipeline.inputs import load_model
from pipeline.keys import SigningKey, check_signing_key, resolve_signing_key
from pipeline.lanebuild.records import BuildIndex, BuildRecord
from pipeline.manifest import (
    BundleFile,
    LaneContract,
    artifact_files,
    build_manifest,
    compiler_versions,
    js_host_files,
    manifest_bytes,
)
from pipeline.provenance import ProvenanceInputs, statement_bytes
from pipeline.sbom import BuildStep, SbomInputs, ToolchainPackage, check_sbom, sbom_bytes
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
from verify.bundle.layout import (
    CONFORMANCE,
    MANIFEST,
    MANIFEST_SIGNATURE,
    OPTIONAL_ATTESTED_FILES,
    PROVENANCE_SIGNATURE,
    REPORT,
    SBOM,
    bundle_name,
)
from verify.bundle.report_check import Deriver, default_deriver, failed_findings
from verify.canonical import canonical_json
from verify.errors import VerifyError
from verify.formats.manifest import MANIFEST_PAYLOAD_TYPE, KeyClass, MemoryRules, ModuleManifest
from verify.policy import DEFAULT_POLICY_DIR, load_wasm_policies
from verify.wasm.features import PROPOSAL_NAMES

# A manifest is valid for this long after SOURCE_DATE_EPOCH (fixed, so bundles reproduce).
MANIFEST_VALIDITY_SECONDS = 365 * 24 * 3600
T = TypeVar("T")


@dataclass
class ReleaseContext:
    """Inputs of one release, and what each step hands to the next."""

    repo_root: Path
    dist: Path
    lanes: list[str] | None = None
    force: bool = False
    rebuild: bool = False
    allow_dirty: bool = False
    key_path: Path | None = None
    key_class: KeyClass = "release"
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    now: int = field(default_factory=lambda: int(time.time()))
    derive: Deriver | None = None  # verify step's report maker (None: verify.inspect)
    say: Callable[[str], None] = print  # progress lines (set by run_release)
    # filled in by the steps
    git: GitFacts | None = None
    version: str = ""
    index: BuildIndex | None = None
    report: dict[str, Any] | None = None
    key: SigningKey | None = None
    manifest: ModuleManifest | None = None
    files: dict[str, bytes] = field(default_factory=dict)
    bundle: Path | None = None
    conformance: bytes | None = None  # set by the optional conformance step (--conformance)


StepFn = Callable[[ReleaseContext], str]


@dataclass(frozen=True)
class Step:
    title: str
    run: StepFn  # returns a one-line detail for the progress line


def _need(value: T | None, what: str) -> T:
    if value is None:
        raise PipelineError(f"internal: {what} is not set by an earlier step", where="release")
    return value


# -- 1 toolchain check --------------------------------------------------------------------
def preflight(ctx: ReleaseContext) -> str:
    """Source-tree checks that must pass before anything slow runs."""
    facts = git_facts(ctx.repo_root)
    require_clean(facts, ctx.allow_dirty)
    check_signing_key(ctx.repo_root, ctx.key_path, dict(ctx.env), ctx.key_class)
    ctx.git = facts
    ctx.version = project_version(ctx.repo_root)
    final = ctx.dist / bundle_name(ctx.version)
    if final.exists() and not ctx.force:  # refuse now, not after a long build
        raise CheckFailed(
            f"a bundle of version {ctx.version} already exists",
            where=str(final),
            hint="bump [project].version, or pass --force to replace it",
        )
    if facts.commit_time + MANIFEST_VALIDITY_SECONDS <= ctx.now:
        raise CheckFailed(
            "HEAD was committed more than the manifest validity period ago: the bundle "
            "would be born expired",
            where=f"git revision {facts.revision}",
            hint="release from a recent commit",
        )
    dirty = " (dirty tree allowed)" if facts.dirty else ""
    return f"revision {facts.revision[:12]}{dirty}"


def step_toolchain_check(ctx: ReleaseContext) -> str:
    from pipeline.toolchain.check import check_installed

    detail = preflight(ctx)
    check_installed(ctx.repo_root)
    return f"{detail}, toolchain matches toolchain.lock"


# -- 2 build ------------------------------------------------------------------------------
def step_build(ctx: ReleaseContext) -> str:
    from pipeline.lanebuild.driver import build_lanes

    index = build_lanes(
        ctx.repo_root, ctx.lanes, ctx.rebuild, say=lambda line: ctx.say(f"    {line}")
    )
    if ctx.lanes:  # the index also keeps other lanes' earlier builds: release only these
        index = index.model_copy(
            update={"lanes": [e for e in index.lanes if e.lane in set(ctx.lanes)]}
        )
    ctx.index = index
    return f"{len(index.lanes)} lane(s): {', '.join(e.lane for e in index.lanes)}"


def _check_index(ctx: ReleaseContext, index: BuildIndex) -> None:
    """The build must be of this commit and this toolchain.lock."""
    git = _need(ctx.git, "git facts")
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

    if index.toolchain_lock_sha256 != lock_digest(ctx.repo_root / "toolchain.lock"):
        raise CheckFailed(
            "build index was made with a different toolchain.lock", where="build/index.json"
        )


# -- 3 verify -----------------------------------------------------------------------------
def step_verify(ctx: ReleaseContext) -> str:
    index = _need(ctx.index, "build index")
    _check_index(ctx, index)
    artifacts = [(ctx.repo_root / e.artifact, e.lane) for e in index.lanes]
    try:
        report = (ctx.derive or default_deriver())(artifacts)
    except VerifyError as exc:
        raise CheckFailed(f"verification could not run: {exc.message}", where=exc.where) from exc
    failing = failed_findings(report)
    if failing:
        raise CheckFailed(
            f"{len(failing)} failing finding(s): {', '.join(failing)}",
            where="verification report",
            hint="tinyrustlm-verify artifact --build-index build/index.json shows the evidence",
        )
    ctx.report = report
    total = sum(len(a.get("findings", [])) for a in report.get("artifacts", []))
    return f"{len(artifacts)} artifact(s), {total} finding(s), all pass"


# -- 4 smoke ------------------------------------------------------------------------------
def step_smoke(ctx: ReleaseContext) -> str:
    index = _need(ctx.index, "build index")
    bad = [
        f"{e.lane}: {e.smoke.status} {e.smoke.detail}".strip()
        for e in index.lanes
        if e.smoke.status != "pass"
    ]
    if bad:
        raise CheckFailed(
            f"self-test did not pass for {len(bad)} lane(s): {'; '.join(bad)}",
            where="build/index.json smoke",
        )
    engines = sorted({e.smoke.engine for e in index.lanes})
    return f"{len(index.lanes)} pass ({', '.join(engines)})"


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


def _records(ctx: ReleaseContext, index: BuildIndex) -> list[BuildStep]:
    steps: list[BuildStep] = []
    for entry in index.lanes:
        path = ctx.repo_root / entry.record
        record = load_model(BuildRecord, path, "build-record")
        steps.append(BuildStep(entry.lane, tuple(record.argv), tuple(sorted(record.env.items()))))
    return steps


def _toolchain_packages(repo_root: Path) -> list[ToolchainPackage]:
    from pipeline.toolchain.lockfile import load_lock

    lock = load_lock(repo_root / "toolchain.lock")
    return [ToolchainPackage(p.name, p.version, p.architecture, p.sha256) for p in lock.package]


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def step_sign(ctx: ReleaseContext) -> str:
    index = _need(ctx.index, "build index")
    report = _need(ctx.report, "verification report")
    key = resolve_signing_key(ctx.repo_root, ctx.key_path, dict(ctx.env), ctx.key_class)
    artifacts = artifact_files(index, ctx.repo_root)
    js_files = js_host_files(ctx.repo_root)
    wasm_lanes = [e.lane for e in index.lanes if e.kind == "wasm"]
    manifest = build_manifest(
        index=index,
        artifacts=artifacts,
        js_files=js_files,
        contracts=lane_contracts(wasm_lanes),
        version=ctx.version,
        key_class=key.key_class,
        expires_epoch=index.source_date_epoch + MANIFEST_VALIDITY_SECONDS,
        compiler=compiler_versions(ctx.repo_root),
    )
    listed: list[BundleFile] = [*artifacts, *js_files]
    files: dict[str, bytes] = {f.url: f.source.read_bytes() for f in listed}
    files[MANIFEST] = manifest_bytes(manifest)
    files[REPORT] = canonical_json(report) + b"\n"
    if ctx.conformance is not None:
        files[CONFORMANCE] = ctx.conformance
    crates = crate_sources(ctx.repo_root)
    toolchain = _toolchain_packages(ctx.repo_root)
    steps = _records(ctx, index)
    files[SBOM] = sbom_bytes(
        SbomInputs(
            version=ctx.version,
            build_id=manifest.build_id,
            source_revision=index.source_revision,
            source_date_epoch=index.source_date_epoch,
            files=manifest.listed_files(),
            crates=crates,
            toolchain=toolchain,
            python=python_requirements(ctx.repo_root),
            steps=steps,
        )
    )
    check_sbom(files[SBOM])
    subjects = [(url, _sha(files[url])) for url, _ in manifest.listed_files()]
    attested = (MANIFEST, SBOM, REPORT, *(n for n in OPTIONAL_ATTESTED_FILES if n in files))
    subjects += [(name, _sha(files[name])) for name in attested]
    statement = statement_bytes(
        ProvenanceInputs(
            version=ctx.version,
            build_id=manifest.build_id,
            source_revision=index.source_revision,
            source_date_epoch=index.source_date_epoch,
            toolchain_lock_sha256=index.toolchain_lock_sha256,
            lanes=[e.lane for e in index.lanes],
            subjects=subjects,
            crates=crates,
            toolchain=toolchain,
            steps=steps,
        )
    )
    files[MANIFEST_SIGNATURE] = sign_to_sigstore_bundle(
        key.private_key, MANIFEST_PAYLOAD_TYPE, files[MANIFEST]
    )
    files[PROVENANCE_SIGNATURE] = sign_to_sigstore_bundle(
        key.private_key, IN_TOTO_PAYLOAD_TYPE, statement
    )
    ctx.key, ctx.manifest, ctx.files = key, manifest, files
    return f"key {key.keyid[:16]}… ({key.key_class}), build id {manifest.build_id[:16]}…"


# -- 6 bundle -----------------------------------------------------------------------------
def step_bundle(ctx: ReleaseContext) -> str:
    from pipeline.bundle import write_bundle

    index = _need(ctx.index, "build index")
    manifest = _need(ctx.manifest, "manifest")
    native = frozenset(a.url for a in manifest.native_artifacts)
    ctx.bundle = write_bundle(
        ctx.dist,
        ctx.version,
        ctx.files,
        index.source_date_epoch,
        force=ctx.force,
        executable=native,
    )
    return str(ctx.bundle)


STEPS: tuple[Step, ...] = (
    Step("toolchain check", step_toolchain_check),
    Step("build", step_build),
    Step("verify", step_verify),
    Step("smoke", step_smoke),
    Step("sign", step_sign),
    Step("bundle", step_bundle),
)


def with_step(steps: Sequence[Step], title: str, run: StepFn) -> tuple[Step, ...]:
    """`steps` with the one titled `title` running `run` instead (tests, dry runs)."""
    if title not in {s.title for s in steps}:
        raise KeyError(title)
    return tuple(replace(s, run=run) if s.title == title else s for s in steps)


def run_release(
    ctx: ReleaseContext, steps: Sequence[Step] = STEPS, say: Callable[[str], None] = print
) -> ReleaseContext:
    """Run `steps` in order, holding build/.release.lock so two releases never interleave
    (dist/ has its own lock for the final write; nothing goes there before step 6)."""
    from pipeline.bundle import release_lock

    ctx.say = say
    with release_lock(ctx.repo_root / "build"):
        for number, step in enumerate(steps, start=1):
            say(f"[{number}/{len(steps)}] {step.title} ...")
            detail = step.run(ctx)
            say(f"[{number}/{len(steps)}] {step.title}: ok ({detail})")
    return ctx


def summary(ctx: ReleaseContext) -> str:
    manifest = _need(ctx.manifest, "manifest")
    key = _need(ctx.key, "signing key")
    lines = [
        f"bundle     {ctx.bundle}",
        f"version    {manifest.version} (revision {manifest.source_revision})",
        f"build id   {manifest.build_id}",
        f"key        {key.keyid} ({key.key_class}: {key.source})",
        f"expires    {datetime.fromtimestamp(manifest.expires_epoch, UTC):%Y-%m-%dT%H:%M:%SZ}",
    ]
    digests = dict(manifest.listed_files())
    for url, lane in manifest.lanes():
        lines.append(f"  {lane:<26} sha256 {digests[url][:16]}  {url}")
    if key.key_class == "development":
        lines.append(
            "signed with the development key: verify with --allow-dev-key and "
            f"--trusted-keys {ctx.repo_root / '.dev-keys/development.trusted-keys.json'}"
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
        "--allow-dirty",
        action="store_true",
        help="release from a tree with uncommitted changes (local trials only)",
    )


def run(args: argparse.Namespace) -> int:
    repo_root = Path.cwd()
    ctx = ReleaseContext(
        repo_root=repo_root,
        dist=args.dist if args.dist.is_absolute() else repo_root / args.dist,
        lanes=args.lanes,
        force=args.force,
        rebuild=args.rebuild,
        allow_dirty=args.allow_dirty,
        key_path=args.key,
        key_class=args.key_class,
    )
    steps = STEPS
    if args.conformance or args.conformance_require:
        from pipeline.conformance.matrix import Options
        from pipeline.conformance.release_step import with_conformance

        require = [n for n in args.conformance_require.split(",") if n]
        steps = with_conformance(STEPS, Options(cases=args.conformance_cases), require)
    run_release(ctx, steps)
    print(summary(ctx))
    return EXIT_OK
