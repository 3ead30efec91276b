"""`repo rotate ROLE` (issue 23): every role's key can be replaced, a client follows across the
rotation, and rotating the timestamp (and snapshot) key recovers a client that a stolen key
fast-forwarded (TUF specification 5.3.11), with the real python-tuf client (`fetch`)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from securesystemslib.signer import CryptoSigner
from tuf.api.metadata import Metadata, MetaFile, Root
from tuf.api.serialization.json import JSONSerializer

from pipeline.publish.keys import load_signer
from pipeline.publish.repo import ROTATABLE_ROLES, rotate_role
from pipeline.tuf import errors as e
from tests.harness.tuf import NEW, OLD, World


def _metadata(w: World, name: str) -> Metadata[Any]:
    return Metadata.from_bytes(w.mirror.file(f"metadata/{name}"))


def _newest_root(w: World) -> Root:
    versions = [int(p.name.split(".")[0]) for p in (w.repo / "metadata").glob("*.root.json")]
    root: Root = _metadata(w, f"{max(versions)}.root.json").signed
    return root


def _signer(w: World, role: str) -> CryptoSigner:
    root = _newest_root(w)
    return load_signer(w.keys, role, root.keys[root.roles[role].keyids[0]])


@pytest.mark.parametrize("role", ROTATABLE_ROLES)
def test_a_client_follows_every_rotation(world: World, role: str) -> None:
    world.publish(OLD)
    assert world.fetch(out="before").verdict.version == OLD
    old_keyids = list(_newest_root(world).roles[role].keyids)
    summary = rotate_role(world.repo, world.keys, world.policy, role)
    assert summary.versions["root"] == 2
    new_keyids = list(_newest_root(world).roles[role].keyids)
    assert len(new_keyids) == 1 and new_keyids != old_keyids
    retired = world.keys.folder(role) / "retired"
    assert [p.name.split(".")[1] for p in retired.glob("*.key.pem")] == old_keyids
    world.publish(NEW)  # the next publish signs with the new key
    assert world.fetch(out="after").verdict.version == NEW  # same client state, root v1 boot
    assert world.fetch(out="fresh", state="fresh-state").verdict.version == NEW


def _fast_forward_timestamp(w: World, version: int, snapshot: int | None = None) -> bytes:
    md = _metadata(w, "timestamp.json")
    md.signed.version = version
    if snapshot is not None:
        md.signed.snapshot_meta = MetaFile(snapshot)
    md.signatures.clear()
    md.sign(_signer(w, "timestamp"))
    return md.to_bytes(JSONSerializer())


def test_fast_forwarded_timestamp_is_recovered_by_rotating_its_key(world: World) -> None:
    """The red-team case: the stolen timestamp key signs timestamp v999; a client that saw it
    refuses the genuine repository (v3 < v999) until the timestamp key is rotated."""
    world.publish(OLD)
    world.fetch(out="seen")
    world.mirror.attacks["/metadata/timestamp.json"] = _fast_forward_timestamp(world, 999)
    world.fetch(out="fast-forwarded")  # the client now trusts timestamp v999
    del world.mirror.attacks["/metadata/timestamp.json"]
    world.publish(NEW)
    with pytest.raises(e.MetadataRollback):
        world.fetch(out="stuck")
    rotate_role(world.repo, world.keys, world.policy, "timestamp")
    assert json.loads(world.mirror.file("metadata/timestamp.json"))["signed"]["version"] < 999
    assert world.fetch(out="recovered").verdict.version == NEW


def test_refreshing_with_the_old_key_does_not_recover(world: World) -> None:
    """Without a rotation (only a re-signed timestamp) the client stays stuck: the recovery
    really is the rotation."""
    world.publish(OLD)
    world.mirror.attacks["/metadata/timestamp.json"] = _fast_forward_timestamp(world, 999)
    world.fetch(out="fast-forwarded")
    del world.mirror.attacks["/metadata/timestamp.json"]
    world.publish(NEW)
    with pytest.raises(e.MetadataRollback):
        world.fetch(out="stuck")


def test_fast_forwarded_snapshot_is_recovered_by_rotating_snapshot_and_timestamp(
    world: World,
) -> None:
    world.publish(OLD)
    snapshot = _metadata(world, "2.snapshot.json")
    snapshot.signed.version = 999
    snapshot.signatures.clear()
    snapshot.sign(_signer(world, "snapshot"))
    world.mirror.attacks["/metadata/999.snapshot.json"] = snapshot.to_bytes(JSONSerializer())
    world.mirror.attacks["/metadata/timestamp.json"] = _fast_forward_timestamp(world, 999, 999)
    world.fetch(out="fast-forwarded")
    world.mirror.attacks.clear()
    world.publish(NEW)
    with pytest.raises(e.MetadataRollback):
        world.fetch(out="stuck")
    rotate_role(world.repo, world.keys, world.policy, "snapshot")
    rotate_role(world.repo, world.keys, world.policy, "timestamp")
    assert world.fetch(out="recovered").verdict.version == NEW
