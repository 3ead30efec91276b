"""Fetch one release from a TUF repository through python-tuf's `ngclient.Updater`.

1. Load the trusted root (--root) and the trusted-keys file before touching the network.
2. Refresh metadata with the Updater (root chain, timestamp, snapshot, targets): rollback,
   freeze, mix-and-match, wrong keys and oversized metadata are refused here. Trusted metadata
   is kept in the state folder, so rollback is detected across runs too.
3. Pick the release (--version V or the newest), from the verified targets metadata; refuse
   one older than the newest already fetched from this repository (unless allowed).
4. If --out/tinyrustlm-<version>/ already holds that release (same version and build id, and
   it passes `verify bundle`), stop: "up to date", nothing downloaded. Otherwise it is replaced
   only with --force; a link or a file in its place is refused, never followed.
5. Download every target of that release into a hidden folder under --out; the Updater checks
   each one's signed length (no endless downloads) and SHA-256. Every request is retried with
   backoff, and a body that breaks off is resumed by range (pipeline/fetch/retrying.py).
6. Run the full `verify bundle` on it; it must be the version and build id the metadata says.
7. Make native binaries executable, fsync, and move the folder to --out/tinyrustlm-<version>/
   in one step: a rename, or (--force over an old bundle) an atomic exchange, so the name never
   goes missing; then remember the version in the state folder.

Any failure removes the hidden folder: --out never holds a partial bundle. The hidden folder is
named after the process (`.fetch-<pid>-…`), so one left by a killed fetch is removed by the
next one.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pydantic import TypeAdapter, ValidationError
from tuf.api import exceptions as tuf_errors
from tuf.api.metadata import Metadata, Snapshot, Targets
from tuf.api.serialization import DeserializationError
from tuf.ngclient import Updater, UpdaterConfig

from pipeline.fetch.retrying import RetryingFetcher
from pipeline.fetch.state import FetchState
from pipeline.fetch.statedir import check_cached_metadata, migrate_legacy_state
from pipeline.io.atomic import fsync_dir, write_atomic
from pipeline.io.lock import hold_lock
from pipeline.io.swap import ExchangeUnsupported, exchange, fault_point
from pipeline.tuf import errors as e
from pipeline.tuf.policy import RepositoryPolicy
from pipeline.tuf.releases import (
    CUSTOM_BUILD_ID,
    CUSTOM_VERSION,
    PublishedRelease,
    newest,
    releases_of,
    target_path,
    version_key,
)
from verify.bundle.layout import MANIFEST, bundle_name
from verify.bundle.report_check import Deriver
from verify.bundle.trusted_keys import TrustRoot, load_trust_root
from verify.bundle.verifier import BundleVerifier, Requirements, Verdict
from verify.errors import VerifyError
from verify.formats.manifest import BundlePath, ModuleManifest
from verify.inputs import read_json_file, read_regular_file

STATE_FILE = "fetch-state.json"
STATE_LOCK = ".lock"
TUF_METADATA_DIR = "metadata"  # python-tuf's own cache inside the state folder
_BUNDLE_PATH = TypeAdapter(BundlePath)
STAGING_PREFIX = ".fetch-"  # + "<pid>-<random>": a hidden folder under --out while fetching
_STAGING_NAME = re.compile(r"\.fetch-([0-9]+)-.+")

Say = Callable[[str], None]
Progress = Callable[[int, int | None, str], None]  # done, total, what: verify.shell.progress.Bar


def _no_progress(done: int, total: int | None, what: str) -> None:
    """No progress bar."""


@dataclass(frozen=True)
class FetchRequest:
    url: str
    root: Path
    out: Path
    trusted_keys: Path
    version: str | None  # None: the newest published release
    allow_dev_key: bool = False
    allow_downgrade: bool = False
    state: Path | None = None
    force: bool = False


@dataclass(frozen=True)
class Fetched:
    bundle: Path
    verdict: Verdict
    state: Path
    up_to_date: bool = False  # the release was already there and verified: nothing downloaded


# python-tuf exception -> our class; the first match wins (subclasses before their bases).
TUF_ERRORS: tuple[tuple[type[Exception], type[e.PublishError]], ...] = (
    (tuf_errors.ExpiredMetadataError, e.MetadataExpired),
    (tuf_errors.BadVersionNumberError, e.MetadataRollback),
    (tuf_errors.UnsignedMetadataError, e.MetadataSignatureInvalid),
    (tuf_errors.LengthOrHashMismatchError, e.TargetHashMismatch),
    (tuf_errors.RepositoryError, e.MetadataInvalid),
    (tuf_errors.DownloadLengthMismatchError, e.DownloadTooLong),
    (tuf_errors.DownloadError, e.DownloadFailed),
)


@contextmanager
def tuf_errors_as_ours(what: str) -> Iterator[None]:
    try:
        yield
    except (tuf_errors.RepositoryError, tuf_errors.DownloadError) as exc:
        for tuf_class, ours in TUF_ERRORS:
            if isinstance(exc, tuf_class):
                raise ours(describe(exc), where=what) from exc
        raise  # unreachable: the table ends with both roots


def describe(exc: BaseException) -> str:
    """A python-tuf error as words: its own text, else the cause's (a server that is down gives
    an empty SlowRetrievalError whose cause chain ends in "Connection refused")."""
    text = str(exc).strip()
    node: BaseException | None = exc
    seen: set[int] = set()
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        if isinstance(node, OSError) and node.strerror:
            reason = f"cannot reach the server: {node.strerror}"
            return f"{text}: {reason}" if text else reason
        reason_of = getattr(node, "reason", None)  # urllib3 wraps the socket error there
        node = (
            node.__cause__
            or node.__context__
            or (reason_of if isinstance(reason_of, BaseException) else None)
        )
    return text or f"{type(exc).__name__} (the HTTP client gave no detail)"


def _read_root(path: Path) -> bytes:
    try:  # bounded, regular files only: a FIFO or /dev/zero is refused, never read
        data = read_regular_file(path, "tuf-root")
        Metadata.from_bytes(data)
    except VerifyError as exc:
        raise e.RootUnreadable(f"{exc.message} [{exc.error_id}]", where=str(path)) from exc
    except DeserializationError as exc:
        raise e.RootUnreadable(f"not TUF root metadata: {exc}", where=str(path)) from exc
    return data


def _writable_folder(path: Path, error: type[e.PublishError], option: str) -> None:
    """`path` as a folder this process may write into (made if missing), else `error`."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise error(
            f"{option} cannot be made a folder: {exc.strerror}",
            where=str(path),
            hint=f"give {option} a folder you can write to",
        ) from exc
    if not path.is_dir() or not os.access(path, os.W_OK | os.X_OK):
        raise error(
            f"{option} is not a folder this user can write to",
            where=str(path),
            hint=f"give {option} a folder you can write to",
        )


def _trusted_keys(path: Path) -> TrustRoot:
    """The trusted keys and their signing policy (threshold, windows, revocations)."""
    try:
        return load_trust_root(path)
    except VerifyError as exc:
        raise e.TrustedKeysUnreadable(exc.message, where=exc.where) from exc


def _read_state(folder: Path, url: str) -> FetchState | None:
    path = folder / STATE_FILE
    if not os.path.lexists(path):
        return None
    try:
        state = FetchState.model_validate(read_json_file(path, "json"))
    except (VerifyError, ValidationError) as exc:
        why = (
            f"{exc.message} [{exc.error_id}]"
            if isinstance(exc, VerifyError)
            else exc.errors()[0]["msg"]
        )
        raise e.StateInvalid(
            f"unreadable fetch state: {why}",
            where=str(path),
            hint="delete the state folder to start over (rollback protection restarts too)",
        ) from exc
    return state if state.repository == url else None


def _verified_targets(metadata_dir: Path) -> Targets:
    """The top-level targets the Updater verified (it persists only verified metadata)."""
    path = metadata_dir / f"{Targets.type}.json"
    md = Metadata[Targets].from_bytes(read_regular_file(path, "tuf-metadata"))
    assert isinstance(md.signed, Targets)
    return md.signed


def _verified_releases(
    updater: Updater, metadata_dir: Path, prefix: str
) -> dict[str, PublishedRelease]:
    """Releases in the verified top-level targets and, when targets delegates them to the
    maintainers' `releases` role, in that role's metadata: asking the Updater for a path it
    delegates makes it fetch and check the role (its threshold of maintainer signatures) and
    persist it beside targets.json."""
    targets = _verified_targets(metadata_dir)
    found = dict(targets.targets)
    roles = targets.delegations.roles if targets.delegations is not None else None
    snapshot = Metadata[Snapshot].from_bytes(
        read_regular_file(metadata_dir / "snapshot.json", "tuf-metadata")
    )
    if roles and "releases" in roles and "releases.json" in snapshot.signed.meta:
        with tuf_errors_as_ours(f"{prefix}: releases role"):
            updater.get_targetinfo(f"{prefix}/0/probe/releases")
        delegated = Metadata[Targets].from_bytes(
            read_regular_file(metadata_dir / "releases.json", "tuf-metadata")
        )
        found.update(delegated.signed.targets)
    return releases_of(prefix, found)


def _choose(
    releases: dict[str, PublishedRelease], request: FetchRequest, seen: FetchState | None
) -> PublishedRelease:
    if request.version is None:
        latest = newest(releases)
        if latest is None:
            raise e.ReleaseNotFound("the repository has no releases", where=request.url)
        chosen = releases[latest]
    elif request.version not in releases:
        listing = ", ".join(sorted(releases, key=version_key)) or "none"
        raise e.ReleaseNotFound(
            f"no release {request.version} (published: {listing})", where=request.url
        )
    else:
        chosen = releases[request.version]
    if (
        seen is not None
        and not request.allow_downgrade
        and version_key(chosen.version) < version_key(seen.newest_version)
    ):
        raise e.DowngradeRefused(
            f"release {chosen.version} is older than {seen.newest_version}, "
            "already fetched from this repository",
            where=request.url,
            hint="pass --allow-downgrade if you really want the older release",
        )
    return chosen


def _download(
    updater: Updater, prefix: str, release: PublishedRelease, staging: Path, progress: Progress
) -> None:
    expected = {CUSTOM_VERSION: release.version, CUSTOM_BUILD_ID: release.build_id}
    for number, rel in enumerate(release.files):
        progress(number, len(release.files), rel)
        path = target_path(prefix, release.version, rel)
        try:
            _BUNDLE_PATH.validate_python(rel)
        except ValidationError as exc:
            raise e.TargetPathInvalid(f"unsafe target path {path!r}", where=path) from exc
        with tuf_errors_as_ours(path):
            info = updater.get_targetinfo(path)
            if info is None or info.custom != expected:
                raise e.MetadataInvalid(
                    "target missing or not of this release in verified metadata", where=path
                )
            dest = staging / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            updater.download_target(info, filepath=str(dest))


def _seal(staging: Path) -> None:
    """Native binaries executable (as in the published bundle), then everything on disk."""
    manifest = ModuleManifest.model_validate_json((staging / MANIFEST).read_bytes(), strict=True)
    native = {a.url for a in manifest.native_artifacts}
    folders = {staging}
    for path in sorted(staging.rglob("*")):
        if path.is_dir():
            folders.add(path)
            path.chmod(0o755)
            continue
        path.chmod(0o755 if path.relative_to(staging).as_posix() in native else 0o644)
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    staging.chmod(0o755)
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        fsync_dir(folder)


def _verify(
    staging: Path,
    release: PublishedRelease,
    trusted: TrustRoot,
    request: FetchRequest,
    now: int,
    derive: Deriver | None,
) -> Verdict:
    requires = Requirements(now=now, allow_dev_key=request.allow_dev_key)
    try:
        verdict = BundleVerifier(trusted, derive).verify(staging, requires)
    except VerifyError as exc:
        error_id = getattr(exc, "error_id", "verify.error")
        raise e.FetchedBundleRejected(
            f"the downloaded bundle fails `verify bundle`: [{error_id}] {exc.message}",
            where=f"{bundle_name(release.version)}/{exc.where}",
        ) from exc
    if (verdict.version, verdict.build_id) != (release.version, release.build_id):
        raise e.FetchedBundleRejected(
            f"the bundle is {verdict.version} (build {verdict.build_id[:16]}), but the "
            f"repository's metadata says {release.version} (build {release.build_id[:16]})",
            where=request.url,
        )
    return verdict


def _present(final: Path) -> bool:
    """Whether the bundle's place is taken by a real folder; a link or a file is refused."""
    try:
        mode = os.lstat(final).st_mode
    except FileNotFoundError:
        return False
    if not stat.S_ISDIR(mode):
        kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a folder"
        raise e.OutputInvalid(
            f"{final.name} in --out is {kind}: fetch never writes through or over it",
            where=str(final),
            hint="remove it, or fetch into another --out",
        )
    return True


def _installed(
    final: Path,
    release: PublishedRelease,
    trusted: TrustRoot,
    request: FetchRequest,
    now: int,
    derive: Deriver | None,
) -> tuple[Verdict | None, str]:
    """The verdict on the bundle already at `final` if it is this release, else why not."""
    requires = Requirements(now=now, allow_dev_key=request.allow_dev_key)
    try:
        verdict = BundleVerifier(trusted, derive).verify(final, requires)
    except VerifyError as exc:
        return None, f"it fails `verify bundle` [{exc.error_id}]"
    if (verdict.version, verdict.build_id) != (release.version, release.build_id):
        return None, f"it is build {verdict.build_id[:16]}, not {release.build_id[:16]}"
    return verdict, ""


def _clear_stale_staging(out: Path) -> None:
    """Remove hidden folders left under --out by fetches that were killed (pid not running)."""
    for entry in out.iterdir():
        match = _STAGING_NAME.fullmatch(entry.name)
        if match is None or _running(int(match[1])):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return False  # ours: from an earlier run whose pid this process now has
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    except OverflowError:
        return False
    return True


def _install(staging: Path, final: Path, replace: bool) -> None:
    """Move the sealed bundle into place in one step; `replace`: exchange with the old one,
    which is left in `staging` for the caller to remove (a kill here leaves it for the next
    fetch to clear, and `final` is a complete bundle at every instant)."""
    try:
        if replace:
            exchange(staging, final)
            fault_point("fetch.exchanged")
        else:
            staging.rename(final)
    except ExchangeUnsupported as exc:
        raise e.OutputInvalid(exc.message, where=str(final), hint=exc.hint) from exc
    except OSError as exc:  # e.g. a folder appeared at `final` meanwhile
        raise e.OutputInvalid(
            f"cannot move the bundle into place: {exc.strerror}",
            where=str(final),
            hint="remove what is there, or fetch into another --out",
        ) from exc
    fsync_dir(final.parent)


def fetch_release(
    request: FetchRequest,
    policy: RepositoryPolicy,
    *,
    now: int,
    derive: Deriver | None = None,
    say: Say | None = None,
    progress: Progress | None = None,
) -> Fetched:
    """`progress(done, total, file)` before each file is downloaded (a progress bar)."""
    tell = say or (lambda _line: None)
    url = request.url.rstrip("/")
    root_bytes = _read_root(request.root)
    trusted = _trusted_keys(request.trusted_keys)
    state_dir = request.state or migrate_legacy_state(url, tell)
    metadata_dir = state_dir / TUF_METADATA_DIR
    _writable_folder(metadata_dir, e.StateInvalid, "--state")
    _writable_folder(request.out, e.OutputInvalid, "--out")
    _clear_stale_staging(request.out)
    with hold_lock(state_dir / STATE_LOCK, e.StateLocked, "fetch with this state folder"):
        seen = _read_state(state_dir, url)
        check_cached_metadata(metadata_dir)  # python-tuf reads them whole: never a FIFO
        with tuf_errors_as_ours(f"{url}/metadata"):
            updater = Updater(
                metadata_dir=str(metadata_dir),
                metadata_base_url=f"{url}/metadata/",
                target_base_url=f"{url}/targets/",
                config=UpdaterConfig(app_user_agent="tinyrustlm-release"),
                fetcher=RetryingFetcher(app_user_agent="tinyrustlm-release"),
                bootstrap=root_bytes,
            )
            updater.refresh()
        releases = _verified_releases(updater, metadata_dir, policy.target_prefix)
        release = _choose(releases, request, seen)
        tell(f"release {release.version}: {len(release.files)} files, build {release.build_id}")
        final = request.out / bundle_name(release.version)
        present = _present(final)
        up_to_date = False
        if present:
            current, why_not = _installed(final, release, trusted, request, now, derive)
            if current is not None and not request.force:
                verdict, up_to_date = current, True
            elif not request.force:
                raise e.OutputExists(
                    f"the output folder already holds {final.name}, but {why_not}",
                    where=str(final),
                    hint="remove it, or pass --force to replace it",
                )
        if not up_to_date:

            def check(staging: Path) -> Verdict:
                return _verify(staging, release, trusted, request, now, derive)

            verdict = _fetch_into(
                updater, policy, release, final, present, request.out, check, progress
            )
        if seen is None or version_key(release.version) > version_key(seen.newest_version):
            state = FetchState(
                repository=url, newest_version=release.version, newest_build_id=release.build_id
            )
            write_atomic(
                state_dir / STATE_FILE,
                (state.model_dump_json(by_alias=True, indent=2) + "\n").encode("utf-8"),
            )
    return Fetched(final, verdict, state_dir, up_to_date)


def _fetch_into(
    updater: Updater,
    policy: RepositoryPolicy,
    release: PublishedRelease,
    final: Path,
    replace: bool,
    out: Path,
    verify: Callable[[Path], Verdict],
    progress: Progress | None = None,
) -> Verdict:
    """Download, verify, seal and install the release as `final` via a hidden folder."""
    staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=out))
    try:
        _download(updater, policy.target_prefix, release, staging, progress or _no_progress)
        verdict = verify(staging)
        _seal(staging)
        _install(staging, final, replace)
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # after an exchange: the old bundle
    return verdict
