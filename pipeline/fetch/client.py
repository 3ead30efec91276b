"""Fetch one release from a TUF repository through python-tuf's `ngclient.Updater`.

1. Load the trusted root (--root) and the trusted-keys file before touching the network.
2. Refresh metadata with the Updater (root chain, timestamp, snapshot, targets): rollback,
   freeze, mix-and-match, wrong keys and oversized metadata are refused here. Trusted metadata
   is kept in the state folder, so rollback is detected across runs too.
3. Pick the release (--version V or the newest), from the verified targets metadata; refuse
   one older than the newest already fetched from this repository (unless allowed).
4. Download every target of that release into a hidden folder under --out; the Updater checks
   each one's signed length (no endless downloads) and SHA-256.
5. Run the full `verify bundle` on it; it must be the version and build id the metadata says.
6. Make native binaries executable, fsync, and rename the folder to --out/tinyrustlm-<version>/
   in one step; then remember the version in the state folder.

Any failure removes the hidden folder: --out never holds a partial bundle.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pydantic import TypeAdapter, ValidationError
from tuf.api import exceptions as tuf_errors
from tuf.api.metadata import Metadata, Targets
from tuf.api.serialization import DeserializationError
from tuf.ngclient import Updater, UpdaterConfig

from pipeline.fetch.state import FetchState
from pipeline.io.atomic import fsync_dir, write_atomic
from pipeline.io.lock import hold_lock
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
from verify.bundle.trusted_keys import TrustedKey, load_trusted_keys
from verify.bundle.verifier import Verdict, verify_bundle
from verify.errors import VerifyError
from verify.formats.manifest import BundlePath, ModuleManifest

STATE_FILE = "fetch-state.json"
STATE_LOCK = ".lock"
TUF_METADATA_DIR = "metadata"  # python-tuf's own cache inside the state folder
_BUNDLE_PATH = TypeAdapter(BundlePath)

Say = Callable[[str], None]


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


def default_state_folder(url: str) -> Path:
    """A per-user cache folder keyed by the repository URL."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    key = hashlib.sha256(url.rstrip("/").encode("utf-8")).hexdigest()[:16]
    return Path(cache) / "tinyrustlm-release" / "fetch" / key


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
                raise ours(str(exc), where=what) from exc
        raise  # unreachable: the table ends with both roots


def _read_root(path: Path) -> bytes:
    try:
        data = path.read_bytes()
        Metadata.from_bytes(data)
    except OSError as exc:
        raise e.RootUnreadable(f"cannot read: {exc.strerror}", where=str(path)) from exc
    except DeserializationError as exc:
        raise e.RootUnreadable(f"not TUF root metadata: {exc}", where=str(path)) from exc
    return data


def _trusted_keys(path: Path) -> dict[str, TrustedKey]:
    try:
        return load_trusted_keys(path)
    except VerifyError as exc:
        raise e.TrustedKeysUnreadable(exc.message, where=exc.where) from exc


def _read_state(folder: Path, url: str) -> FetchState | None:
    path = folder / STATE_FILE
    if not path.is_file():
        return None
    try:
        state = FetchState.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        raise e.PublishError(
            f"unreadable fetch state: {exc.errors()[0]['msg']}",
            where=str(path),
            hint="delete the state folder to start over (rollback protection restarts too)",
        ) from exc
    return state if state.repository == url else None


def _verified_targets(metadata_dir: Path) -> Targets:
    """The top-level targets the Updater verified (it persists only verified metadata)."""
    path = metadata_dir / f"{Targets.type}.json"
    md = Metadata[Targets].from_bytes(path.read_bytes())
    assert isinstance(md.signed, Targets)
    return md.signed


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


def _download(updater: Updater, prefix: str, release: PublishedRelease, staging: Path) -> None:
    expected = {CUSTOM_VERSION: release.version, CUSTOM_BUILD_ID: release.build_id}
    for rel in release.files:
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
    manifest = ModuleManifest.model_validate_json((staging / MANIFEST).read_bytes())
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
    trusted: dict[str, TrustedKey],
    request: FetchRequest,
    now: int,
    derive: Deriver | None,
) -> Verdict:
    try:
        verdict = verify_bundle(
            staging, trusted, allow_dev_key=request.allow_dev_key, now=now, derive=derive
        )
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


def _install(staging: Path, final: Path, force: bool) -> None:
    if final.exists():
        if not force:
            raise e.OutputExists(
                "the output folder already holds this release",
                where=str(final),
                hint="remove it, or pass --force to replace it",
            )
        retired = staging.with_name(staging.name + ".replaced")
        final.rename(retired)
        staging.rename(final)
        shutil.rmtree(retired)
    else:
        staging.rename(final)
    fsync_dir(final.parent)


def fetch_release(
    request: FetchRequest,
    policy: RepositoryPolicy,
    *,
    now: int,
    derive: Deriver | None = None,
    say: Say | None = None,
) -> Fetched:
    tell = say or (lambda _line: None)
    url = request.url.rstrip("/")
    root_bytes = _read_root(request.root)
    trusted = _trusted_keys(request.trusted_keys)
    state_dir = request.state or default_state_folder(url)
    metadata_dir = state_dir / TUF_METADATA_DIR
    metadata_dir.mkdir(parents=True, exist_ok=True)
    with hold_lock(state_dir / STATE_LOCK, e.StateLocked, "fetch with this state folder"):
        seen = _read_state(state_dir, url)
        with tuf_errors_as_ours(f"{url}/metadata"):
            updater = Updater(
                metadata_dir=str(metadata_dir),
                metadata_base_url=f"{url}/metadata/",
                target_base_url=f"{url}/targets/",
                config=UpdaterConfig(app_user_agent="tinyrustlm-release"),
                bootstrap=root_bytes,
            )
            updater.refresh()
        releases = releases_of(policy.target_prefix, _verified_targets(metadata_dir).targets)
        release = _choose(releases, request, seen)
        tell(f"release {release.version}: {len(release.files)} files, build {release.build_id}")
        request.out.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".fetch-", dir=request.out))
        try:
            _download(updater, policy.target_prefix, release, staging)
            verdict = _verify(staging, release, trusted, request, now, derive)
            _seal(staging)
            final = request.out / bundle_name(release.version)
            _install(staging, final, request.force)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        if seen is None or version_key(release.version) > version_key(seen.newest_version):
            state = FetchState(
                repository=url, newest_version=release.version, newest_build_id=release.build_id
            )
            write_atomic(
                state_dir / STATE_FILE,
                (state.model_dump_json(by_alias=True, indent=2) + "\n").encode("utf-8"),
            )
    return Fetched(final, verdict, state_dir)
