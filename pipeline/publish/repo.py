"""The TUF repository on disk, maintained with python-tuf's Metadata API and `Repository`.

    REPO/metadata/<N>.root.json        every root version (clients walk 1 -> N)
    REPO/metadata/<N>.targets.json     consistent snapshots: versioned names, never rewritten
    REPO/metadata/<N>.snapshot.json
    REPO/metadata/timestamp.json       the only file replaced in place
    REPO/targets/<prefix>/<version>/<dir>/<sha256>.<name>   each bundle file, hash-prefixed

Any static web server can serve REPO. Every file is written atomically, and new versioned
files are written before the one file that points at them: targets, then snapshot, then
timestamp. So a publish killed at any point leaves timestamp.json naming the previous,
complete state (its new files are unreferenced and the next publish overwrites them), and
clients keep being served that state. Metadata versions only ever increase (python-tuf's
`Repository` bumps them); `.lock` stops two writers at once.
"""

from __future__ import annotations

import copy
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from securesystemslib.signer import Signer
from tuf.api.metadata import (
    Metadata,
    MetaFile,
    Root,
    Snapshot,
    Targets,
    Timestamp,
)
from tuf.api.serialization import DeserializationError
from tuf.api.serialization.json import JSONSerializer
from tuf.repository import Repository

from pipeline.io.atomic import fsync_dir, write_atomic
from pipeline.io.inputs import InputRejected, read_input
from pipeline.io.lock import hold_lock
from pipeline.publish import keys as k
from pipeline.tuf.errors import (
    KeyMissing,
    RepositoryCorrupt,
    RepositoryExists,
    RepositoryLocked,
    RepositoryMissing,
    RepositoryNotFolder,
)
from pipeline.tuf.policy import RepositoryPolicy
from pipeline.tuf.releases import PublishedRelease, releases_of
from verify.formats.manifest import KeyClass

METADATA_DIR = "metadata"
TARGETS_DIR = "targets"
LOCK_FILE = ".lock"
_SERIALIZER = JSONSerializer(compact=False)
_NEW: dict[str, Any] = {
    Root.type: Root,
    Targets.type: Targets,
    Snapshot.type: Snapshot,
    Timestamp.type: Timestamp,
}


def metadata_name(role: str, version: int) -> str:
    """File name of a role's metadata (consistent snapshots: all but timestamp versioned)."""
    return f"{role}.json" if role == Timestamp.type else f"{version}.{role}.json"


def stored_target_path(targets_dir: Path, path: str, sha256: str) -> Path:
    """Where a target's bytes live: its file name prefixed with its hash (as clients ask)."""
    folder, _, name = path.rpartition("/")
    return targets_dir / folder / f"{sha256}.{name}"


class DiskRepository(Repository):
    """The committed state of REPO plus what this process wrote; signs with files in KEYS."""

    def __init__(
        self,
        root_path: Path,
        folders: k.KeyFolders,
        policy: RepositoryPolicy,
        now: datetime,
        metadata_dir: Path | None = None,
    ) -> None:
        self.path = root_path
        self.metadata_dir = metadata_dir or root_path / METADATA_DIR
        self.targets_dir = root_path / TARGETS_DIR
        self.folders = folders
        self.policy = policy
        self.now = now.replace(microsecond=0)
        self.current: dict[str, Metadata[Any]] = {}
        self.generated: dict[str, Signer] = {}  # keys made by this process, by keyid
        self.written: list[Path] = []

    # -- loading the committed state ------------------------------------------------------
    @classmethod
    def load(
        cls, root_path: Path, folders: k.KeyFolders, policy: RepositoryPolicy, now: datetime
    ) -> DiskRepository:
        """Read root 1..N, then timestamp -> snapshot -> targets; each must verify."""
        require_repository(root_path)
        repo = cls(root_path, folders, policy, now)
        previous: Root | None = None
        version = 1
        while (repo.metadata_dir / metadata_name(Root.type, version)).is_file():
            md = repo._read(Root.type, version)
            repo._check(Root.type, md, previous)
            repo.current[Root.type] = md
            previous = md.signed
            version += 1
        timestamp = repo._read(Timestamp.type, 0)
        repo._check(Timestamp.type, timestamp)
        repo.current[Timestamp.type] = timestamp
        snapshot = repo._read(Snapshot.type, timestamp.signed.snapshot_meta.version)
        repo._check(Snapshot.type, snapshot)
        repo.current[Snapshot.type] = snapshot
        targets_meta = snapshot.signed.meta.get(f"{Targets.type}.json")
        if targets_meta is None:
            raise RepositoryCorrupt("snapshot does not list targets.json", where=str(root_path))
        targets = repo._read(Targets.type, targets_meta.version)
        repo._check(Targets.type, targets)
        repo.current[Targets.type] = targets
        for name, meta in snapshot.signed.meta.items():  # delegated roles (`releases`)
            role = name.removesuffix(".json")
            if role != Targets.type:
                delegated = repo._read(role, meta.version)
                repo._check(role, delegated)
                repo.current[role] = delegated
        return repo

    def _read(self, role: str, version: int) -> Metadata[Any]:
        path = self.metadata_dir / metadata_name(role, version)
        try:
            md: Metadata[Any] = Metadata.from_bytes(read_input(path, "tuf-metadata"))
        except InputRejected as exc:  # missing, not a regular file, too large
            raise RepositoryCorrupt(f"{exc.message} [{exc.error_id}]", where=str(path)) from exc
        except DeserializationError as exc:
            raise RepositoryCorrupt(f"not TUF metadata: {exc}", where=str(path)) from exc
        expected_type = role if role in _NEW else Targets.type
        if md.signed.type != expected_type or (
            role != Timestamp.type and md.signed.version != version
        ):
            raise RepositoryCorrupt(
                f"holds {md.signed.type} v{md.signed.version}, expected {role} v{version}",
                where=str(path),
            )
        return md

    def _check(self, role: str, md: Metadata[Any], previous: Root | None = None) -> None:
        """The metadata verifies against the current root (a root: against the previous too)."""
        if role == Root.type:
            ok = bool(
                md.signed.get_root_verification_result(previous, md.signed_bytes, md.signatures)
            )
        elif role not in _NEW:  # a delegated role: by its delegator, targets
            delegator: Targets = self.current[Targets.type].signed
            ok = bool(delegator.get_verification_result(role, md.signed_bytes, md.signatures))
        else:
            ok = bool(self.root().get_verification_result(role, md.signed_bytes, md.signatures))
        if not ok:
            raise RepositoryCorrupt(
                f"{role} v{md.signed.version} is not signed by its threshold of keys",
                where=str(self.metadata_dir / metadata_name(role, md.signed.version)),
            )

    # -- python-tuf's Repository interface ------------------------------------------------
    def open(self, role: str) -> Metadata[Any]:
        if role not in self.current:
            md: Metadata[Any] = Metadata(_NEW.get(role, Targets)())  # a delegated role: Targets
            md.signed.version = 0  # close() bumps it to 1
            return md
        return copy.deepcopy(self.current[role])

    def close(self, role: str, md: Metadata[Any]) -> None:
        previous_root = self.current.get(Root.type)
        md.signed.version += 1
        md.signed.expires = self.now + self.policy.expiry(role)
        md.signatures.clear()
        for signer in self._signers(role, md):
            md.sign(signer, append=True)
        previous = previous_root.signed if previous_root and role == Root.type else None
        try:  # only metadata that verifies is ever written
            self._check(role, md, previous)
        except RepositoryCorrupt as exc:
            raise KeyMissing(
                f"the keys found cannot sign {role} v{md.signed.version}: {exc.message}",
                where=str(self.folders.folder(role)),
            ) from exc
        self.current[role] = md  # a new root verifies the other roles from now on
        path = self.metadata_dir / metadata_name(role, md.signed.version)
        write_atomic(path, md.to_bytes(_SERIALIZER))
        self.written.append(path)

    # Snapshot and timestamp name versions only (as python-tuf's own example repository does):
    # with consistent snapshots a version names exactly one file, and clients check it.
    @property
    def targets_infos(self) -> dict[str, MetaFile]:
        """targets.json and every delegated role this repository holds (`releases`)."""
        return {
            f"{role}.json": MetaFile(md.signed.version)
            for role, md in self.current.items()
            if isinstance(md.signed, Targets)
        }

    @property
    def snapshot_info(self) -> MetaFile:
        return MetaFile(self.current[Snapshot.type].signed.version)

    # -- signing ----------------------------------------------------------------------------
    def _signers(self, role: str, md: Metadata[Any]) -> list[Signer]:
        """The role's keys in the root being signed; a new root also by the previous root's."""
        roots: list[Root] = [md.signed] if role == Root.type else []
        if Root.type in self.current:
            roots.append(self.current[Root.type].signed)
        wanted: dict[str, Any] = {}
        for root in roots:
            for keyid in root.roles[role].keyids:
                wanted[keyid] = root.keys[keyid]
        signers = []
        for keyid, key in sorted(wanted.items()):
            signer = self.generated.get(keyid)
            signers.append(signer or k.load_signer(self.folders, role, key))
        return signers

    def new_key(self, role: str, key_class: KeyClass) -> Signer:
        signer = k.generate_signer(self.folders.folder(role), key_class)
        self.generated[signer.public_key.keyid] = signer
        return signer

    # -- queries ----------------------------------------------------------------------------
    def releases(self) -> dict[str, PublishedRelease]:
        """Every published release: in targets, and in a delegated role (`releases`)."""
        found: dict[str, Any] = {}
        for md in self.current.values():
            if isinstance(md.signed, Targets):
                found.update(md.signed.targets)
        return releases_of(self.policy.target_prefix, found)

    def versions(self) -> dict[str, int]:
        return {role: md.signed.version for role, md in sorted(self.current.items())}

    def expires(self) -> dict[str, datetime]:
        return {role: md.signed.expires for role, md in sorted(self.current.items())}


def require_repository(repo_path: Path) -> None:
    """Fail before any other work (or any file is created) when REPO is not a repository."""
    if not (repo_path / METADATA_DIR / metadata_name(Root.type, 1)).is_file():
        raise RepositoryMissing(
            "not a TUF repository (no metadata/1.root.json)",
            where=str(repo_path),
            hint="create one with `tinyrustlm-release repo init --repo DIR --keys DIR`",
        )


@contextmanager
def repository_lock(repo_path: Path) -> Iterator[None]:
    with hold_lock(repo_path / LOCK_FILE, RepositoryLocked, "repository writer"):
        yield


def now_utc() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class RepoSummary:
    path: Path
    versions: dict[str, int]
    expires: dict[str, datetime]
    key_class: str
    written: tuple[Path, ...]


def summary(repo: DiskRepository) -> RepoSummary:
    root: Root = repo.current[Root.type].signed
    classes = sorted({k.key_class_of(key) for key in root.keys.values()})
    return RepoSummary(
        repo.path, repo.versions(), repo.expires(), ",".join(classes), tuple(repo.written)
    )


def _file_above(path: Path) -> bool:
    """Whether some existing ancestor of `path` is not a folder (mkdir would fail)."""
    for parent in path.parents:
        if os.path.lexists(parent):
            return not parent.is_dir()
    return False


def init_repository(
    repo_path: Path,
    folders: k.KeyFolders,
    policy: RepositoryPolicy,
    key_class: KeyClass,
    now: datetime | None = None,
) -> RepoSummary:
    """New keys (one per role) and version 1 of every role; metadata/ appears in one rename."""
    final = repo_path / METADATA_DIR
    for folder in (repo_path, *(folders.folder(role) for role in _NEW)):
        if (not folder.is_dir() and os.path.lexists(folder)) or _file_above(folder):
            raise RepositoryNotFolder("is a file (or under one), not a folder", where=str(folder))
    if final.exists():
        raise RepositoryExists(
            "a TUF repository already exists here", where=str(final), hint="publish into it"
        )
    repo_path.mkdir(parents=True, exist_ok=True)
    with repository_lock(repo_path):
        staging = Path(tempfile.mkdtemp(prefix=".metadata-init-", dir=repo_path))
        try:
            repo = DiskRepository(repo_path, folders, policy, now or now_utc(), staging)
            signers = {role: repo.new_key(role, key_class) for role in _NEW}
            with repo.edit_root() as root:
                for role, signer in signers.items():
                    root.add_key(signer.public_key, role)
            with repo.edit_targets():
                pass
            repo.do_snapshot()
            repo.do_timestamp()
            (repo_path / TARGETS_DIR).mkdir(exist_ok=True)
            staging.chmod(0o755)
            staging.rename(final)
            fsync_dir(repo_path)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        repo.metadata_dir = final
        repo.written = [final / p.name for p in repo.written]
    return summary(repo)


def refresh_timestamp(
    repo_path: Path,
    folders: k.KeyFolders,
    policy: RepositoryPolicy,
    now: datetime | None = None,
) -> RepoSummary:
    """Re-sign snapshot and timestamp with fresh expiry; the published content is unchanged."""
    require_repository(repo_path)
    with repository_lock(repo_path):
        repo = DiskRepository.load(repo_path, folders, policy, now or now_utc())
        repo.do_snapshot(force=True)
        repo.do_timestamp(force=True)
    return summary(repo)


def rotate_root(
    repo_path: Path,
    folders: k.KeyFolders,
    policy: RepositoryPolicy,
    now: datetime | None = None,
) -> RepoSummary:
    """Root N+1 names a new root key and is signed by the old and the new one.

    Clients holding root N verify N+1 with N's keys and then with N+1's own, and follow it.
    The new private key is written before the root that names it; the old one is retired
    (moved to `retired/`) only after the new root is on disk.
    """
    require_repository(repo_path)
    with repository_lock(repo_path):
        repo = DiskRepository.load(repo_path, folders, policy, now or now_utc())
        root_md: Metadata[Root] = repo.current[Root.type]
        old_keyids = list(root_md.signed.roles[Root.type].keyids)
        label = k.key_class_of(root_md.signed.keys[old_keyids[0]])
        key_class: KeyClass = "release" if label == "release" else "development"
        # The old key signs too: fail before writing anything if it is not at hand.
        for keyid in old_keyids:
            k.load_signer(folders, Root.type, root_md.signed.keys[keyid])
        signer = repo.new_key(Root.type, key_class)
        with repo.edit_root() as root:
            root.add_key(signer.public_key, Root.type)
            for keyid in old_keyids:
                root.revoke_key(keyid, Root.type)
        for keyid in old_keyids:
            k.retire(folders.folder(Root.type), keyid)
    return summary(repo)


def write_targets(repo: DiskRepository, files: Mapping[str, tuple[str, bytes]]) -> None:
    """Store target bytes (target path -> (sha256, data)) before any metadata names them."""
    for path, (sha256, data) in sorted(files.items()):
        dest = stored_target_path(repo.targets_dir, path, sha256)
        if dest.is_file() and dest.read_bytes() == data:
            continue  # content-addressed: already there from an interrupted publish
        write_atomic(dest, data)
        repo.written.append(dest)


# role -> the roles whose metadata must be signed again, in order, once its key changed
RESIGN_AFTER_ROTATION: dict[str, tuple[str, ...]] = {
    Targets.type: (Targets.type, Snapshot.type, Timestamp.type),
    Snapshot.type: (Snapshot.type, Timestamp.type),
    Timestamp.type: (Timestamp.type,),
}
ROTATABLE_ROLES = (Root.type, *RESIGN_AFTER_ROTATION)


def rotate_role(
    repo_path: Path,
    folders: k.KeyFolders,
    policy: RepositoryPolicy,
    role: str,
    now: datetime | None = None,
) -> RepoSummary:
    """Replace `role`'s key (TUF specification 6.1 "key management and migration").

    root: `rotate_root`. Any other role: root N+1 (signed by the root key) names a new key for
    the role instead of the old one; then the role, and every role that points at it, is
    signed again with a new version (targets -> snapshot -> timestamp). The new private key is
    written before the root that names it; the old one is retired after.

    Fast-forward recovery (specification 5.3.11): a client that trusted a timestamp (or
    snapshot) with a huge version made with a stolen key refuses the genuine, lower versions.
    Once the root names a new key, the metadata it cached no longer verifies under the new
    root, so python-tuf's `Updater` discards it (it loads local timestamp/snapshot against
    the newest root and falls back to the remote on failure) and accepts the genuine
    repository again. A fast-forwarded snapshot needs both `rotate snapshot` and
    `rotate timestamp` (the cached timestamp names the snapshot version).
    """
    if role == Root.type:
        return rotate_root(repo_path, folders, policy, now)
    if role not in RESIGN_AFTER_ROTATION:
        raise KeyMissing(
            f"no such role {role!r}", where="ROLE", hint=f"one of {', '.join(ROTATABLE_ROLES)}"
        )
    require_repository(repo_path)
    with repository_lock(repo_path):
        repo = DiskRepository.load(repo_path, folders, policy, now or now_utc())
        root_md: Metadata[Root] = repo.current[Root.type]
        old_keyids = list(root_md.signed.roles[role].keyids)
        label = k.key_class_of(root_md.signed.keys[old_keyids[0]])
        key_class: KeyClass = "release" if label == "release" else "development"
        for keyid in root_md.signed.roles[Root.type].keyids:  # root signs: fail before writing
            k.load_signer(folders, Root.type, root_md.signed.keys[keyid])
        signer = repo.new_key(role, key_class)
        with repo.edit_root() as root:
            root.add_key(signer.public_key, role)
            for keyid in old_keyids:
                root.revoke_key(keyid, role)
        for resigned in RESIGN_AFTER_ROTATION[role]:
            if resigned == Targets.type:
                with repo.edit_targets():
                    pass
            elif resigned == Snapshot.type:
                repo.do_snapshot(force=True)
            else:
                repo.do_timestamp(force=True)
        for keyid in old_keyids:
            k.retire(folders.folder(role), keyid)
    return summary(repo)
