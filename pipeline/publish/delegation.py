"""TUF delegation of `<prefix>/*` to a `releases` role held by the maintainers (TAP 3 style
multi-signature): a release is served only once `threshold` distinct maintainers signed it.

    tinyrustlm-release repo delegate --repo DIR --keys KEYS --maintainer PUB.pem ... --threshold K
    tinyrustlm-release publish BUNDLE ... --maintainer-key alice.key.pem   # signs, waits
    tinyrustlm-release repo sign-pending --repo DIR --keys KEYS --maintainer-key bob.key.pem

`delegate` adds the delegation to targets metadata (signed by the targets key) with the
maintainers' Ed25519 public keys (their `keygen` .pub.pem files). `publish` writes the target
files and a new version of the releases metadata signed by one maintainer into
`REPO/pending/releases.json`, which no metadata points at: clients see nothing new. Each
`sign-pending` adds one maintainer's signature (the same key twice is refused); the one that
meets the threshold writes `N.releases.json`, snapshot and timestamp, and removes the pending
file. python-tuf's client walks the delegation and checks the threshold itself.
TUF path patterns match per path component, so `<prefix>/*` is spelled for each depth a
bundle path has (`<prefix>/<version>/<file>` ... four levels below the version).
"""

from __future__ import annotations

import copy
import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from securesystemslib.signer import CryptoSigner, SSlibKey
from tuf.api.metadata import DelegatedRole, Delegations, Metadata, Root, Targets
from tuf.api.serialization import DeserializationError
from tuf.api.serialization.json import JSONSerializer

from pipeline.documents.keys import load_private_key
from pipeline.io.atomic import write_atomic
from pipeline.io.inputs import read_input
from pipeline.publish import keys as k
from pipeline.publish.pending import PendingRefused, PendingTrust, Reviewed, confirm, review_pending
from pipeline.publish.repo import (
    DiskRepository,
    RepoSummary,
    metadata_name,
    now_utc,
    repository_lock,
    require_repository,
    summary,
)
from pipeline.tuf.errors import PublishError, Refused
from pipeline.tuf.policy import RepositoryPolicy

RELEASES_ROLE = "releases"
PENDING_DIR = "pending"
MAX_DEPTH = 4  # path components below <prefix>/<version>/


class DelegationError(PublishError):
    error_id = "publish.delegation"
    default_hint = (
        "set up the releases role with `repo delegate --maintainer PUB.pem ... --threshold K`, "
        "then co-sign pending releases with `repo sign-pending`"
    )


@dataclass(frozen=True)
class Pending:
    version: int
    signed_by: tuple[str, ...]
    threshold: int
    committed: bool
    release: Reviewed | None = None  # sign-pending: what was co-signed


class RotationUnauthorized(Refused):
    """`repo rotate releases` without a key that is not online."""

    error_id = "publish.rotation-unauthorized"
    default_hint = (
        "changing who signs releases needs the current maintainers (--current-maintainer-key, "
        "their threshold) or the offline root key (--root-keys DIR)"
    )


def release_patterns(prefix: str) -> list[str]:
    return [f"{prefix}/*/" + "/".join(["*"] * depth) for depth in range(1, MAX_DEPTH + 1)]


def _public_key(path: Path) -> SSlibKey:
    data = read_input(path, "public-key")  # never a FIFO or /dev/zero, never unbounded
    try:
        public = load_pem_public_key(data)
    except ValueError as exc:
        raise DelegationError(f"not a PEM public key: {exc}", where=str(path)) from exc
    if not isinstance(public, Ed25519PublicKey):
        raise DelegationError("a maintainer key must be Ed25519", where=str(path))
    return SSlibKey.from_crypto(public, scheme="ed25519")


def _maintainer_keys(maintainers: list[Path], threshold: int) -> list[SSlibKey]:
    """The maintainers' public keys, distinct, and a threshold they can meet."""
    keys = [_public_key(p) for p in maintainers]
    if len({key.keyid for key in keys}) != len(keys):
        raise DelegationError("a maintainer key is listed twice", where="--maintainer")
    if not 1 <= threshold <= len(keys):
        raise DelegationError(
            f"threshold {threshold} of {len(keys)} maintainer key(s) can never be met",
            where="--threshold",
        )
    return keys


def delegate_releases(
    repo_path: Path,
    folders: k.KeyFolders,
    policy: RepositoryPolicy,
    maintainers: list[Path],
    threshold: int,
    now: datetime | None = None,
) -> RepoSummary:
    keys = _maintainer_keys(maintainers, threshold)
    require_repository(repo_path)
    with repository_lock(repo_path):
        repo = DiskRepository.load(repo_path, folders, policy, now or now_utc())
        with repo.edit_targets() as targets:
            if targets.delegations is not None:
                raise DelegationError(
                    "targets already delegates", where=str(repo_path), hint="rotate it instead"
                )
            role = DelegatedRole(
                RELEASES_ROLE, [], threshold, True, release_patterns(policy.target_prefix)
            )
            targets.delegations = Delegations(keys={}, roles={RELEASES_ROLE: role})
            for key in keys:
                targets.add_key(key, RELEASES_ROLE)
        repo.do_snapshot()
        repo.do_timestamp()
    return summary(repo)


def delegation(repo: DiskRepository) -> DelegatedRole | None:
    targets: Targets = repo.current[Targets.type].signed
    if targets.delegations is None or targets.delegations.roles is None:
        return None
    return targets.delegations.roles.get(RELEASES_ROLE)


def _pending_path(repo: DiskRepository) -> Path:
    return repo.path / PENDING_DIR / f"{RELEASES_ROLE}.json"


def _maintainer(repo: DiskRepository, key_path: Path) -> CryptoSigner:
    private = load_private_key(key_path)
    public = SSlibKey.from_crypto(private.public_key(), scheme="ed25519")
    role = delegation(repo)
    assert role is not None
    if public.keyid not in role.keyids:
        raise DelegationError(
            f"key {public.keyid[:16]} is not one of the releases role's maintainer keys",
            where=str(key_path),
        )
    return CryptoSigner(private, public)


def _signed_by(repo: DiskRepository, md: Metadata[Any]) -> tuple[set[str], bool]:
    targets: Targets = repo.current[Targets.type].signed
    result = targets.get_verification_result(RELEASES_ROLE, md.signed_bytes, md.signatures)
    return set(result.signed), result.verified


def _serve(repo: DiskRepository, md: Metadata[Any]) -> None:
    """Write releases metadata that meets its threshold, then snapshot and timestamp."""
    path = repo.metadata_dir / metadata_name(RELEASES_ROLE, md.signed.version)
    write_atomic(path, md.to_bytes(JSONSerializer(compact=False)))
    repo.written.append(path)
    repo.current[RELEASES_ROLE] = md
    repo.do_snapshot()
    repo.do_timestamp()


def _commit_or_wait(repo: DiskRepository, md: Metadata[Any]) -> Pending:
    signed, verified = _signed_by(repo, md)
    role = delegation(repo)
    assert role is not None
    pending = _pending_path(repo)
    if verified:
        _serve(repo, md)
        pending.unlink(missing_ok=True)
    else:
        write_atomic(pending, md.to_bytes(JSONSerializer(compact=False)))
    return Pending(md.signed.version, tuple(sorted(signed)), role.threshold, verified)


def stage_release(
    repo: DiskRepository, targets: dict[str, Any], maintainer_key: Path | None
) -> Pending:
    """Publish step for a delegated repository: the new releases metadata, signed by one
    maintainer, committed if that meets the threshold, else left pending."""
    if maintainer_key is None:
        raise DelegationError(
            "this repository delegates releases to its maintainers: sign with your key",
            where="--maintainer-key",
        )
    if _pending_path(repo).exists():
        raise DelegationError(
            "a release is waiting for co-signatures",
            where=str(_pending_path(repo)),
            hint="`repo sign-pending` it first",
        )
    signer = _maintainer(repo, maintainer_key)
    md = repo.open(RELEASES_ROLE)
    md.signed.targets.update(targets)
    md.signed.version += 1
    md.signed.expires = repo.now + repo.policy.expiry(Targets.type)
    md.signatures.clear()
    md.sign(signer, append=True)
    return _commit_or_wait(repo, md)


def sign_pending(
    repo_path: Path,
    folders: k.KeyFolders,
    policy: RepositoryPolicy,
    maintainer_key: Path,
    now: datetime | None = None,
    *,
    trust: PendingTrust,
    expect_digest: str | None,
) -> Pending:
    """Co-sign the pending release, never blind (pipeline.publish.pending): only the next
    releases metadata adding one release whose stored files pass `verify bundle` against
    `trust`, and whose manifest digest the co-signer names in `expect_digest`."""
    require_repository(repo_path)
    with repository_lock(repo_path):
        repo = DiskRepository.load(repo_path, folders, policy, now or now_utc())
        if delegation(repo) is None:
            raise DelegationError(
                "this repository does not delegate releases", where=str(repo_path)
            )
        path = _pending_path(repo)
        if not os.path.lexists(path):
            raise DelegationError("no release is waiting for co-signatures", where=str(path))
        data = read_input(path, "tuf-metadata")  # a regular file, bounded
        try:
            md: Metadata[Any] = Metadata.from_bytes(data)
        except DeserializationError as exc:
            raise PendingRefused(
                f"not TUF metadata: {exc}", error_id="pending.shape", where=str(path)
            ) from exc
        signer = _maintainer(repo, maintainer_key)
        signed, _ = _signed_by(repo, md)
        if not signed:
            raise PendingRefused(
                "the pending release carries no maintainer's signature: `publish` signs it",
                error_id="pending.shape",
                where=str(path),
            )
        if signer.public_key.keyid in md.signatures:
            raise DelegationError(
                f"key {signer.public_key.keyid[:16]} has already signed the pending release",
                where=str(path),
                hint="another maintainer co-signs with their own key",
            )
        if len(signed) != len(md.signatures):
            raise DelegationError("the pending release carries a bad signature", where=str(path))
        reviewed = review_pending(repo, RELEASES_ROLE, md, trust, str(path))
        confirm(reviewed, expect_digest, str(path))
        md.sign(signer, append=True)
        return dataclasses.replace(_commit_or_wait(repo, md), release=reviewed)


def _delegate_to(targets: Targets, keys: list[SSlibKey], threshold: int) -> None:
    """The releases role now held by `keys` with `threshold` (the old keys removed)."""
    assert targets.delegations is not None and targets.delegations.roles is not None
    role = targets.delegations.roles[RELEASES_ROLE]
    for keyid in list(role.keyids):
        targets.revoke_key(keyid, RELEASES_ROLE)
    for key in keys:
        targets.add_key(key, RELEASES_ROLE)
    role.threshold = threshold


def _authorize_rotation(
    repo: DiskRepository, folders: k.KeyFolders, current_keys: list[Path]
) -> str:
    """Who allows the releases role to change hands: a threshold of its current maintainers
    (their private keys), or the offline root key given apart from the online ones
    (`--root-keys`). The repository's key folder alone (targets, snapshot, timestamp: the
    online keys) never does — PEP 480 keeps maintainer delegations from online keys."""
    role = delegation(repo)
    assert role is not None
    if current_keys:
        keyids = set()
        for path in current_keys:
            private = load_private_key(path)
            keyid = SSlibKey.from_crypto(private.public_key(), scheme="ed25519").keyid
            if keyid not in role.keyids:
                raise RotationUnauthorized(
                    f"key {keyid[:16]} is not a current maintainer of the releases role",
                    where=str(path),
                )
            keyids.add(keyid)
        if len(keyids) < role.threshold:
            raise RotationUnauthorized(
                f"{len(keyids)} of the {role.threshold} current maintainers needed",
                where="--current-maintainer-key",
            )
        return f"{len(keyids)} current maintainer(s)"
    if folders.root_override is not None:
        root: Root = repo.current[Root.type].signed
        for keyid in root.roles[Root.type].keyids:  # each must load: fail before writing
            k.load_signer(folders, Root.type, root.keys[keyid])
        return "the offline root key"
    raise RotationUnauthorized(
        "the online keys alone cannot change who signs releases",
        where="repo rotate releases",
    )


def rotate_releases(
    repo_path: Path,
    folders: k.KeyFolders,
    policy: RepositoryPolicy,
    maintainers: list[Path],
    threshold: int,
    signing_keys: list[Path],
    now: datetime | None = None,
    *,
    current_keys: Sequence[Path] = (),
) -> RepoSummary:
    """New maintainer keys for the releases role (a key ceremony: `threshold` of the NEW
    maintainers sign at once), allowed by a key that is not online: `current_keys`, a
    threshold of the current maintainers, or the offline root key of `folders.root_override`
    (`_authorize_rotation`). The releases metadata is re-signed by the new keys and the new
    delegation checked against it before anything is written; then targets (new delegation),
    releases, snapshot and timestamp are written in that order, so clients switch in one step.
    """
    keys = _maintainer_keys(maintainers, threshold)
    require_repository(repo_path)
    with repository_lock(repo_path):
        repo = DiskRepository.load(repo_path, folders, policy, now or now_utc())
        if delegation(repo) is None:
            raise DelegationError("this repository does not delegate releases", where="ROLE")
        _authorize_rotation(repo, folders, list(current_keys))
        if _pending_path(repo).exists():
            raise DelegationError(
                "a release is waiting for co-signatures: sign it before rotating",
                where=str(_pending_path(repo)),
            )
        md = repo.open(RELEASES_ROLE)
        md.signed.version += 1
        md.signed.expires = repo.now + repo.policy.expiry(Targets.type)
        md.signatures.clear()
        for path in signing_keys:
            private = load_private_key(path)
            public = SSlibKey.from_crypto(private.public_key(), scheme="ed25519")
            md.sign(CryptoSigner(private, public), append=True)
        trial: Targets = copy.deepcopy(repo.current[Targets.type].signed)
        _delegate_to(trial, keys, threshold)
        result = trial.get_verification_result(RELEASES_ROLE, md.signed_bytes, md.signatures)
        if not result.verified:
            raise DelegationError(
                f"{len(result.signed)} of {threshold} new maintainer signatures: the releases "
                "role would not verify under its new keys",
                where="--maintainer-key",
            )
        with repo.edit_targets() as targets:
            _delegate_to(targets, keys, threshold)
        _serve(repo, md)
    return summary(repo)
