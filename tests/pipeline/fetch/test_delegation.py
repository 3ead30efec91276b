"""Targets delegates the releases to the maintainers (issue 23, TAP 3 style multi-signature):
`publish` by one maintainer leaves the release pending and unserved; `repo sign-pending` by a
second meets the threshold and the real python-tuf client (`fetch`) sees it; the same key
twice is refused; a releases role signed below its threshold is refused by the client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tuf.api.metadata import Metadata
from tuf.api.serialization.json import JSONSerializer

from pipeline.cli import main as release_main
from pipeline.documents.keys import KeyFiles, generate_key_files
from pipeline.publish.delegation import (
    DelegationError,
    delegate_releases,
    rotate_releases,
    sign_pending,
)
from pipeline.publish.publish import Published, publish_bundle
from pipeline.publish.repo import DiskRepository, now_utc
from pipeline.tuf import errors as e
from tests.harness.release import fake_report
from tests.harness.tuf import NEW, OLD, World


def _maintainers(world: World, tmp: Path, threshold: int = 2) -> list[KeyFiles]:
    keys = [generate_key_files(tmp / "maintainers", n, "release") for n in ("ann", "ben", "cy")]
    delegate_releases(world.repo, world.keys, world.policy, [m.public_pem for m in keys], threshold)
    return keys


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
        sign_pending(world.repo, world.keys, world.policy, ann.private_pem)
    done = sign_pending(world.repo, world.keys, world.policy, ben.private_pem)
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
    sign_pending(world.repo, world.keys, world.policy, ben.private_pem)
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
    sign_pending(world.repo, world.keys, world.policy, ben.private_pem)
    world.fetch(out="before")
    dee = generate_key_files(tmp_path / "maintainers", "dee", "release")
    with pytest.raises(DelegationError, match="1 of 2 new maintainer signatures"):
        rotate_releases(world.repo, world.keys, world.policy,
                        [cy.public_pem, dee.public_pem], 2, [cy.private_pem])  # fmt: skip
    new_keys = [cy.private_pem, dee.private_pem]
    rotate_releases(world.repo, world.keys, world.policy,
                    [cy.public_pem, dee.public_pem], 2, new_keys)  # fmt: skip
    assert world.fetch(out="after", force=True).verdict.version == OLD  # re-signed, still served
    with pytest.raises(DelegationError, match="not one of the releases role's maintainer keys"):
        _publish(world, NEW, ann)  # a retired maintainer key signs nothing any more
    _publish(world, NEW, cy)
    sign_pending(world.repo, world.keys, world.policy, dee.private_pem)
    assert world.fetch(out="new").verdict.version == NEW


def test_the_two_maintainer_commands(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = [generate_key_files(tmp_path / "m", n, "release") for n in ("ann", "ben")]
    repo = ["--repo", str(world.repo), "--keys", str(world.keys.keys)]
    maintainers = [a for m in keys for a in ("--maintainer", str(m.public_pem))]
    assert release_main(["repo", "delegate", *repo, *maintainers, "--threshold", "2"]) == 0
    _publish(world, OLD, keys[0])
    assert release_main(["repo", "sign-pending", *repo, "--maintainer-key",
                         str(keys[0].private_pem)]) == 3  # fmt: skip
    assert "already signed" in capsys.readouterr().err
    assert release_main(["repo", "sign-pending", *repo, "--maintainer-key",
                         str(keys[1].private_pem)]) == 0  # fmt: skip
    assert "2 of 2 signatures, published" in capsys.readouterr().out
    assert world.fetch().verdict.version == OLD
