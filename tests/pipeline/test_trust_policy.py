"""`trust-policy` from a v2 policy keeps every field of it (issue 36, item 3): the output never
trusts more than its input. The round trip is generic: a fixture sets every field of the v2
model (`test_the_fixture_sets_every_field` fails when a new field is left at its default), and
`trust-policy --keys P.json` must write P again, so a field the command drops fails.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import BaseModel

from pipeline.cli import main as release_main
from verify.bundle.trusted_keys import (
    load_trust_root,
    trust_policy_json,
    trusted_key_entry,
    trusted_keys_json,
)
from verify.formats.trusted_keys import (
    KeylessRule,
    KeyRole,
    RevokedKey,
    SigningRule,
    TrustedKeyEntryV2,
    TrustedKeysFileV2,
)

START = datetime(2026, 1, 1, tzinfo=UTC)


def _entry(name: str, role: KeyRole = "release", window: bool = True) -> TrustedKeyEntryV2:
    private = Ed25519PrivateKey.from_private_bytes(name.encode().ljust(32, b"\0"))
    v1 = trusted_key_entry(private.public_key(), role, START + timedelta(days=700))
    return TrustedKeyEntryV2(**v1.model_dump(), not_before=START if window else None)


def _full() -> TrustedKeysFileV2:
    """A v2 policy with every field set away from its default: per-document rules that differ
    (keys, thresholds), a key in no rule, windows, a development key, a revocation and a
    keyless identity on the staging instance."""
    a, b = _entry("alice"), _entry("bob", "development")
    c, d = _entry("carol", window=False), _entry("dora")
    keys = sorted([a, b, c, d], key=lambda e: e.keyid)
    return TrustedKeysFileV2.model_validate(
        {
            "schema": "tinyrustlm.trusted-keys.v2",
            "keys": keys,
            "policy": {
                "manifest": SigningRule(keyids=sorted([a.keyid, b.keyid]), threshold=2),
                "provenance": SigningRule(keyids=sorted([a.keyid, c.keyid]), threshold=1),
            },
            "revoked": [RevokedKey(keyid=c.keyid, reason="laptop stolen")],
            "keyless": KeylessRule(
                identity="https://github.com/o/r/.github/workflows/release.yml@refs/heads/main",
                issuer="https://token.actions.githubusercontent.com",
                instance="staging",
            ),
        }
    )


def _unset(model: BaseModel, where: str = "") -> set[str]:
    """Fields of `model` (and, recursively, of the models it holds) left at their default; a
    field of a list's or dict's models counts as set when any one of them sets it."""
    unset: set[str] = set()
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        if not info.is_required() and value == info.get_default(call_default_factory=True):
            unset.add(where + name)
        items = list(value.values()) if isinstance(value, dict) else value
        items = items if isinstance(items, list) else [items]
        nested = [_unset(v, f"{where}{name}.") for v in items if isinstance(v, BaseModel)]
        if nested:
            unset |= set.intersection(*nested)
    return unset


def test_the_fixture_sets_every_field() -> None:
    assert _unset(_full()) == set(), "set these fields in _full() so the round trip covers them"


def _write(path: Path, doc: TrustedKeysFileV2) -> Path:
    path.write_bytes(trust_policy_json(doc))
    return path


def _run(tmp_path: Path, *args: str) -> tuple[int, Path]:
    out = tmp_path / "out.json"
    return release_main(["trust-policy", *args, "--out", str(out)]), out


def _read(path: Path) -> TrustedKeysFileV2:
    return TrustedKeysFileV2.model_validate_json(path.read_bytes())


def test_a_v2_policy_round_trips_every_field(tmp_path: Path) -> None:
    policy = _write(tmp_path / "p.json", _full())
    code, out = _run(tmp_path, "--keys", str(policy))
    assert code == 0
    assert _read(out) == _full()
    assert out.read_bytes() == policy.read_bytes()
    # and so the verifier reads the same trust from it
    before, after = load_trust_root(policy), load_trust_root(out)
    assert (after.rules, after.revoked, after.keyless) == (
        before.rules,
        before.revoked,
        before.keyless,
    )


def test_a_v1_key_joins_every_rule_and_nothing_else_changes(tmp_path: Path) -> None:
    eve = _entry("eve", window=False)
    v1 = tmp_path / "eve.trusted-keys.json"
    v1.write_bytes(trusted_keys_json([eve.model_copy(update={"not_before": None})]))
    code, out = _run(tmp_path, "--keys", str(_write(tmp_path / "p.json", _full())), str(v1))
    assert code == 0
    full = _full()
    rules = {
        doc: SigningRule(keyids=sorted([*rule.keyids, eve.keyid]), threshold=rule.threshold)
        for doc, rule in full.policy.items()
    }
    keys = sorted([*full.keys, eve], key=lambda e: e.keyid)
    assert _read(out) == full.model_copy(update={"keys": keys, "policy": rules})


def test_threshold_sets_every_document_and_keeps_the_rest(tmp_path: Path) -> None:
    policy = _write(tmp_path / "p.json", _full())
    code, out = _run(tmp_path, "--keys", str(policy), "--threshold", "1")
    assert code == 0
    full = _full()
    rules = {d: r.model_copy(update={"threshold": 1}) for d, r in full.policy.items()}
    assert _read(out) == full.model_copy(update={"policy": rules})


def test_revoke_adds_to_the_policy_revocations(tmp_path: Path) -> None:
    policy = _write(tmp_path / "p.json", _full())
    dora = _entry("dora").keyid
    code, out = _run(tmp_path, "--keys", str(policy), "--revoke", f"{dora}=left")
    assert code == 0
    full = _full()
    revoked = [*full.revoked, RevokedKey(keyid=dora, reason="left")]
    assert _read(out) == full.model_copy(update={"revoked": revoked})


def _refused(capsys: pytest.CaptureFixture[str], code: int, words: str) -> None:
    err = capsys.readouterr().err
    assert code == 3 and err.startswith("error[trust-policy.invalid]"), err
    assert words in err


def test_a_key_revoked_again_for_another_reason_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = _write(tmp_path / "p.json", _full())
    carol = _entry("carol").keyid
    code, _ = _run(tmp_path, "--keys", str(policy), "--revoke", f"{carol}=another reason")
    _refused(capsys, code, "revoked twice with different reasons")


def test_two_v2_policies_that_disagree_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    full = _full()
    assert full.keyless is not None
    other = full.model_copy(
        update={"keyless": full.keyless.model_copy(update={"identity": "someone@example.com"})}
    )
    first, second = _write(tmp_path / "a.json", full), _write(tmp_path / "b.json", other)
    code, _ = _run(tmp_path, "--keys", str(first), str(second))
    _refused(capsys, code, "disagree on 'keyless'")


def test_without_a_v2_input_the_threshold_is_needed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    v1 = tmp_path / "alice.trusted-keys.json"
    v1.write_bytes(trusted_keys_json([_entry("alice").model_copy(update={"not_before": None})]))
    code, _ = _run(tmp_path, "--keys", str(v1))
    _refused(capsys, code, "--threshold K is needed")
    code, out = _run(tmp_path, "--keys", str(v1), "--threshold", "1")
    assert code == 0 and json.loads(out.read_text())["policy"]["manifest"]["threshold"] == 1
