"""What a maintainer co-signs with `repo sign-pending`: the pending release, read and judged.

The pending releases metadata is a file on the server: whoever holds the server can write it.
So a co-signer never signs it blind. Before a signature is added:

1. its shape: the next version of the releases role, holding every target the served
   releases metadata holds, unchanged, plus the files of exactly one new release (one
   version, one build id) newer than every published one;
2. its files: each new target's stored bytes (`targets/`) have the signed length and
   SHA-256, and together they are a bundle that passes the full `verify bundle` against the
   co-signer's trusted keys (as `publish` verified it), of that version and build id;
3. the co-signer's word: `--expect-digest` names the SHA-256 of that bundle's manifest.json
   (the signed manifest pins every file), the digest the co-signer took from the bundle they
   reviewed. Without it nothing is signed: the refusal shows the version, build id and
   digest to compare.

Each refusal has an id (`PendingRefused`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from tuf.api.metadata import Metadata, TargetFile, Targets

from pipeline.errors import TabledError
from pipeline.io.inputs import read_input
from pipeline.publish.repo import DiskRepository, stored_target_path
from pipeline.tuf.errors import Refused
from pipeline.tuf.releases import newest, releases_of, version_key
from verify.bundle.layout import MANIFEST, bundle_name
from verify.bundle.report_check import Deriver
from verify.bundle.trusted_keys import TrustedKey, TrustRoot, trust_root_from_keys
from verify.bundle.verifier import BundleVerifier, Requirements, Verdict
from verify.errors import VerifyError


class PendingRefused(TabledError, Refused):
    """The pending release is not one a maintainer may co-sign (ids in the table)."""

    table: ClassVar[Mapping[str, str]] = {
        "pending.shape": (
            "the pending file is not the next releases metadata adding one release: do not "
            "co-sign it; remove pending/releases.json and publish again"
        ),
        "pending.files": (
            "the stored files are not what the pending metadata signs: do not co-sign; publish "
            "the bundle again"
        ),
        "pending.unverified": (
            "the pending bundle fails `verify bundle`: do not co-sign; remove "
            "pending/releases.json and publish a bundle that verifies"
        ),
        "pending.unconfirmed": (
            "compare version, build id and digest with the bundle you reviewed, then rerun "
            "with --expect-digest DIGEST (sha256 of its manifest.json)"
        ),
        "pending.digest": ("the pending release is not the bundle you reviewed: do not co-sign it"),
    }


@dataclass(frozen=True)
class PendingTrust:
    """What a co-signer judges the pending release with."""

    trusted: TrustRoot | dict[str, TrustedKey]
    allow_dev_key: bool = False
    derive: Deriver | None = None


@dataclass(frozen=True)
class Reviewed:
    version: str
    build_id: str
    manifest_sha256: str
    files: int


def _served_targets(repo: DiskRepository, role: str) -> tuple[int, dict[str, TargetFile]]:
    served = repo.current.get(role)
    if served is None:
        return 0, {}
    signed: Targets = served.signed
    return signed.version, dict(signed.targets)


def _shape(repo: DiskRepository, role: str, md: Metadata[Any], where: str) -> dict[str, Any]:
    """The pending metadata's new targets, if it is the served metadata plus one release."""

    def refuse(message: str) -> PendingRefused:
        return PendingRefused(message, error_id="pending.shape", where=where)

    if not isinstance(md.signed, Targets) or md.signed.delegations is not None:
        raise refuse("the pending file is not releases metadata (targets, no delegations)")
    served_version, served = _served_targets(repo, role)
    if md.signed.version != served_version + 1:
        raise refuse(
            f"pending version {md.signed.version}, the served releases metadata is "
            f"v{served_version}: only v{served_version + 1} can follow it"
        )
    pending: dict[str, TargetFile] = dict(md.signed.targets)
    changed = sorted(p for p, t in served.items() if pending.get(p) != t)
    if changed:
        raise refuse(f"it changes or drops {len(changed)} served target(s), e.g. {changed[0]}")
    new = {p: t for p, t in pending.items() if p not in served}
    releases = releases_of(repo.policy.target_prefix, new)
    if len(releases) != 1 or sum(len(r.files) for r in releases.values()) != len(new):
        raise refuse(f"it adds {len(releases)} release(s) and {len(new)} file(s), not one release")
    (release,) = releases.values()
    previous = newest(repo.releases())
    if previous is not None and version_key(release.version) <= version_key(previous):
        raise refuse(f"version {release.version} is not newer than the published {previous}")
    return {"release": release, "targets": new}


def _verified(files: Mapping[str, bytes], name: str, trust: PendingTrust, now: int) -> Verdict:
    """The full `verify bundle` of `files`, written to a private folder first."""
    root = trust.trusted
    if not isinstance(root, TrustRoot):
        root = trust_root_from_keys(root)
    verifier = BundleVerifier(root, derive=trust.derive)
    try:
        return verifier.verify_files(files, name, Requirements(now, trust.allow_dev_key))
    except VerifyError as exc:
        raise PendingRefused(
            f"the pending bundle does not pass `verify bundle`: [{exc.error_id}] {exc.message}",
            error_id="pending.unverified",
            where=f"{name}/{exc.where}" if exc.where else name,
        ) from exc


def review_pending(
    repo: DiskRepository, role: str, md: Metadata[Any], trust: PendingTrust, where: str
) -> Reviewed:
    """Steps 1 and 2 of the module docstring: the pending release, judged; its identity."""
    shape = _shape(repo, role, md, where)
    release, targets = shape["release"], shape["targets"]
    head = f"{repo.policy.target_prefix}/{release.version}/"
    files: dict[str, bytes] = {}
    for path, target in sorted(targets.items()):
        sha256 = target.hashes.get("sha256", "")
        stored = stored_target_path(repo.targets_dir, path, sha256)
        if not stored.is_file() or stored.is_symlink() or stored.stat().st_size != target.length:
            raise PendingRefused(
                f"target {path}: no stored file of {target.length} bytes",
                error_id="pending.files",
                where=str(stored),
            )
        data = read_input(stored, "artifact", limit=target.length)  # a regular file, bounded
        if hashlib.sha256(data).hexdigest() != sha256:
            raise PendingRefused(
                f"target {path}: the stored bytes do not hash to the signed sha256",
                error_id="pending.files",
                where=str(stored),
            )
        files[path[len(head) :]] = data
    verdict = _verified(files, bundle_name(release.version), trust, int(repo.now.timestamp()))
    if (verdict.version, verdict.build_id) != (release.version, release.build_id):
        raise PendingRefused(
            f"the bundle is {verdict.version} (build {verdict.build_id}); the pending metadata "
            f"says {release.version} (build {release.build_id})",
            error_id="pending.unverified",
            where=where,
        )
    digest = hashlib.sha256(files[MANIFEST]).hexdigest()
    return Reviewed(release.version, release.build_id, digest, len(files))


def confirm(reviewed: Reviewed, expect_digest: str | None, where: str) -> None:
    """Step 3: the co-signer named this release's digest."""
    shown = (
        f"tinyrustlm {reviewed.version} (build {reviewed.build_id}), manifest.json sha256 "
        f"{reviewed.manifest_sha256}, {reviewed.files} files"
    )
    if expect_digest is None:
        raise PendingRefused(
            f"pending: {shown}; nothing signed without --expect-digest",
            error_id="pending.unconfirmed",
            where=where,
        )
    if expect_digest.strip().lower() != reviewed.manifest_sha256:
        raise PendingRefused(
            f"pending: {shown}; --expect-digest is {expect_digest}",
            error_id="pending.digest",
            where=where,
        )
