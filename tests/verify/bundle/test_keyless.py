"""Keyless identity (issue 23): real Sigstore bundles, verified offline with sigstore-python.

Nothing can be signed keylessly here (no network, no OIDC token), so the signatures are
sigstore-python's own staging test assets (sigstore_assets/NOTICE.md): real Fulcio
certificates and Rekor entries, checked against the staging trusted root sigstore-python
embeds (`Verifier.staging(offline=True)`). The release-bundle cases run the real verifier
CLI: the required identity's file missing, or signing other bytes than manifest.json.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pipeline.cli import main as release_main
from pipeline.documents.trust_policy import trust_policy
from tests.harness.release import Harness, fake_report, verify_json
from verify.bundle import verifier
from verify.bundle.errors import KeylessRefused, MalformedSignatureBundle
from verify.bundle.keyless import KEYLESS_SIGNATURE, KeylessIdentity, verify_keyless

ASSETS = Path(__file__).parent / "sigstore_assets"
GITHUB_OAUTH = "https://github.com/login/oauth"
# asset -> (its Sigstore bundle, the identity in its certificate)
SIGNED = {
    "bundle_v3.txt": ("bundle_v3.txt.sigstore", "william@yossarian.net"),
    "staging-rekor-v2.txt": ("staging-rekor-v2.txt.sigstore.json", "jku@goto.fi"),
}


def _asset(name: str) -> tuple[bytes, bytes, str]:
    bundle, identity = SIGNED[name]
    return (ASSETS / name).read_bytes(), (ASSETS / bundle).read_bytes(), identity


@pytest.mark.parametrize("name", list(SIGNED))
def test_right_identity_and_issuer_verify(name: str) -> None:
    artifact, bundle, identity = _asset(name)
    want = KeylessIdentity(identity, GITHUB_OAUTH, "staging")
    assert identity in verify_keyless(artifact, bundle, want, name)


@pytest.mark.parametrize(
    ("identity", "issuer", "instance"),
    [
        ("someone-else@example.com", GITHUB_OAUTH, "staging"),
        ("william@yossarian.net", "https://token.actions.githubusercontent.com", "staging"),
        ("william@yossarian.net", GITHUB_OAUTH, "production"),  # not production's root
    ],
    ids=["wrong-identity", "wrong-issuer", "wrong-instance"],
)
def test_wrong_identity_issuer_or_instance_is_refused(
    identity: str, issuer: str, instance: str
) -> None:
    artifact, bundle, _ = _asset("bundle_v3.txt")
    want = KeylessIdentity(identity, issuer, instance)  # type: ignore[arg-type]
    with pytest.raises(KeylessRefused):
        verify_keyless(artifact, bundle, want, "bundle_v3.txt.sigstore")


@pytest.mark.parametrize("name", list(SIGNED))
def test_a_tampered_payload_is_refused(name: str) -> None:
    artifact, bundle, identity = _asset(name)
    tampered = bytearray(artifact)
    tampered[len(tampered) // 2] ^= 0x01
    want = KeylessIdentity(identity, GITHUB_OAUTH, "staging")
    with pytest.raises(KeylessRefused, match="does not verify"):
        verify_keyless(bytes(tampered), bundle, want, name)


def test_a_malformed_sigstore_bundle_is_a_typed_error() -> None:
    artifact, bundle, identity = _asset("bundle_v3.txt")
    want = KeylessIdentity(identity, GITHUB_OAUTH, "staging")
    with pytest.raises(MalformedSignatureBundle):
        verify_keyless(artifact, bundle[:100], want, "x")


@pytest.fixture(autouse=True)
def _fake_inspection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verifier, "default_deriver", lambda: fake_report)


def _keyless_args(identity: str = "william@yossarian.net") -> list[str]:
    return [
        "--certificate-identity", identity, "--certificate-oidc-issuer", GITHUB_OAUTH,
        "--sigstore-instance", "staging",
    ]  # fmt: skip


def test_verify_bundle_requires_the_keyless_signature(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    harness, original = pristine
    bundle = tmp_path / original.name
    shutil.copytree(original, bundle)
    assert verify_json(bundle, harness.trusted)[0] == 0  # not asked for: not needed
    code, result, _ = verify_json(bundle, harness.trusted, *_keyless_args())
    assert (code, result["error"]["id"]) == (1, "signature.keyless")
    assert "the bundle has none" in result["error"]["message"]
    # a real keyless signature by the right identity, over other bytes than manifest.json
    shutil.copy(ASSETS / "bundle_v3.txt.sigstore", bundle / KEYLESS_SIGNATURE)
    code, result, _ = verify_json(bundle, harness.trusted, *_keyless_args())
    assert (code, result["error"]["id"]) == (1, "signature.keyless")
    assert "does not verify" in result["error"]["message"]


def test_identity_without_issuer_is_a_usage_error(
    pristine: tuple[Harness, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from verify.cli import main

    harness, bundle = pristine
    argv = ["bundle", str(bundle), "--trusted-keys", str(harness.trusted)]
    assert main([*argv, "--certificate-identity", "x@example.com"]) == 2
    assert "go together" in capsys.readouterr().err


def test_a_trust_policy_can_require_keyless_and_keys(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    harness, bundle = pristine
    doc = json.loads(trust_policy([harness.trusted], 1, []))
    assert verify_json(bundle, _write(tmp_path / "keys-only.json", doc))[0] == 0
    doc["keyless"] = {"identity": "william@yossarian.net", "issuer": GITHUB_OAUTH}
    code, result, _ = verify_json(bundle, _write(tmp_path / "both.json", doc))
    assert (code, result["error"]["id"]) == (1, "signature.keyless")


def _write(path: Path, doc: object) -> Path:
    path.write_text(json.dumps(doc))
    return path


def test_keyless_signing_without_an_ambient_credential_is_a_clear_error(
    pristine: tuple[Harness, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    for name in ("GITHUB_ACTIONS", "ACTIONS_ID_TOKEN_REQUEST_URL", "SIGSTORE_ID_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    bundle = tmp_path / "dist" / pristine[1].name
    shutil.copytree(pristine[1], bundle)
    before = {p: p.read_bytes() for p in bundle.rglob("*") if p.is_file()}
    trust = ["--trusted-keys", str(pristine[0].trusted), "--allow-dev-key"]
    assert release_main(["sign", str(bundle), "--keyless", *trust]) == 3
    err = capsys.readouterr().err
    assert err.startswith("error[keyless.unavailable]: no ambient OIDC credential")
    assert "id-token: write" in err
    assert {p: p.read_bytes() for p in bundle.rglob("*") if p.is_file()} == before
