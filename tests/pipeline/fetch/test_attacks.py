"""A hostile mirror, over real HTTP: every attack is refused with its own error class and
nothing is left in --out.

Each case publishes 9.9.8 then 9.9.9 into a fresh repository (metadata versions: timestamp,
snapshot and targets at 3), arranges what the mirror sends instead of the genuine files, and
fetches the newest release with a client state folder.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from securesystemslib.signer import CryptoSigner
from tuf.api.metadata import Metadata, Root
from tuf.api.serialization.json import JSONSerializer

from pipeline.publish.keys import key_file, load_signer
from pipeline.publish.repo import refresh_timestamp, rotate_root
from pipeline.tuf import errors as e
from tests.harness.tuf import NEW, OLD, World, entries

PRETTY = JSONSerializer(compact=False)


def _target_url(version: str, rel: str, data: bytes) -> str:
    folder, _, name = f"tinyrustlm/{version}/{rel}".rpartition("/")
    return f"/targets/{folder}/{hashlib.sha256(data).hexdigest()}.{name}"


def _bundle_file(w: World, version: str, rel: str) -> bytes:
    return (w.bundles.paths[version] / rel).read_bytes()


def _artifact(w: World) -> str:
    found = sorted(w.bundles.paths[NEW].glob("artifacts/*"))
    return found[0].relative_to(w.bundles.paths[NEW]).as_posix()


def _endless() -> Iterator[bytes]:
    return itertools.repeat(b"\0" * 65536)


def _metadata(w: World, name: str) -> Metadata[Any]:
    return Metadata.from_bytes(w.mirror.file(f"metadata/{name}"))


def _online_signer(w: World, role: str) -> CryptoSigner:
    root: Root = _metadata(w, "1.root.json").signed
    keyid = root.roles[role].keyids[0]
    return load_signer(w.keys, role, root.keys[keyid])


def _both_published(w: World) -> dict[str, bytes]:
    """Publish OLD then NEW; returns the timestamps as they were (the mirror can replay them)."""
    saved = {"timestamp-1": w.mirror.file("metadata/timestamp.json")}
    w.publish(OLD)
    saved["timestamp-2"] = w.mirror.file("metadata/timestamp.json")
    w.publish(NEW)
    return saved


# -- the attacks: each arranges the mirror and returns extra fetch arguments ---------------
def rollback_timestamp(w: World) -> dict[str, Any]:
    saved = _both_published(w)
    w.fetch(out="earlier")  # the client has now seen timestamp v3
    w.mirror.attacks["/metadata/timestamp.json"] = saved["timestamp-2"]
    return {}


def rollback_snapshot(w: World) -> dict[str, Any]:
    _both_published(w)
    w.mirror.attacks["/metadata/3.snapshot.json"] = w.mirror.file("metadata/2.snapshot.json")
    return {}


def rollback_targets(w: World) -> dict[str, Any]:
    _both_published(w)
    w.mirror.attacks["/metadata/3.targets.json"] = w.mirror.file("metadata/2.targets.json")
    return {}


def freeze(w: World) -> dict[str, Any]:
    """The mirror stops at a state whose timestamp has since expired."""
    _both_published(w)
    past = datetime.now(UTC) - timedelta(days=2)
    refresh_timestamp(w.repo, w.keys, w.policy, now=past)  # validly signed, expired a day ago
    return {}


def mix_and_match(w: World) -> dict[str, Any]:
    """9.9.9's manifest replaced by 9.9.8's (each one validly signed on its own)."""
    new = _bundle_file(w, NEW, "manifest.json")
    _both_published(w)
    w.mirror.attacks[_target_url(NEW, "manifest.json", new)] = _bundle_file(w, OLD, "manifest.json")
    return {}


def tampered_target(w: World) -> dict[str, Any]:
    rel = _artifact(w)
    data = bytearray(_bundle_file(w, NEW, rel))
    data[len(data) // 2] ^= 0x01
    _both_published(w)
    w.mirror.attacks[_target_url(NEW, rel, _bundle_file(w, NEW, rel))] = bytes(data)
    return {}


def endless_target(w: World) -> dict[str, Any]:
    rel = _artifact(w)
    _both_published(w)
    w.mirror.attacks[_target_url(NEW, rel, _bundle_file(w, NEW, rel))] = _endless
    return {}


def oversized_target(w: World) -> dict[str, Any]:
    rel = _artifact(w)
    data = _bundle_file(w, NEW, rel)
    _both_published(w)
    w.mirror.attacks[_target_url(NEW, rel, data)] = data + b"\0"
    return {}


def endless_timestamp(w: World) -> dict[str, Any]:
    _both_published(w)
    w.mirror.attacks["/metadata/timestamp.json"] = _endless
    return {}


def withheld_target(w: World) -> dict[str, Any]:
    rel = _artifact(w)
    _both_published(w)
    (w.repo / _target_url(NEW, rel, _bundle_file(w, NEW, rel)).lstrip("/")).unlink()
    return {}


def timestamp_signed_by_wrong_key(w: World) -> dict[str, Any]:
    _both_published(w)
    md = _metadata(w, "timestamp.json")
    md.signed.version += 1
    md.signatures.clear()
    md.sign(CryptoSigner.generate_ed25519())
    w.mirror.attacks["/metadata/timestamp.json"] = md.to_bytes(PRETTY)
    return {}


def targets_signed_by_snapshot_key(w: World) -> dict[str, Any]:
    """Signed by a genuine repository key, but not one root names for targets."""
    _both_published(w)
    md = _metadata(w, "3.targets.json")
    md.signatures.clear()
    md.sign(_online_signer(w, "snapshot"))
    w.mirror.attacks["/metadata/3.targets.json"] = md.to_bytes(PRETTY)
    return {}


def snapshot_below_threshold(w: World) -> dict[str, Any]:
    _both_published(w)
    md = _metadata(w, "3.snapshot.json")
    md.signatures.clear()
    w.mirror.attacks["/metadata/3.snapshot.json"] = md.to_bytes(PRETTY)
    return {}


def _attacker_root(w: World, version: int, signers: list[CryptoSigner]) -> bytes:
    """Root `version` naming attacker keys for every role, signed by `signers`."""
    md: Metadata[Root] = _metadata(w, "1.root.json")
    attacker = CryptoSigner.generate_ed25519()
    md.signed.version = version
    for role, spec in md.signed.roles.items():
        for keyid in list(spec.keyids):
            md.signed.revoke_key(keyid, role)
        md.signed.add_key(attacker.public_key, role)
    md.signatures.clear()
    for signer in [attacker, *signers]:
        md.sign(signer, append=True)
    return md.to_bytes(PRETTY)


def malicious_root(w: World) -> dict[str, Any]:
    """A root v2 that the trusted root v1's key never signed."""
    _both_published(w)
    w.mirror.attacks["/metadata/2.root.json"] = _attacker_root(w, 2, [])
    return {}


def retired_root_key(w: World) -> dict[str, Any]:
    """After a rotation, a root v3 signed with the retired root key (say, a stolen backup)."""
    _both_published(w)
    old_root: Root = _metadata(w, "1.root.json").signed
    old_keyid = old_root.roles["root"].keyids[0]
    rotate_root(w.repo, w.keys, w.policy)
    w.fetch(out="earlier")  # the client follows the rotation and trusts root v2
    retired = key_file(w.keys.folder("root") / "retired", old_keyid)
    assert retired is not None
    stolen = load_signer(
        type(w.keys)(w.keys.keys, w.keys.folder("root") / "retired"),
        "root",
        old_root.keys[old_keyid],
    )
    w.mirror.attacks["/metadata/3.root.json"] = _attacker_root(w, 3, [stolen])
    return {}


def older_release_than_fetched(w: World) -> dict[str, Any]:
    _both_published(w)
    w.fetch(out="earlier", version=NEW)
    return {"version": OLD}


def bundle_key_not_trusted(w: World) -> dict[str, Any]:
    """TUF is satisfied; `verify bundle` is not (the client trusts another release key)."""
    from pipeline.documents.keys import generate_key_files

    _both_published(w)
    other = generate_key_files(w.tmp / "other-keys", "other", "release")
    return {"trusted_keys": other.trusted_keys}


ATTACKS: list[tuple[Callable[[World], dict[str, Any]], type[e.PublishError]]] = [
    (rollback_timestamp, e.MetadataRollback),
    (rollback_snapshot, e.MetadataRollback),
    (rollback_targets, e.MetadataRollback),
    (freeze, e.MetadataExpired),
    (mix_and_match, e.TargetHashMismatch),
    (tampered_target, e.TargetHashMismatch),
    (endless_target, e.DownloadTooLong),
    (oversized_target, e.DownloadTooLong),
    (endless_timestamp, e.DownloadTooLong),
    (withheld_target, e.DownloadFailed),
    (timestamp_signed_by_wrong_key, e.MetadataSignatureInvalid),
    (targets_signed_by_snapshot_key, e.MetadataSignatureInvalid),
    (snapshot_below_threshold, e.MetadataSignatureInvalid),
    (malicious_root, e.MetadataSignatureInvalid),
    (retired_root_key, e.MetadataSignatureInvalid),
    (older_release_than_fetched, e.DowngradeRefused),
    (bundle_key_not_trusted, e.FetchedBundleRejected),
]


@pytest.mark.parametrize(
    ("attack", "expected"), ATTACKS, ids=[a.__name__.replace("_", "-") for a, _ in ATTACKS]
)
def test_attack_is_refused_and_leaves_nothing(
    world: World, attack: Callable[[World], dict[str, Any]], expected: type[e.PublishError]
) -> None:
    extra = attack(world)
    with pytest.raises(e.PublishError) as info:
        world.fetch(out="out", **extra)
    assert type(info.value) is expected, info.value.diagnostics()
    assert f"error[{expected.error_id}]" in info.value.diagnostics()
    assert entries(world.tmp / "out") == []
