"""Every expiry at its exact second (issue 26): the manifest's `expires_epoch`, a trusted
key's `not_after` and a rebuilder key's `not_after` refuse at that second and accept one
second before; and `verify bundle` without `--at-epoch` judges expiry by the clock.

Through the real CLI (`--at-epoch`) on the fake release harness; the rebuild attestations are
made and signed by the real pipeline code.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pipeline.documents.attest import Compared, rebuild_statement, write_attestation
from pipeline.documents.keys import SigningKey, load_private_key
from tests.harness.release import Harness, copy_pristine, fake_report, verify_json
from verify.bundle import verifier
from verify.bundle.dsse import keyid_of
from verify.bundle.layout import MANIFEST
from verify.bundle.trusted_keys import trusted_key_entry, trusted_keys_json
from verify.formats.manifest import ModuleManifest


@pytest.fixture(autouse=True)
def _fake_inspection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verifier, "default_deriver", lambda: fake_report)


def _expires(bundle: Path) -> int:
    value = json.loads((bundle / MANIFEST).read_text())["expires_epoch"]
    assert isinstance(value, int)
    return value


def test_manifest_expiry_at_the_exact_second(pristine: tuple[Harness, Path]) -> None:
    h, bundle = pristine
    expires = _expires(bundle)
    code, result, _ = verify_json(bundle, h.trusted, "--at-epoch", str(expires))
    assert (code, result["error"]["id"]) == (1, "manifest.expired")
    code, result, _ = verify_json(bundle, h.trusted, "--at-epoch", str(expires - 1))
    assert (code, result["ok"]) == (0, True)


@pytest.mark.parametrize(("clock", "ok"), [(0, True), (-1, True), (1, False)])
def test_without_at_epoch_the_clock_decides(
    pristine: tuple[Harness, Path], monkeypatch: pytest.MonkeyPatch, clock: int, ok: bool
) -> None:
    """The default `now` is the system clock: one second either side of expiry."""
    h, bundle = pristine
    at = _expires(bundle) - 1 + clock
    monkeypatch.setattr(time, "time", lambda: at + 0.5)  # the clock verify.bundle.cli reads
    code, result, _ = verify_json(bundle, h.trusted)
    assert (code, result["ok"]) == ((0, True) if ok else (1, False))
    if not ok:
        assert result["error"]["id"] == "manifest.expired"


def _trusted_until(h: Harness, tmp_path: Path, not_after: int) -> Path:
    public = load_private_key(h.key.private_pem).public_key()
    when = datetime.fromtimestamp(not_after, UTC)
    path = tmp_path / "keys.json"
    path.write_bytes(trusted_keys_json([trusted_key_entry(public, "release", when)]))
    return path


def test_trusted_key_not_after_at_the_exact_second(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    h, bundle = pristine
    not_after = _expires(bundle) - 3600  # inside the manifest's validity
    trusted = _trusted_until(h, tmp_path, not_after)
    code, result, _ = verify_json(bundle, trusted, "--at-epoch", str(not_after))
    assert (code, result["error"]["id"], result["error"]["step"]) == (1, "signature.key-expired", 2)
    assert str(not_after) in result["error"]["message"]
    code, result, _ = verify_json(bundle, trusted, "--at-epoch", str(not_after - 1))
    assert (code, result["ok"]) == (0, True)


# -- a rebuilder key's not_after --------------------------------------------------------
def _alice() -> SigningKey:
    private = Ed25519PrivateKey.from_private_bytes(b"alice".ljust(32, b"\0"))
    return SigningKey(private, keyid_of(private.public_key()), "release", "alice")


def _attestation(bundle: Path, out: Path) -> Path:
    manifest = ModuleManifest.model_validate_json((bundle / MANIFEST).read_bytes())
    digests = dict(manifest.listed_files())
    artifacts = [Compared(url, digests[url], digests[url]) for url, _ in manifest.lanes()]
    statement = rebuild_statement(manifest, artifacts, [], _alice().keyid)
    write_attestation(statement, _alice(), out)
    return out


def test_rebuilder_key_not_after_at_the_exact_second(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    h, bundle = pristine
    not_after = _expires(bundle) - 7200
    rebuilders = tmp_path / "rebuilders.json"
    when = datetime.fromtimestamp(not_after, UTC)
    rebuilders.write_bytes(
        trusted_keys_json([trusted_key_entry(_alice().private_key.public_key(), "release", when)])
    )
    attestation = _attestation(bundle, tmp_path / "alice.sigstore.json")
    args = ["--rebuilders", str(rebuilders), "--require-rebuilds", "1",
            "--rebuild-scope", "artifacts", "--rebuild-attestation", str(attestation)]  # fmt: skip
    code, result, err = verify_json(bundle, h.trusted, *args, "--at-epoch", str(not_after - 1))
    assert (code, result["ok"]) == (0, True), err
    code, result, _ = verify_json(bundle, h.trusted, *args, "--at-epoch", str(not_after))
    assert (code, result["error"]["id"], result["error"]["step"]) == (
        1,
        "rebuilds.insufficient",
        14,
    )
    assert "not_after" in json.dumps(result)


def test_copy_control(pristine: tuple[Harness, Path], tmp_path: Path) -> None:
    """The harness's bundle verifies now, so every refusal above is the boundary's doing."""
    h, _ = pristine
    code, result, _ = verify_json(copy_pristine(pristine, tmp_path), h.trusted)
    assert (code, result["ok"]) == (0, True)
