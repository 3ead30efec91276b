"""The release's steps, in the order its documents need them: source tree -> signed bundle.

Release data flows through typed step results, each step a function of the previous one:

    request -> Checked -> Built -> Verified -> Tested -> ManifestSigned -> Conformed
            -> Signed -> Packed -> Bundled

    1 toolchain check        the tree is read once (`pipeline.tree`), committed, matches
                             toolchain.lock; the signing key loads
    2 build                  every lane, deterministically (pipeline.lanebuild), or records
    3 verify                 every artifact inspected against its lane policy
    4 smoke                  each artifact's self-test result from its build record; then
                             each wasm artifact's memory plan, asked of its bytes
                             (`pipeline.release.memory_plan`: memory-plan.json)
    5 sign manifest          documents assembled (`documents_of`), the manifest signed
    6 conformance            the matrix against the signed manifest: node over every lane and
                             tier (`release --conformance`: every engine)
    7 sign provenance        the documents again with conformance.json, provenance signed
    8 checksums and tarball  SHA256SUMS over every file, the deterministic tarball
    9 bundle                 staged, fsynced, renamed into dist/tinyrustlm-<version>/

`STEPS` holds the step functions (tests swap one with `dataclasses.replace`). Nothing is
written into dist/ unless steps 1-8 passed. The bundle is a pure function of the commit, the
build outputs and the key: SOURCE_DATE_EPOCH is HEAD's committer time and the expiry a fixed
period after it, so releasing twice from one commit gives identical bytes — and a second
release of an unchanged tree finds the same bytes in dist/ and says "up to date".

`verify`, `smoke` and `documents_of` are what a rebuild (`pipeline.reproduce`) runs too.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar, Protocol, TypeVar

from pipeline import paths
from pipeline.conformance.cases import DEFAULT_CASES
from pipeline.conformance.matrix import MatrixError, Options
from pipeline.documents.assemble import MANIFEST_VALIDITY_SECONDS, Documents, documents_of
from pipeline.documents.keys import SigningKey, resolve_signing_key
from pipeline.documents.sign import sign_to_sigstore_bundle
from pipeline.errors import CheckFailed, TabledError
from pipeline.lanebuild.built import Built, built_from_index
from pipeline.lanebuild.driver import build_lanes
from pipeline.lanebuild.handoff import built_from_records
from pipeline.release.bundle import (
    BundleExists,
    bundle_contents,
    existing_bundle,
    release_lock,
    write_bundle,
)
from pipeline.release.conformance import RELEASE_ENGINES, covered, matrix_report
from pipeline.release.matrix_cache import matrix_once
from pipeline.release.memory_plan import memory_plan_document, plan_summary
from pipeline.toolchain.check import check_installed
from pipeline.tree.snapshot import Tree, read_tree
from pipeline.tree.sources import require_clean
from verify.bundle.layout import MANIFEST, MANIFEST_SIGNATURE, PROVENANCE_SIGNATURE, bundle_name
from verify.bundle.page.previous import previous_files
from verify.bundle.report_check import Deriver, default_deriver, failed_findings
from verify.errors import VerifyError
from verify.formats.conformance import read_report
from verify.formats.in_toto import IN_TOTO_PAYLOAD_TYPE
from verify.formats.manifest import MANIFEST_PAYLOAD_TYPE, KeyClass, ModuleManifest
from verify.formats.report import VerificationReport


class ReleaseRefused(TabledError, CheckFailed):
    """A release step ran and refused to go on."""

    table: ClassVar[Mapping[str, str]] = {
        "release.born-expired": "release from a recent commit",
        "release.verify-could-not-run": (
            "read the verifier's message: an artifact or policy it needs is unreadable"
        ),
        "release.findings": (
            "tinyrustlm-verify artifact --build-index build/index.json shows the evidence"
        ),
        "release.smoke": (
            "a lane ships only if its self-test ran and passed: install its engine, leave it out "
            "with --lane, or name it with --ship-unsmoked"
        ),
        "release.manifest-changed": (
            "rerun the release: something rewrote manifest.json while it ran"
        ),
    }


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
    # lanes that may ship although their self-test did not run here (recorded in the manifest)
    unsmoked_lanes: tuple[str, ...] = ()
    # an earlier release's bundle folder: report.html diffs against it (it rides in previous/)
    previous: Path | None = None


@dataclass(frozen=True)
class Checked:
    """Step 1: the source tree (read once) is releasable and the signing key loads."""

    request: ReleaseRequest
    tree: Tree
    key: SigningKey
    detail: str
    previous: Mapping[str, bytes] | None = None  # previous/... files (request.previous)


@dataclass(frozen=True)
class Verified:
    """Step 3: every artifact's findings pass the lane policy."""

    built: Built
    report: VerificationReport
    detail: str


@dataclass(frozen=True)
class Tested:
    """Step 4: every artifact's self-test passed."""

    verified: Verified
    detail: str
    unsmoked: tuple[str, ...] = ()  # lanes whose self-test did not run, each named by the user
    memory_plan: bytes | None = None  # memory-plan.json (None: no wasm lane, or not asked)


@dataclass(frozen=True)
class ManifestSigned:
    """Step 5: the documents without conformance.json, and the manifest's signature."""

    checked: Checked
    tested: Tested
    documents: Documents
    manifest_signature: bytes
    detail: str

    @property
    def files(self) -> dict[str, bytes]:
        """The bundle as a loader sees it: the documents and the signed manifest."""
        return {**self.documents.files, MANIFEST_SIGNATURE: self.manifest_signature}


@dataclass(frozen=True)
class Conformed:
    """Step 6: conformance.json, when the matrix ran (None when not asked for)."""

    manifest_signed: ManifestSigned
    report: bytes | None
    detail: str


@dataclass(frozen=True)
class Signed:
    """Step 7: every document and both signatures."""

    conformed: Conformed
    documents: Documents
    signatures: Mapping[str, bytes]  # bundle path -> sigstore bundle JSON
    detail: str

    @property
    def checked(self) -> Checked:
        return self.conformed.manifest_signed.checked

    @property
    def files(self) -> dict[str, bytes]:
        """Every bundle file but SHA256SUMS and the tarball (those are step 8's)."""
        return {**self.documents.files, **self.signatures}


@dataclass(frozen=True)
class Packed:
    """Step 8: the whole bundle's bytes, SHA256SUMS and the tarball included."""

    signed: Signed
    contents: Mapping[str, bytes]
    executable: frozenset[str]
    detail: str


@dataclass(frozen=True)
class Bundled:
    """Step 9: the bundle is in dist/ (written now, or found there byte-identical)."""

    packed: Packed
    bundle: Path
    up_to_date: bool
    detail: str

    @property
    def manifest(self) -> ModuleManifest:
        return self.packed.signed.documents.manifest

    @property
    def key(self) -> SigningKey:
        return self.packed.signed.checked.key

    @property
    def tree(self) -> Tree:
        return self.packed.signed.checked.tree


class _Result(Protocol):
    @property
    def detail(self) -> str: ...


def _force_command(version: str) -> str:
    return (
        f"./nox -s release -- --force (replaces {bundle_name(version)}), or bump [project].version"
    )


# -- 1 toolchain check --------------------------------------------------------------------
def preflight(request: ReleaseRequest) -> Checked:
    """Source-tree checks that must pass before anything slow runs (the tree is read here,
    once, and carried by every later step)."""
    tree = read_tree(request.repo_root)
    require_clean(tree.git, request.allow_dirty)
    key = resolve_signing_key(tree.root, request.key_path, dict(request.env), request.key_class)
    final = request.dist / bundle_name(tree.version)
    old = existing_bundle(final)
    if old is not None and not request.force and old.source_revision != tree.git.revision:
        # refuse now, not after a long build: another commit's bundle holds this version
        raise BundleExists(
            f"a bundle of version {tree.version} from another revision "
            f"({old.source_revision[:12]}) already exists",
            where=str(final),
            hint=_force_command(tree.version),
        )
    if tree.git.commit_time + MANIFEST_VALIDITY_SECONDS <= request.now:
        raise ReleaseRefused(
            "HEAD was committed more than the manifest validity period ago: the bundle "
            "would be born expired",
            where=f"git revision {tree.git.revision}",
            hint="release from a recent commit",
            error_id="release.born-expired",
        )
    previous = previous_files(request.previous) if request.previous is not None else None
    dirty = " (dirty tree allowed)" if tree.git.dirty else ""
    detail = f"revision {tree.git.revision[:12]}{dirty}, key {key.keyid[:16]}… ({key.key_class})"
    return Checked(request, tree, key, detail, previous)


def step_toolchain_check(request: ReleaseRequest) -> Checked:
    checked = preflight(request)
    tree = checked.tree
    check_installed(tree.lock, tree.lock_path, tree.build_dir)
    return replace(checked, detail=f"{checked.detail}, toolchain matches {paths.LOCK_FILE}")


# -- 2 build ------------------------------------------------------------------------------
def step_build(checked: Checked) -> Built:
    request = checked.request
    lanes = list(request.lanes) if request.lanes else None
    index = build_lanes(
        checked.tree, lanes, request.rebuild, say=lambda line: request.say(f"    {line}")
    )
    return built_from_index(checked.tree, index, request.lanes)


def build_from_records(folders: Sequence[Path]) -> Callable[[Checked], Built]:
    """Step 2 for `release --from-records DIR...`: lanes built elsewhere, each checked
    against this tree (pipeline.lanebuild.handoff), instead of building here."""

    def from_records(checked: Checked) -> Built:
        return built_from_records(checked.tree, folders, checked.request.lanes)

    return from_records


# -- 3 verify -----------------------------------------------------------------------------
def step_verify(built: Built, derive: Deriver | None = None) -> Verified:
    artifacts = [(built.artifacts[e.lane], e.lane) for e in built.index.lanes]
    try:
        report = (derive or default_deriver())(artifacts)
    except VerifyError as exc:
        raise ReleaseRefused(
            f"verification could not run: {exc.message}",
            where=exc.where,
            error_id="release.verify-could-not-run",
        ) from exc
    failing = failed_findings(report)
    if failing:
        raise ReleaseRefused(
            f"{len(failing)} failing finding(s): {', '.join(failing)}",
            where="verification report",
            hint="tinyrustlm-verify artifact --build-index build/index.json shows the evidence",
            error_id="release.findings",
        )
    total = sum(len(a.findings) for a in report.artifacts)
    return Verified(built, report, f"{len(artifacts)} artifact(s), {total} finding(s), all pass")


# -- 4 smoke ------------------------------------------------------------------------------
def step_smoke(verified: Verified, unsmoked: Sequence[str] = ()) -> Tested:
    """Every lane's self-test ran and passed; a lane named in `unsmoked` may instead have
    not run (never failed) — the manifest then records it (`unsmoked_lanes`)."""
    lanes = verified.built.index.lanes
    allowed = set(unsmoked)
    bad = [
        f"{e.lane}: {e.smoke.status} {e.smoke.detail}".strip()
        for e in lanes
        if e.smoke.status != "pass" and not (e.smoke.status == "not-run" and e.lane in allowed)
    ]
    if bad:
        raise ReleaseRefused(
            f"self-test did not pass for {len(bad)} lane(s): {'; '.join(bad)}",
            where="build/index.json smoke",
            hint="a lane ships only if its self-test ran and passed: install its engine, leave "
            "it out with --lane, or name it with --ship-unsmoked (the manifest records it)",
            error_id="release.smoke",
        )
    unsmoked = tuple(e.lane for e in lanes if e.smoke.status == "not-run")  # all named
    engines = sorted({e.smoke.engine for e in lanes})
    shipped = f"; not run, shipped as named: {', '.join(unsmoked)}" if unsmoked else ""
    passed = sum(e.smoke.status == "pass" for e in lanes)
    return Tested(verified, f"{passed} pass ({', '.join(engines)}){shipped}", unsmoked)


def step_memory_plan(tested: Tested) -> Tested:
    """The end of step 4: every wasm artifact, now known to run, asked for its memory plan
    (memory-plan.json, a subject of the provenance like conformance.json)."""
    built = tested.verified.built
    if not built.wasm_lanes:
        return tested
    data = memory_plan_document(built)
    return replace(tested, memory_plan=data, detail=f"{tested.detail}; {plan_summary(data)}")


def no_memory_plan(tested: Tested) -> Tested:
    """Step 4 without a memory plan (lanes that are not runnable modules: the tests' fakes)."""
    return tested


# -- 5 sign manifest ----------------------------------------------------------------------
def step_sign_manifest(checked: Checked, tested: Tested) -> ManifestSigned:
    built = tested.verified.built
    documents = documents_of(
        built,
        tested.verified.report,
        checked.key.key_class,
        disabled_lanes=checked.request.disabled_lanes,
        unsmoked_lanes=tested.unsmoked,
        previous=checked.previous,
        memory_plan=tested.memory_plan,
    )
    signature = sign_to_sigstore_bundle(
        checked.key.private_key, MANIFEST_PAYLOAD_TYPE, documents.files[MANIFEST]
    )
    build_id = documents.manifest.build_id
    detail = f"build id {build_id[:16]}…, key {checked.key.keyid[:16]}…"
    return ManifestSigned(checked, tested, documents, signature, detail)


# -- 6 conformance ------------------------------------------------------------------------
def skip_conformance(signed: ManifestSigned) -> Conformed:
    return Conformed(signed, None, "skipped (release --no-conformance)")


def run_conformance(
    opts: Options, require: Sequence[str] = ()
) -> Callable[[ManifestSigned], Conformed]:
    """Step 6: the matrix over the signed manifest's lanes (`release.conformance`); its
    report rides on `Conformed`, its detail says which engines and tiers it covered."""

    def conformance_step(signed: ManifestSigned) -> Conformed:
        say, manifest = signed.checked.request.say, signed.documents.manifest
        data = matrix_report(signed.files, manifest, signed.checked.key, say, opts, require)
        return Conformed(signed, data, covered(read_report(data)[0]))

    return conformance_step


def release_matrix(signed: ManifestSigned, cases: int = DEFAULT_CASES) -> Conformed:
    """Every release's step 6: `RELEASE_ENGINES` over every lane and tier (`release
    --conformance` runs every engine); no report when no native lane here is an oracle. An
    unchanged re-release reuses the report of the same inputs (`matrix_cache`) and says so."""
    opts = Options(engines=RELEASE_ENGINES, cases=cases)
    say, manifest = signed.checked.request.say, signed.documents.manifest

    def run() -> bytes:
        return matrix_report(signed.files, manifest, signed.checked.key, say, opts)

    repo_root = signed.checked.request.repo_root
    try:
        done = matrix_once(repo_root, signed.files, RELEASE_ENGINES, cases, run)
    except MatrixError as exc:
        if exc.error_id != "conformance.no-oracle":
            raise
        return Conformed(signed, None, f"no report: {exc.message}")
    detail = covered(read_report(done.report)[0])
    if done.reused:
        detail += " (reused: the bundle, the harness and the toolchain are unchanged)"
    return Conformed(signed, done.report, detail)


# -- 7 sign provenance --------------------------------------------------------------------
def step_sign_provenance(conformed: Conformed) -> Signed:
    first = conformed.manifest_signed
    tested = first.tested
    documents = documents_of(
        tested.verified.built,
        tested.verified.report,
        first.checked.key.key_class,
        disabled_lanes=first.checked.request.disabled_lanes,
        unsmoked_lanes=tested.unsmoked,
        conformance=conformed.report,
        previous=first.checked.previous,
        memory_plan=tested.memory_plan,
    )
    if documents.files[MANIFEST] != first.documents.files[MANIFEST]:
        # the manifest does not list conformance.json: the signed one must still be it
        raise ReleaseRefused(
            "the manifest changed between signing it and signing the provenance",
            where=MANIFEST,
            error_id="release.manifest-changed",
        )
    statement = sign_to_sigstore_bundle(
        first.checked.key.private_key, IN_TOTO_PAYLOAD_TYPE, documents.statement
    )
    signatures = {MANIFEST_SIGNATURE: first.manifest_signature, PROVENANCE_SIGNATURE: statement}
    return Signed(conformed, documents, signatures, f"{len(documents.files)} file(s) attested")


# -- 8 checksums and tarball --------------------------------------------------------------
def step_pack(signed: Signed) -> Packed:
    manifest = signed.documents.manifest
    native = frozenset(a.url for a in manifest.native_artifacts)
    contents = bundle_contents(manifest.version, signed.files, manifest.source_date_epoch, native)
    return Packed(signed, contents, native, f"{len(contents)} file(s)")


# -- 9 bundle -----------------------------------------------------------------------------
def step_bundle(packed: Packed) -> Bundled:
    checked = packed.signed.checked
    request = checked.request
    manifest = packed.signed.documents.manifest
    path, written = write_bundle(
        request.dist,
        manifest.version,
        packed.contents,
        force=request.force,
        executable=packed.executable,
        hint=_force_command(manifest.version),
    )
    detail = str(path) if written else f"up to date: {path} holds these exact bytes"
    return Bundled(packed, path, not written, detail)


@dataclass(frozen=True)
class Steps:
    """The step functions, in order; each takes the previous step's result."""

    toolchain_check: Callable[[ReleaseRequest], Checked] = step_toolchain_check
    build: Callable[[Checked], Built] = step_build
    verify: Callable[[Built, Deriver | None], Verified] = step_verify
    smoke: Callable[[Verified, Sequence[str]], Tested] = step_smoke
    memory_plan: Callable[[Tested], Tested] = step_memory_plan  # the end of step 4
    sign_manifest: Callable[[Checked, Tested], ManifestSigned] = step_sign_manifest
    conformance: Callable[[ManifestSigned], Conformed] = release_matrix
    sign_provenance: Callable[[Conformed], Signed] = step_sign_provenance
    pack: Callable[[Signed], Packed] = step_pack
    bundle: Callable[[Packed], Bundled] = step_bundle


STEPS = Steps()
STEP_TITLES = (
    "toolchain check",
    "build",
    "verify",
    "smoke",
    "sign manifest",
    "conformance",
    "sign provenance",
    "checksums and tarball",
    "bundle",
)
A = TypeVar("A")
R = TypeVar("R", bound=_Result)


def run_release(request: ReleaseRequest, steps: Steps = STEPS, say: Say = print) -> Bundled:
    """Run the steps in order, holding build/.release.lock so two releases never
    interleave (dist/ has its own lock for the final write; nothing goes there before 9)."""
    request = replace(request, say=say)
    total = len(STEP_TITLES)

    def step(number: int, run: Callable[[A], R], previous: A) -> R:
        title = STEP_TITLES[number - 1]
        say(f"[{number}/{total}] {title} ...")
        result = run(previous)
        say(f"[{number}/{total}] {title}: ok ({result.detail})")
        return result

    with release_lock(request.repo_root / paths.BUILD_DIR):
        checked = step(1, steps.toolchain_check, request)
        built = step(2, steps.build, checked)
        verified = step(3, lambda b: steps.verify(b, request.derive), built)
        tested = step(
            4, lambda v: steps.memory_plan(steps.smoke(v, request.unsmoked_lanes)), verified
        )
        manifest_signed = step(5, lambda t: steps.sign_manifest(checked, t), tested)
        conformed = step(6, steps.conformance, manifest_signed)
        signed = step(7, steps.sign_provenance, conformed)
        packed = step(8, steps.pack, signed)
        return step(9, steps.bundle, packed)
