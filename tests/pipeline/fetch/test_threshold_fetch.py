"""`fetch` enforces the trust policy's threshold (issue 23): a release signed by one maintainer
is refused by a client whose trusted-keys v2 file asks for two, naming how many of how many;
the same release co-signed by the second maintainer (`sign`) and published is fetched; and
`publish` refuses to serve a release below the threshold."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pipeline.documents.keys import generate_key_files
from pipeline.documents.trust_policy import trust_policy
from pipeline.publish.publish import publish_bundle
from pipeline.release.cosign import CoSignTrust, cosign_bundle
from pipeline.tuf import errors as e
from tests.harness.release import fake_report
from tests.harness.tuf import OLD, World, entries
from verify.bundle.trusted_keys import load_trust_root


def _two_of_two(world: World, tmp: Path) -> tuple[Path, Path]:
    bob = generate_key_files(tmp / "keys-bob", "bob", "release")
    policy = tmp / "two.trusted-keys.json"
    policy.write_bytes(trust_policy([world.bundles.trusted_keys, bob.trusted_keys], 2, []))
    return policy, bob.private_pem


def _trust(world: World) -> CoSignTrust:
    return CoSignTrust(world.bundles.trusted(), derive=fake_report)


def test_fetch_refuses_a_release_below_the_threshold(world: World, tmp_path: Path) -> None:
    policy, _ = _two_of_two(world, tmp_path)
    world.publish(OLD)
    with pytest.raises(e.FetchedBundleRejected, match=r"signature\.threshold.*1 of 2"):
        world.fetch(trusted_keys=policy)
    assert entries(world.tmp / "out") == []  # nothing half-fetched is left


def test_fetch_accepts_the_cosigned_release(world: World, tmp_path: Path) -> None:
    policy, bob = _two_of_two(world, tmp_path)
    bundle = tmp_path / "dist" / world.bundles.paths[OLD].name
    shutil.copytree(world.bundles.paths[OLD], bundle)
    cosign_bundle(bundle, bob, trust=_trust(world))
    world.publish(bundle)  # publish verifies against the v1 file: the release key alone
    done = world.fetch(trusted_keys=policy)
    assert done.verdict.version == OLD and len(done.verdict.keyids) == 2


def test_publish_refuses_a_release_below_the_threshold(world: World, tmp_path: Path) -> None:
    """Nothing is served until the threshold is met: `publish` judges with the same policy."""
    policy, bob = _two_of_two(world, tmp_path)
    before = entries(world.repo)
    with pytest.raises(e.BundleNotVerified, match=r"signature\.threshold.*1 of 2"):
        publish_bundle(
            world.bundles.paths[OLD], world.repo, world.keys, load_trust_root(policy),
            world.policy, derive=fake_report,
        )  # fmt: skip
    assert entries(world.repo) == before  # nothing written
    bundle = tmp_path / "dist" / world.bundles.paths[OLD].name
    shutil.copytree(world.bundles.paths[OLD], bundle)
    cosign_bundle(bundle, bob, trust=_trust(world))
    published = publish_bundle(
        bundle, world.repo, world.keys, load_trust_root(policy), world.policy, derive=fake_report
    )
    assert published.version == OLD
