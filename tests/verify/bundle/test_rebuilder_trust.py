"""A rebuilder key counts only while its own trust file trusts it (issue 36, item 2): a key the
rebuilders file revokes never counts, and a key before its `not_before` does not count yet
(exactly at `not_before` it does, one second before it does not).

Through the real CLI (`--at-epoch`) on the fake release harness, with a v2 rebuilders file;
the attestations are made and signed by the real pipeline code.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pipeline.documents.attest import Compared, rebuild_statement, write_attestation
from pipeline.documents.keys import SigningKey
from tests.harness.release import Harness, fake_report, verify_json
from verify.bundle import verifier
from verify.bundle.dsse import keyid_of
from verify.bundle.layout import MANIFEST
from verify.bundle.trusted_keys import trust_policy_json, trusted_key_entry
from verify.formats.manifest import ModuleManifest
from verify.formats.trusted_keys import (
    SIGNED_DOCUMENTS,
    RevokedKey,
    SigningRule,
    TrustedKeyEntryV2,
    TrustedKeysFileV2,
)


@pytest.fixture(autouse=True)
def _fake_inspection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verifier, "default_deriver", lambda: fake_report)


def _key(name: str) -> SigningKey:
    private = Ed25519PrivateKey.from_private_bytes(name.encode().ljust(32, b"\0"))
    return SigningKey(private, keyid_of(private.public_key()), "release", name)


def _expires(bundle: Path) -> int:
    value = json.loads((bundle / MANIFEST).read_text())["expires_epoch"]
    assert isinstance(value, int)
    return value


def _rebuilders(path: Path, not_before: int, not_after: int, revoked: tuple[str, ...]) -> Path:
    """A v2 rebuilders file: alice and bob, both in [not_before, not_after); `revoked` names."""
    entries = []
    for name in ("alice", "bob"):
        v1 = trusted_key_entry(
            _key(name).private_key.public_key(), "release", datetime.fromtimestamp(not_after, UTC)
        )
        entries.append(
            TrustedKeyEntryV2(**v1.model_dump(), not_before=datetime.fromtimestamp(not_before, UTC))
        )
    rule = SigningRule(keyids=sorted(e.keyid for e in entries), threshold=1)
    doc = TrustedKeysFileV2.model_validate(
        {
            "schema": "tinyrustlm.trusted-keys.v2",
            "keys": sorted(entries, key=lambda e: e.keyid),
            "policy": dict.fromkeys(SIGNED_DOCUMENTS, rule),
            "revoked": [RevokedKey(keyid=_key(n).keyid, reason=f"{n} left") for n in revoked],
        }
    )
    path.write_bytes(trust_policy_json(doc))
    return path


def _attestation(bundle: Path, signer: str, out: Path) -> Path:
    manifest = ModuleManifest.model_validate_json((bundle / MANIFEST).read_bytes())
    digests = dict(manifest.listed_files())
    artifacts = [Compared(url, digests[url], digests[url]) for url, _ in manifest.lanes()]
    statement = rebuild_statement(manifest, artifacts, [], _key(signer).keyid)
    write_attestation(statement, _key(signer), out)
    return out


def _verify(
    h: Harness, bundle: Path, rebuilders: Path, at: int, k: int, *signers: str
) -> tuple[int, dict[str, object]]:
    args = [
        "--rebuilders",
        str(rebuilders),
        "--require-rebuilds",
        str(k),
        "--rebuild-scope",
        "artifacts",
        "--at-epoch",
        str(at),
    ]
    for signer in signers:
        out = bundle.parent / f"{signer}.rebuild.sigstore.json"
        args += ["--rebuild-attestation", str(_attestation(bundle, signer, out))]
    code, result, _ = verify_json(bundle, h.trusted, *args)
    return code, result


def _refused(code: int, result: dict[str, object], reason: str) -> None:
    error = result["error"]
    assert isinstance(error, dict)
    assert (code, error["id"], error["step"]) == (1, "rebuilds.insufficient", 14)
    assert reason in json.dumps(result)


# name -> (offset of --at-epoch from not_before, counts?)
WINDOW: dict[str, tuple[int, bool]] = {
    "exactly at not_before counts": (0, True),
    "one second after counts": (1, True),
    "one second before does not": (-1, False),
    "a day before does not": (-86400, False),
}


@pytest.mark.parametrize(("offset", "counts"), WINDOW.values(), ids=WINDOW.keys())
def test_a_rebuilder_key_counts_from_its_not_before(
    pristine: tuple[Harness, Path], tmp_path: Path, offset: int, counts: bool
) -> None:
    h, bundle = pristine
    not_before = _expires(bundle) - 7200  # inside the manifest's validity
    rebuilders = _rebuilders(tmp_path / "r.json", not_before, not_before + 86400 * 30, ())
    code, result = _verify(h, bundle, rebuilders, not_before + offset, 1, "alice")
    if counts:
        assert (code, result["ok"]) == (0, True), result
    else:
        _refused(code, result, "not yet valid")


# name -> (offset of --at-epoch from not_before, the rebuilders K)
REVOKED: dict[str, tuple[int, int]] = {
    "inside its window": (3600, 1),
    "exactly at not_before": (0, 1),
    "beside a valid rebuilder, K=2": (3600, 2),
}


@pytest.mark.parametrize(("offset", "k"), REVOKED.values(), ids=REVOKED.keys())
def test_a_revoked_rebuilder_key_never_counts(
    pristine: tuple[Harness, Path], tmp_path: Path, offset: int, k: int
) -> None:
    h, bundle = pristine
    not_before = _expires(bundle) - 7200
    rebuilders = _rebuilders(tmp_path / "r.json", not_before, not_before + 86400 * 30, ("bob",))
    signers = ("alice", "bob") if k == 2 else ("bob",)
    code, result = _verify(h, bundle, rebuilders, not_before + offset, k, *signers)
    _refused(code, result, "revoked (bob left)")
    assert f"{k - 1} independent" in json.dumps(result)


def test_the_same_file_unrevoked_counts_both(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    """The control: without the revocation, the same two attestations meet K=2."""
    h, bundle = pristine
    not_before = _expires(bundle) - 7200
    rebuilders = _rebuilders(tmp_path / "r.json", not_before, not_before + 86400 * 30, ())
    code, result = _verify(h, bundle, rebuilders, not_before + 3600, 2, "alice", "bob")
    assert (code, result["ok"]) == (0, True), result
