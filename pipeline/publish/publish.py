"""Add one verified release bundle to the TUF repository.

1. Read the bundle folder into memory and write that copy to a private folder.
2. Run the full `verify bundle` on the copy: what is published is exactly what verified.
3. Under the repository lock, load the committed state (every role must verify) and refuse
   a version lower than or equal to the newest published one.
4. Write every file as a target (hash-prefixed name), then targets, snapshot and timestamp
   metadata, in that order (see repo.py for why a kill at any point is harmless).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pipeline.publish import keys as k
from pipeline.publish.delegation import Pending, delegation, stage_release
from pipeline.publish.repo import (
    DiskRepository,
    RepoSummary,
    now_utc,
    repository_lock,
    require_repository,
    summary,
    write_targets,
)
from pipeline.tuf.errors import BundleNotVerified, PublishError, VersionNotNewer
from pipeline.tuf.policy import RepositoryPolicy
from pipeline.tuf.releases import newest, release_target, target_path, version_key
from verify.bundle.opened import read_bundle_file
from verify.bundle.report_check import Deriver
from verify.bundle.trusted_keys import TrustedKey, TrustRoot, trust_root_from_keys
from verify.bundle.verifier import BundleVerifier, Requirements, Verdict
from verify.errors import VerifyError


@dataclass(frozen=True)
class Published:
    version: str
    build_id: str
    files: int
    previous: str | None
    repo: RepoSummary
    pending: Pending | None = None  # delegated releases: signatures so far, committed or not


def read_bundle_folder(bundle: Path) -> dict[str, bytes]:
    if not bundle.is_dir():
        raise PublishError(
            "publish takes a bundle folder (dist/tinyrustlm-<version>/)",
            where=str(bundle),
            hint="the tarball is published as one of the folder's files",
        )
    files: dict[str, bytes] = {}
    for path in sorted(bundle.rglob("*")):
        if path.is_file() and not path.is_symlink():
            rel = path.relative_to(bundle).as_posix()
            files[rel] = read_bundle_file(path, rel)  # never a FIFO, never past its limit
    return files  # symlinks and other oddities are left to the verifier to refuse


def verify_copy(
    files: dict[str, bytes], name: str, verifier: BundleVerifier, requires: Requirements
) -> Verdict:
    try:
        return verifier.verify_files(files, name, requires)
    except VerifyError as exc:
        error_id = getattr(exc, "error_id", "verify.error")
        raise BundleNotVerified(
            f"the bundle does not pass `verify bundle`: [{error_id}] {exc.message}",
            where=f"{name}/{exc.where}" if exc.where else name,
            hint="publish only what `tinyrustlm-verify bundle` accepts",
        ) from exc


def publish_bundle(
    bundle: Path,
    repo_path: Path,
    folders: k.KeyFolders,
    trusted: TrustRoot | dict[str, TrustedKey],
    policy: RepositoryPolicy,
    *,
    allow_dev_key: bool = False,
    now: datetime | None = None,
    derive: Deriver | None = None,
    maintainer_key: Path | None = None,
) -> Published:
    when = now or now_utc()
    require_repository(repo_path)
    files = read_bundle_folder(bundle)
    root = trusted if isinstance(trusted, TrustRoot) else trust_root_from_keys(trusted)
    requires = Requirements(now=int(when.timestamp()), allow_dev_key=allow_dev_key)
    verdict = verify_copy(files, bundle.name, BundleVerifier(root, derive), requires)
    version_key(verdict.version, where=f"{bundle}/manifest.json: version")
    with repository_lock(repo_path):
        repo = DiskRepository.load(repo_path, folders, policy, when)
        previous = newest(repo.releases())
        if previous is not None and version_key(verdict.version) <= version_key(previous):
            raise VersionNotNewer(
                f"version {verdict.version} is not newer than the published {previous}",
                where=str(repo_path),
                hint="versions only ever increase: release a higher [project].version",
            )
        prefix = policy.target_prefix
        stored = {
            target_path(prefix, verdict.version, rel): (hashlib.sha256(data).hexdigest(), data)
            for rel, data in files.items()
        }
        write_targets(repo, stored)
        new = {}
        for rel, data in files.items():
            target = release_target(prefix, verdict.version, verdict.build_id, rel, data)
            new[target.path] = target
        pending = None
        if delegation(repo) is not None:  # the maintainers' releases role signs it
            pending = stage_release(repo, new, maintainer_key)
        else:
            with repo.edit_targets() as targets:
                targets.targets.update(new)
            repo.do_snapshot()
            repo.do_timestamp()
    return Published(
        verdict.version, verdict.build_id, len(files), previous, summary(repo), pending
    )
