"""`tinyrustlm-release reproduce BUNDLE`: verify a release, rebuild it from source, compare.

1 verify      the whole bundle, as `tinyrustlm-verify bundle` does (trusted keys): nothing
              is read from the manifest before its signature verified
2 checkout    a fresh clone at the manifest's source revision; its toolchain.lock is the
              one the manifest cites
3 toolchain   this machine matches that lock
4 build       every lane of the release
5 compare     every artifact byte for byte; then the unsigned documents re-assembled from
              the rebuild (manifest, SBOM, report, provenance statement) and, with the
              release's own signatures, SHA256SUMS and the tarball: the whole bundle
6 explain     for each difference the first differing section and, when diffoscope is
              installed, its HTML report in --diff-dir
7 attest      with --attest --key: a signed rebuild attestation (pipeline.documents.attest)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import ClassVar

from pipeline import paths
from pipeline.documents.assemble import documents_of
from pipeline.documents.attest import Compared, rebuild_statement, write_attestation
from pipeline.documents.keys import SigningKey, load_private_key
from pipeline.errors import EXIT_CHECK_FAILED, EXIT_OK, CheckFailed, TabledError
from pipeline.io import process
from pipeline.io.inputs import PassedOn
from pipeline.io.process import CommandTimedOut, CommandUnstartable, GitFailed, git
from pipeline.lanebuild.built import Built, built_from_index
from pipeline.lanebuild.driver import build_lanes
from pipeline.release.bundle import bundle_contents
from pipeline.release.memory_plan import memory_plan_document
from pipeline.release.steps import step_smoke, step_verify
from pipeline.toolchain.check import check_installed
from pipeline.toolchain.export import install_from
from pipeline.tree.snapshot import read_tree
from verify.bundle.dsse import keyid_of, parse_sigstore_bundle
from verify.bundle.layout import (
    CHECKSUMS,
    CONFORMANCE,
    MANIFEST,
    MANIFEST_SIGNATURE,
    MEMORY_PLAN,
    PREVIOUS_FILES,
    PROVENANCE_SIGNATURE,
    PROVENANCE_STATEMENT,
    REPORT,
    REPORT_PAGE,
    SBOM,
    tarball_name,
)
from verify.bundle.opened import read_bundle_file
from verify.bundle.trusted_keys import load_trust_root
from verify.bundle.verifier import BundleVerifier, Requirements
from verify.errors import VerifyError
from verify.formats.manifest import ModuleManifest
from verify.section_diff import first_difference
from verify.shell.arguments import add_trust_arguments
from verify.shell.result import Outcome

Say = Callable[[str], None]
DIFFOSCOPE_TIMEOUT_SECONDS = 600


def compare_files(a: Path, b: Path) -> str | None:
    return first_difference(read_bundle_file(a, a.name), read_bundle_file(b, b.name))


class ReproduceError(TabledError):
    """The rebuild could not be set up (no manifest, unknown revision, different lock)."""

    table: ClassVar[Mapping[str, str]] = {
        "reproduce.git": "run it inside a clone of the release's repository that has the release's "
        "revision (git fetch), or pass --source REPO",
        "reproduce.lock-differs": "the revision's toolchain.lock is not the one the release cites: "
        "the bundle is not of this repository",
        "reproduce.epoch-differs": "the revision's commit time is not the release's "
        "SOURCE_DATE_EPOCH: the bundle is not of this repository",
        "reproduce.tarball": "unpack the tarball (tar -xzf FILE) and pass the tinyrustlm-<version> "
        "folder",
        "reproduce.not-a-repository": "run it inside a clone of the release's repository, or pass "
        "--source REPO",
        "reproduce.attest-key": "pass --key PEM: the rebuilder's own key (not a release key)",
    }


class BundleNotVerified(PassedOn, CheckFailed):
    """`reproduce` refuses a bundle that `verify bundle` rejects, before any clone or build
    (under the verifier's id)."""

    def __init__(self, message: str, *, error_id: str, where: str = "", hint: str = "") -> None:
        super().__init__(
            f"the bundle does not verify, nothing was rebuilt: {message}",
            error_id=error_id,
            where=where,
            hint=hint,
        )


@dataclass(frozen=True)
class LaneVerdict:
    """One bundle file against its rebuilt twin (`lane` is "" for a document)."""

    lane: str
    name: str  # bundle path
    expected_sha256: str
    rebuilt_sha256: str
    difference: str | None  # None: bit-identical
    diffoscope: str | None = None  # path of diffoscope's HTML report, when it ran

    @property
    def identical(self) -> bool:
        return self.expected_sha256 == self.rebuilt_sha256

    def compared(self) -> Compared:
        return Compared(self.name, self.expected_sha256, self.rebuilt_sha256)


@dataclass(frozen=True)
class Reproduction:
    manifest: ModuleManifest
    artifacts: tuple[LaneVerdict, ...]
    documents: tuple[LaneVerdict, ...]

    @property
    def identical(self) -> bool:
        return all(v.identical for v in (*self.artifacts, *self.documents))


def _git(args: list[str], cwd: Path) -> str:
    try:
        return git(cwd, *args).strip()
    except GitFailed as exc:
        raise ReproduceError(
            f"git {' '.join(args)} failed: {exc.stderr.strip()[-300:]}",
            error_id="reproduce.git",
            where=str(cwd),
        ) from exc


def _is_git_repository(path: Path) -> bool:
    return process.run(["git", "-C", str(path), "rev-parse", "--git-dir"], text=False).ok


def prepare_checkout(source: str, revision: str, workdir: Path) -> Path:
    """A fresh clone of `source` at `revision` (reused if `workdir` already holds it)."""
    checkout = workdir / "tinyrustlm"
    if not (checkout / ".git").is_dir():
        workdir.mkdir(parents=True, exist_ok=True)
        _git(["clone", "--quiet", "--no-checkout", source, str(checkout)], workdir)
    _git(["checkout", "--quiet", "--detach", revision], checkout)
    return checkout


def compare_bundle(bundle: Path, manifest: ModuleManifest, built: Built) -> list[LaneVerdict]:
    rebuilt = {entry.lane: entry for entry in built.index.lanes}
    digests = dict(manifest.listed_files())
    verdicts = []
    for url, lane in manifest.lanes():
        expected = digests[url]
        entry = rebuilt.get(lane)
        if entry is None:
            verdicts.append(LaneVerdict(lane, url, expected, "<not rebuilt>", "lane missing"))
            continue
        difference = None
        if entry.sha256 != expected:
            difference = compare_files(bundle / url, built.artifacts[lane])
        verdicts.append(LaneVerdict(lane, url, expected, entry.sha256, difference))
    return verdicts


def _shipped_conformance(bundle: Path) -> bytes | None:
    """The bundle's conformance.json (a measurement of engines, not a build output: the
    rebuild attests it unchanged rather than re-running the matrix)."""
    path = bundle / CONFORMANCE
    return read_bundle_file(path, CONFORMANCE) if path.is_file() else None


def _shipped_previous(bundle: Path) -> dict[str, bytes] | None:
    """The previous release's documents the bundle carries (an input of its report.html, not
    a build output: the rebuild takes them as shipped)."""
    present = {name: bundle / name for name in PREVIOUS_FILES if (bundle / name).is_file()}
    return {name: read_bundle_file(path, name) for name, path in present.items()} or None


def rebuilt_documents(bundle: Path, manifest: ModuleManifest, built: Built) -> dict[str, bytes]:
    """The bundle's unsigned files as the rebuild makes them: the release's own public steps
    (verify, smoke, `documents_of`) over the rebuilt lanes, never its signing; then SHA256SUMS
    and the tarball over them plus the release's two signature files."""
    # the release's signed choices are inputs here, not outputs: disabled and unsmoked lanes
    tested = step_smoke(step_verify(built), manifest.unsmoked_lanes or ())
    documents = documents_of(
        built,
        tested.verified.report,
        manifest.key_class,
        disabled_lanes=manifest.disabled_lanes or (),
        unsmoked_lanes=manifest.unsmoked_lanes or (),
        conformance=_shipped_conformance(bundle),
        previous=_shipped_previous(bundle),
        # a build output: asked again of the rebuilt artifacts (a bundle from before the memory
        # plan has none, and gets none)
        memory_plan=memory_plan_document(built) if (bundle / MEMORY_PLAN).is_file() else None,
    )
    signatures = {
        name: read_bundle_file(bundle / name, name)
        for name in (MANIFEST_SIGNATURE, PROVENANCE_SIGNATURE)
    }
    native = frozenset(a.url for a in manifest.native_artifacts)
    files = bundle_contents(
        manifest.version, {**documents.files, **signatures}, manifest.source_date_epoch, native
    )
    files[PROVENANCE_STATEMENT] = documents.statement
    return files


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def compare_documents(
    bundle: Path, manifest: ModuleManifest, rebuilt: Mapping[str, bytes], scratch: Path
) -> list[LaneVerdict]:
    """Manifest, SBOM, report, the provenance statement, SHA256SUMS and the tarball."""
    statement = parse_sigstore_bundle(
        read_bundle_file(bundle / PROVENANCE_SIGNATURE, PROVENANCE_SIGNATURE), PROVENANCE_SIGNATURE
    ).envelope.payload
    expected = {
        name: read_bundle_file(bundle / name, name)
        for name in (MANIFEST, SBOM, REPORT, REPORT_PAGE, CHECKSUMS, tarball_name(manifest.version))
    }
    if (bundle / MEMORY_PLAN).is_file():
        expected[MEMORY_PLAN] = read_bundle_file(bundle / MEMORY_PLAN, MEMORY_PLAN)
    expected[PROVENANCE_STATEMENT] = statement
    verdicts = []
    for name, data in expected.items():
        again = rebuilt[name]
        difference = None if data == again else first_difference(data, again)
        if difference is not None:  # keep the rebuilt bytes for diffoscope
            (scratch / name.replace(" ", "-")).parent.mkdir(parents=True, exist_ok=True)
            (scratch / name.replace(" ", "-")).write_bytes(again)
        verdicts.append(LaneVerdict("", name, _sha(data), _sha(again), difference))
    return verdicts


def run_diffoscope(expected: Path, rebuilt: Path, html: Path) -> str | None:
    """diffoscope's HTML report of two files, or None when diffoscope is not installed."""
    tool = shutil.which("diffoscope")
    if tool is None:
        return None
    html.parent.mkdir(parents=True, exist_ok=True)
    try:
        process.run(
            [tool, "--html", str(html), "--no-progress", str(expected), str(rebuilt)],
            timeout=DIFFOSCOPE_TIMEOUT_SECONDS,
            text=False,
        )
    except (CommandUnstartable, CommandTimedOut):
        return None
    return str(html) if html.is_file() else None


def explain(
    verdicts: list[LaneVerdict], bundle: Path, rebuilt_paths: Mapping[str, Path], diff_dir: Path
) -> list[LaneVerdict]:
    """Each differing file with diffoscope's report attached (when it ran)."""
    explained = []
    for v in verdicts:
        rebuilt = rebuilt_paths.get(v.name)
        if v.identical or rebuilt is None:
            explained.append(v)
            continue
        expected = bundle / v.name
        if not expected.is_file():  # the provenance statement: write the bundle's payload
            expected = rebuilt.with_name(f"bundle.{rebuilt.name}")
            expected.write_bytes(
                parse_sigstore_bundle(
                    read_bundle_file(bundle / PROVENANCE_SIGNATURE, PROVENANCE_SIGNATURE),
                    PROVENANCE_SIGNATURE,
                ).envelope.payload
            )
        report = run_diffoscope(
            expected, rebuilt, diff_dir / f"diffoscope.{Path(v.name).name.replace(' ', '-')}.html"
        )
        explained.append(
            LaneVerdict(v.lane, v.name, v.expected_sha256, v.rebuilt_sha256, v.difference, report)
        )
    return explained


def verify_first(bundle: Path, trusted_keys: Path, allow_dev_key: bool, say: Say) -> ModuleManifest:
    """Step 1: the whole `verify bundle` procedure; only then is manifest.json read."""
    try:
        root = load_trust_root(trusted_keys)
        requires = Requirements(now=int(time.time()), allow_dev_key=allow_dev_key)
        verdict = BundleVerifier(root).verify(bundle, requires)
    except VerifyError as exc:
        error_id = getattr(exc, "error_id", "verify.error")
        raise BundleNotVerified(
            exc.message,
            error_id=error_id,
            where=exc.where or str(bundle),
            hint=f"tinyrustlm-verify bundle {bundle} --trusted-keys {trusted_keys} shows each step",
        ) from exc
    say(
        f"[1/6] bundle verified: tinyrustlm {verdict.version}, key {verdict.keyid[:16]}… "
        f"({verdict.key_class})"
    )
    return ModuleManifest.model_validate_json(
        read_bundle_file(bundle / MANIFEST, MANIFEST), strict=True
    )


def reproduce(
    bundle: Path,
    source: str,
    workdir: Path,
    say: Say,
    *,
    trusted_keys: Path,
    allow_dev_key: bool = False,
    diff_dir: Path | None = None,
    toolchain_from: Path | None = None,
) -> Reproduction:
    manifest = verify_first(bundle, trusted_keys, allow_dev_key, say)
    say(f"[2/6] checking out {manifest.source_revision[:12]} from {source}")
    checkout = prepare_checkout(source, manifest.source_revision, workdir)
    tree = read_tree(checkout)
    if tree.lock_sha256 != manifest.toolchain_lock_sha256:
        raise ReproduceError(
            f"the checkout's {paths.LOCK_FILE} is not the one the release cites",
            error_id="reproduce.lock-differs",
            where=str(tree.lock_path),
        )
    if toolchain_from is not None:  # the release's own .debs, when the archive has moved on
        say(f"[3/6] installing that lock's toolchain from {toolchain_from} (no network)")
        install_from(tree.lock, toolchain_from, say)
    say("[3/6] checking the installed toolchain against that lock")
    check_installed(tree.lock, tree.lock_path, tree.build_dir)
    say("[4/6] building every lane")
    index = build_lanes(tree, None, False, say)
    if index.source_date_epoch != manifest.source_date_epoch:
        raise ReproduceError(
            f"SOURCE_DATE_EPOCH {index.source_date_epoch} differs from the release's "
            f"{manifest.source_date_epoch}",
            error_id="reproduce.epoch-differs",
            where="git log -1 --format=%ct",
        )
    say("[5/6] comparing every artifact and every unsigned document byte for byte")
    built = built_from_index(tree, index, tuple(lane for _, lane in manifest.lanes()))
    artifacts = compare_bundle(bundle, manifest, built)
    scratch = workdir / "rebuilt-documents"
    documents = compare_documents(
        bundle, manifest, rebuilt_documents(bundle, manifest, built), scratch
    )
    say("[6/6] explaining differences")
    rebuilt = {v.name: built.artifacts[v.lane] for v in artifacts if v.lane in built.artifacts}
    rebuilt.update({v.name: scratch / v.name.replace(" ", "-") for v in documents})
    out = diff_dir or Path.cwd()
    return Reproduction(
        manifest,
        tuple(explain(artifacts, bundle, rebuilt, out)),
        tuple(explain(documents, bundle, rebuilt, out)),
    )


def render_verdicts(verdicts: list[LaneVerdict]) -> str:
    lines = []
    for v in verdicts:
        state = "identical" if v.identical else f"DIFFERS: {v.difference}"
        if v.diffoscope:
            state += f"\n{'':<30}diffoscope: {v.diffoscope}"
        lines.append(f"  {v.lane or v.name:<28} {v.expected_sha256[:16]}  {state}")
    return "\n".join(lines)


def render(result: Reproduction) -> str:
    same = sum(v.identical for v in result.artifacts)
    docs = sum(v.identical for v in result.documents)
    return "\n".join(
        [
            render_verdicts(list(result.artifacts)),
            f"{same}/{len(result.artifacts)} artifact(s) reproduced bit for bit",
            render_verdicts(list(result.documents)),
            f"{docs}/{len(result.documents)} document(s) reproduced bit for bit",
        ]
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("bundle", type=Path, help="an unpacked release bundle (dist/tinyrustlm-*)")
    add_trust_arguments(parser, "the bundle is verified with it before its manifest is read")
    parser.add_argument(
        "--source",
        default=".",
        help="git repository to clone the release's revision from (default: .)",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="where to clone and build (default: a new temporary folder)",
    )
    parser.add_argument(
        "--diff-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="where diffoscope's HTML reports go (default: the current folder)",
    )
    parser.add_argument(
        "--attest",
        action="store_true",
        help="sign a rebuild attestation of what reproduced (needs --key)",
    )
    parser.add_argument(
        "--key",
        type=Path,
        default=None,
        metavar="PEM",
        help="the rebuilder's Ed25519 private key (for --attest)",
    )
    parser.add_argument(
        "--attest-out",
        type=Path,
        default=None,
        metavar="FILE",
        help="attestation path (default: ./rebuild.<keyid[:16]>.sigstore.json)",
    )
    parser.add_argument(
        "--toolchain-from",
        type=Path,
        default=None,
        metavar="DIR",
        help="install the release's pinned toolchain from a `toolchain export` folder (the "
        "release workflow keeps one as an artifact) before building, with no network",
    )


def run(args: argparse.Namespace) -> Outcome:
    key = None
    if args.attest:  # bad key input first, before an hour of building
        if args.key is None:
            raise ReproduceError(
                "--attest needs --key PEM (the rebuilder's key)",
                where="reproduce --attest",
                error_id="reproduce.attest-key",
            )
        private = load_private_key(args.key)
        key = SigningKey(private, keyid_of(private.public_key()), "release", str(args.key))
    if args.bundle.is_file():
        raise ReproduceError(
            "reproduce needs the unpacked bundle folder, not a file",
            error_id="reproduce.tarball",
            where=str(args.bundle),
            hint=f"unpack it first (tar -xzf {args.bundle}) and pass the tinyrustlm-<version> "
            "folder; `tinyrustlm-verify bundle` verifies a tarball as it is",
        )
    source = str(Path(args.source).resolve()) if Path(args.source).exists() else args.source
    if Path(source).exists() and not _is_git_repository(Path(source)):
        raise ReproduceError(
            "the source to clone the release's revision from is not a git repository",
            error_id="reproduce.not-a-repository",
            where=source,
            hint="run it inside a clone of the release's repository, or pass --source REPO "
            "(a path or URL of that repository)",
        )
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tinyrustlm-reproduce-") as tmp:
        workdir = args.workdir or Path(tmp)
        result = reproduce(
            args.bundle.resolve(),
            source,
            workdir.resolve(),
            lambda s: print(s, file=sys.stderr, flush=True),
            trusted_keys=args.trusted_keys,
            allow_dev_key=args.allow_dev_key,
            diff_dir=args.diff_dir,
            toolchain_from=args.toolchain_from,
        )
    seconds = time.monotonic() - started
    document = json.dumps(
        {
            "artifacts": [{**asdict(v), "identical": v.identical} for v in result.artifacts],
            "documents": [{**asdict(v), "identical": v.identical} for v in result.documents],
            "seconds": round(seconds, 1),
        },
        indent=2,
    )
    print(render(result))  # with --json, the shell prints the document instead
    print(f"whole-bundle reproduction took {seconds:.0f}s")
    if key is not None and not any(v.identical for v in result.artifacts):
        print("no artifact reproduced: no rebuild attestation written", file=sys.stderr)
    elif key is not None:
        statement = rebuild_statement(
            result.manifest,
            [v.compared() for v in result.artifacts],
            [v.compared() for v in result.documents],
            key.keyid,
        )
        path = write_attestation(statement, key, args.attest_out or Path.cwd())
        names = [s.name for s in statement.subject]
        scope = (
            "every signed file: counts for `verify bundle --require-rebuilds`"
            if result.identical
            else "NOT every file: counts only with `verify bundle --rebuild-scope artifacts`"
            if all(v.identical for v in result.artifacts)
            else "NOT every artifact: counts for no bundle"
        )
        print(
            f"rebuild attestation: {path}\n  covers {len(names)} file(s): {', '.join(names)}"
            f"\n  {scope}",
            file=sys.stderr,
        )
    return Outcome(EXIT_OK if result.identical else EXIT_CHECK_FAILED, document=document)
