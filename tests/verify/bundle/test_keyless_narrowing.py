"""A flag may only narrow what the trust policy trusts (issue 36, item 4): with a keyless
identity in the policy, `--certificate-identity` naming another one (or another issuer or
Sigstore instance) is a usage error, never a replacement; naming the same one changes nothing;
with none in the policy, the flag adds the requirement.

The harness's bundle has no keyless signature, so a requirement that holds shows as step 2's
`signature.keyless` refusal naming the identity that was required.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pipeline.documents.trust_policy import trust_policy
from tests.harness.release import Harness, fake_report, verify_json
from verify.bundle import verifier
from verify.bundle.errors import KeylessIdentityConflict, KeylessRefused
from verify.bundle.keyless import KeylessIdentity
from verify.bundle.trusted_keys import load_trust_root
from verify.cli import main as verify_main

ISSUER = "https://token.actions.githubusercontent.com"
POLICY_ID = "https://github.com/o/r/.github/workflows/release.yml@refs/heads/main"
OTHER_ID = "https://github.com/mallory/r/.github/workflows/release.yml@refs/heads/main"


@pytest.fixture(autouse=True)
def _fake_inspection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verifier, "default_deriver", lambda: fake_report)


def _policy(harness: Harness, path: Path, keyless: dict[str, str] | None) -> Path:
    doc = json.loads(trust_policy([harness.trusted], 1, []))
    if keyless is not None:
        doc["keyless"] = keyless
    path.write_text(json.dumps(doc))
    return path


def _flags(identity: str, issuer: str = ISSUER, instance: str | None = None) -> list[str]:
    flags = ["--certificate-identity", identity, "--certificate-oidc-issuer", issuer]
    return flags + (["--sigstore-instance", instance] if instance else [])


POLICY = {"identity": POLICY_ID, "issuer": ISSUER}
POLICY_STAGING = {**POLICY, "instance": "staging"}
# name -> (the policy's keyless, the flags, the outcome: the error id, exit code, and the
# identity a `signature.keyless` refusal names as required)
CASES: dict[str, tuple[dict[str, str] | None, list[str], tuple[str, int, str]]] = {
    "policy only": (POLICY, [], ("signature.keyless", 1, POLICY_ID)),
    "flag repeats the policy": (POLICY, _flags(POLICY_ID), ("signature.keyless", 1, POLICY_ID)),
    "flag repeats it, instance explicit": (
        POLICY,
        _flags(POLICY_ID, instance="production"),
        ("signature.keyless", 1, POLICY_ID),
    ),
    "flag repeats a staging policy, instance from the policy": (
        POLICY_STAGING,
        _flags(POLICY_ID),
        ("signature.keyless", 1, POLICY_ID),
    ),
    "flag names another identity": (POLICY, _flags(OTHER_ID), ("keyless.identity-conflict", 2, "")),
    "flag names another issuer": (
        POLICY,
        _flags(POLICY_ID, "https://accounts.example.com"),
        ("keyless.identity-conflict", 2, ""),
    ),
    "flag names another instance": (
        POLICY,
        _flags(POLICY_ID, instance="staging"),
        ("keyless.identity-conflict", 2, ""),
    ),
    "no keyless in the policy: the flag adds it": (
        None,
        _flags(OTHER_ID),
        ("signature.keyless", 1, OTHER_ID),
    ),
    "no keyless anywhere": (None, [], ("", 0, "")),
}


@pytest.mark.parametrize(("keyless", "flags", "outcome"), CASES.values(), ids=CASES.keys())
def test_a_flag_narrows_the_policy_keyless_identity(
    pristine: tuple[Harness, Path],
    tmp_path: Path,
    keyless: dict[str, str] | None,
    flags: list[str],
    outcome: tuple[str, int, str],
) -> None:
    harness, bundle = pristine
    error_id, code, required = outcome
    got, result, err = verify_json(bundle, _policy(harness, tmp_path / "p.json", keyless), *flags)
    if not error_id:
        assert (got, result["ok"]) == (0, True), err
        return
    assert (got, result["error"]["id"], result["error"]["exit_code"]) == (code, error_id, code)
    if error_id == "keyless.identity-conflict":
        assert result["error"]["step"] is None and result["steps"] == []  # before any step
        assert POLICY_ID in result["error"]["message"]
    else:
        assert result["error"]["step"] == 2
        assert f"a keyless signature by {required!r} is required" in result["error"]["message"]


def test_the_conflict_without_json_is_a_typed_usage_error(
    pristine: tuple[Harness, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    harness, bundle = pristine
    policy = _policy(harness, tmp_path / "p.json", POLICY)
    argv = ["bundle", str(bundle), "--trusted-keys", str(policy), *_flags(OTHER_ID)]
    assert verify_main(argv) == 2
    assert "error[keyless.identity-conflict]" in capsys.readouterr().err


def test_verify_bundle_itself_refuses_a_wider_identity(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    """The library call narrows the same way (a caller cannot replace the policy's identity)."""
    harness, bundle = pristine
    root = load_trust_root(_policy(harness, tmp_path / "p.json", POLICY))
    now = int(time.time())
    check = verifier.BundleVerifier(root)
    with pytest.raises(KeylessIdentityConflict):
        check.verify(
            bundle,
            verifier.Requirements(
                now, allow_dev_key=True, keyless=KeylessIdentity(OTHER_ID, ISSUER)
            ),
        )
    with pytest.raises(KeylessRefused, match=POLICY_ID):
        check.verify(
            bundle,
            verifier.Requirements(
                now, allow_dev_key=True, keyless=KeylessIdentity(POLICY_ID, ISSUER)
            ),
        )
