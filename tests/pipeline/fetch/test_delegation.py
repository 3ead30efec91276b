"""Targets delegates the releases to the maintainers (issue 23, TAP 3 style multi-signature):
`publish` by one maintainer leaves the release pending and unserved; `repo sign-pending` by a
second meets the threshold and the real python-tuf client (`fetch`) sees it; the same key
twice is refused; a releases role signed below its threshold is refused by the client."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from tuf.api.metadata import Metadata
from tuf.api.serialization.json import JSONSerializer

from pipeline.cli import main as release_main
from pipeline.documents.keys import KeyFiles, generate_key_files
from pipeline.publish.delegation import (
    DelegationError,
    Pending,
    RotationUnauthorized,
    delegate_releases,
    rotate_releases,
    sign_pending,
)
from pipeline.publish.keys import KeyFolders
from pipeline.publish.pending import PendingRefused, PendingTrust
from pipeline.publish.publish import Published, publish_bundle
from pipeline.publish.repo import DiskRepository, now_utc
from pipeline.tuf import errors as e
from tests.harness.release import fake_report
from tests.harness.tuf import NEW, OLD, World
from verify.bundle import verifier
from verify.bundle.trusted_keys import load_trusted_keys


def _maintainers(world: World, tmp: Path, threshold: int = 2) -> list[KeyFiles]:
    keys = [generate_key_files(tmp / "maintainers", n, "release") for n in ("ann", "ben", "cy")]
    delegate_releases(world.repo, world.keys, world.policy, [m.public_pem for m in keys], threshold)
    return keys


def _digest(world: World, version: str) -> str:
    """What the co-signer takes from the bundle they reviewed: its manifest's sha256."""
    return hashlib.sha256((world.bundles.paths[version] / "manifest.json").read_bytes()).hexdigest()


def _trust(world: World) -> PendingTrust:
    return PendingTrust(world.bundles.trusted(), derive=fake_report)


def _cosign(world: World, key: KeyFiles, version: str, **overrides: Any) -> Pending:
    options: dict[str, Any] = {"trust": _trust(world), "expect_digest": _digest(world, version)}
    options.update(overrides)
    return sign_pending(world.repo, world.keys, world.policy, key.private_pem, **options)


def _publish(world: World, version: str, key: KeyFiles) -> Published:
    return publish_bundle(
        world.bundles.paths[version], world.repo, world.keys, world.bundles.trusted(),
        world.policy, derive=fake_report, maintainer_key=key.private_pem,
    )  # fmt: skip


def test_a_release_is_served_only_once_the_maintainers_threshold_signed(
    world: World, tmp_path: Path
) -> None:
    world.publish(OLD)  # before the delegation: in top-level targets
    ann, ben, _ = _maintainers(world, tmp_path)
    published = _publish(world, NEW, ann)
    assert published.pending is not None and not published.pending.committed
    assert world.fetch(out="early").verdict.version == OLD  # NEW is not served yet
    with pytest.raises(DelegationError, match="already signed"):
        _cosign(world, ann, NEW)
    done = _cosign(world, ben, NEW)
    assert done.committed and len(done.signed_by) == 2
    assert world.fetch(out="late").verdict.version == NEW
    assert world.fetch(out="old", version=OLD, allow_downgrade=True).verdict.version == OLD
    assert not (world.repo / "pending" / "releases.json").exists()


def test_threshold_one_publishes_at_once(world: World, tmp_path: Path) -> None:
    ann, _, _ = _maintainers(world, tmp_path, threshold=1)
    pending = _publish(world, OLD, ann).pending
    assert pending is not None and pending.committed
    assert world.fetch().verdict.version == OLD


def test_publish_without_a_maintainer_key_or_with_a_stranger_is_refused(
    world: World, tmp_path: Path
) -> None:
    _maintainers(world, tmp_path)
    with pytest.raises(DelegationError, match="sign with your key"):
        world.publish(OLD)
    stranger = generate_key_files(tmp_path / "x", "eve", "release")
    with pytest.raises(DelegationError, match="not one of the releases role's maintainer keys"):
        _publish(world, OLD, stranger)


def test_the_client_refuses_releases_metadata_below_its_threshold(
    world: World, tmp_path: Path
) -> None:
    """A mirror serving the pending (one-signature) releases metadata as if committed."""
    ann, ben, _ = _maintainers(world, tmp_path)
    _publish(world, OLD, ann)
    _cosign(world, ben, OLD)
    world.fetch(out="ok")
    repo = DiskRepository.load(world.repo, world.keys, world.policy, now_utc())
    md: Metadata[Any] = repo.current["releases"]
    version = md.signed.version
    md.signatures.pop(next(iter(md.signatures)))  # now one of two
    world.mirror.attacks[f"/metadata/{version}.releases.json"] = md.to_bytes(JSONSerializer())
    with pytest.raises(e.MetadataSignatureInvalid):
        world.fetch(out="attacked", state="fresh-state")


def test_rotating_the_releases_keys_with_a_client_across_it(world: World, tmp_path: Path) -> None:
    ann, ben, cy = _maintainers(world, tmp_path)
    _publish(world, OLD, ann)
    _cosign(world, ben, OLD)
    world.fetch(out="before")
    dee = generate_key_files(tmp_path / "maintainers", "dee", "release")
    with pytest.raises(DelegationError, match="1 of 2 new maintainer signatures"):
        rotate_releases(world.repo, world.keys, world.policy,
                        [cy.public_pem, dee.public_pem], 2, [cy.private_pem],
                        current_keys=[ann.private_pem, ben.private_pem])  # fmt: skip
    new_keys = [cy.private_pem, dee.private_pem]
    rotate_releases(world.repo, world.keys, world.policy,
                    [cy.public_pem, dee.public_pem], 2, new_keys,
                    current_keys=[ann.private_pem, ben.private_pem])  # fmt: skip
    assert world.fetch(out="after", force=True).verdict.version == OLD  # re-signed, still served
    with pytest.raises(DelegationError, match="not one of the releases role's maintainer keys"):
        _publish(world, NEW, ann)  # a retired maintainer key signs nothing any more
    _publish(world, NEW, cy)
    _cosign(world, dee, NEW)
    assert world.fetch(out="new").verdict.version == NEW


def test_the_two_maintainer_commands(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = [generate_key_files(tmp_path / "m", n, "release") for n in ("ann", "ben")]
    repo = ["--repo", str(world.repo), "--keys", str(world.keys.keys)]
    maintainers = [a for m in keys for a in ("--maintainer", str(m.public_pem))]
    assert release_main(["repo", "delegate", *repo, *maintainers, "--threshold", "2"]) == 0
    _publish(world, OLD, keys[0])
    trust = ["--trusted-keys", str(world.bundles.trusted_keys)]
    assert release_main(["repo", "sign-pending", *repo, "--maintainer-key",
                         str(keys[0].private_pem), *trust]) == 3  # fmt: skip
    assert "already signed" in capsys.readouterr().err
    cosign = ["repo", "sign-pending", *repo, "--maintainer-key", str(keys[1].private_pem), *trust]
    with pytest.MonkeyPatch.context() as mp:  # the fake native binary: the harness's report
        mp.setattr(verifier, "default_deriver", lambda: fake_report)
        assert release_main(cosign) == 1  # shown, not signed: no --expect-digest
        err = capsys.readouterr().err
        assert err.startswith(f"error[pending.unconfirmed]: pending: tinyrustlm {OLD} (build ")
        assert _digest(world, OLD) in err
        assert release_main([*cosign, "--expect-digest", _digest(world, OLD)]) == 0
    out = capsys.readouterr().out
    assert f"co-signed  tinyrustlm {OLD}" in out and _digest(world, OLD) in out
    assert "2 of 2 signatures, published" in out
    assert world.fetch().verdict.version == OLD


# -- issue 36: trust that keeps its own rules -----------------------------------------------
def _rotate(world: World, new: list[KeyFiles], **options: Any) -> object:
    return rotate_releases(
        world.repo,
        options.pop("keys", world.keys),
        world.policy,
        [m.public_pem for m in new],
        len(new),
        [m.private_pem for m in new],
        **options,
    )


def test_the_online_keys_alone_cannot_rotate_the_maintainers(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Whoever holds the server (its key folder: targets, snapshot, timestamp, even a root key
    left in it) makes a maintainer of their own: refused, nothing written."""
    ann, ben, _ = _maintainers(world, tmp_path)
    mallory = generate_key_files(tmp_path / "m", "mallory", "release")
    before = sorted(p.name for p in (world.repo / "metadata").iterdir())
    with pytest.raises(RotationUnauthorized, match="online keys alone"):
        _rotate(world, [mallory])
    with pytest.raises(RotationUnauthorized, match="1 of the 2 current maintainers"):
        _rotate(world, [mallory], current_keys=[ann.private_pem])
    with pytest.raises(RotationUnauthorized, match="not a current maintainer"):
        _rotate(world, [mallory], current_keys=[mallory.private_pem, ann.private_pem])
    repo = ["--repo", str(world.repo), "--keys", str(world.keys.keys)]
    argv = ["repo", "rotate", "releases", *repo, "--maintainer", str(mallory.public_pem),
            "--threshold", "1", "--maintainer-key", str(mallory.private_pem)]  # fmt: skip
    assert release_main(argv) == 1
    assert "error[publish.rotation-unauthorized]" in capsys.readouterr().err
    assert sorted(p.name for p in (world.repo / "metadata").iterdir()) == before
    _rotate(world, [mallory], current_keys=[ann.private_pem, ben.private_pem])  # their threshold


def test_the_offline_root_key_given_apart_may_rotate_the_maintainers(
    world: World, tmp_path: Path
) -> None:
    _maintainers(world, tmp_path)
    dee = generate_key_files(tmp_path / "m", "dee", "release")
    offline = KeyFolders(world.keys.keys, world.keys.folder("root"))  # --root-keys DIR
    _rotate(world, [dee], keys=offline)
    _publish(world, OLD, dee)  # the new maintainer signs (threshold 1: served at once)
    assert world.fetch().verdict.version == OLD


def test_sign_pending_shows_what_it_signs_and_needs_its_digest(
    world: World, tmp_path: Path
) -> None:
    ann, ben, _ = _maintainers(world, tmp_path)
    _publish(world, OLD, ann)
    pending = world.repo / "pending" / "releases.json"
    before = pending.read_bytes()
    with pytest.raises(PendingRefused) as info:
        _cosign(world, ben, OLD, expect_digest=None)
    assert info.value.error_id == "pending.unconfirmed"
    assert f"tinyrustlm {OLD} (build " in info.value.message
    assert _digest(world, OLD) in info.value.message
    with pytest.raises(PendingRefused) as info:
        _cosign(world, ben, OLD, expect_digest="0" * 64)
    assert info.value.error_id == "pending.digest"
    assert pending.read_bytes() == before  # nothing signed
    done = _cosign(world, ben, OLD)
    assert done.committed and done.release is not None
    assert done.release.manifest_sha256 == _digest(world, OLD)


def _stored(world: World, name: str) -> Path:
    return next(p for p in (world.repo / "targets").rglob(f"*.{name}"))


def _tamper_stored_manifest(world: World) -> None:
    path = _stored(world, "manifest.json")
    path.write_bytes(path.read_bytes().replace(b'"', b"'", 1))


def _served_target_dropped(world: World) -> None:
    """The server rewrites the pending metadata (its signatures then fail)."""
    path = world.repo / "pending" / "releases.json"
    md: Metadata[Any] = Metadata.from_bytes(path.read_bytes())
    md.signatures.clear()
    path.write_bytes(md.to_bytes(JSONSerializer()))


PENDING_REFUSALS = {
    "stored bytes changed": (_tamper_stored_manifest, None, "pending.files"),
    "a trust the release key is not in": (None, "untrusted", "pending.unverified"),
    "no maintainer signature": (_served_target_dropped, None, "pending.shape"),
}


@pytest.mark.parametrize(
    ("damage", "trust", "error_id"), PENDING_REFUSALS.values(), ids=PENDING_REFUSALS.keys()
)
def test_sign_pending_never_co_signs_what_verify_refuses(
    world: World, tmp_path: Path, damage: Any, trust: str | None, error_id: str
) -> None:
    ann, ben, _ = _maintainers(world, tmp_path)
    _publish(world, OLD, ann)
    if damage is not None:
        damage(world)
    options: dict[str, Any] = {}
    if trust == "untrusted":
        stranger = generate_key_files(tmp_path / "x", "eve", "release")
        options["trust"] = PendingTrust(load_trusted_keys(stranger.trusted_keys))
    pending = world.repo / "pending" / "releases.json"
    before = pending.read_bytes()
    with pytest.raises(PendingRefused) as info:
        _cosign(world, ben, OLD, **options)
    assert info.value.error_id == error_id, info.value.diagnostics()
    assert pending.read_bytes() == before
