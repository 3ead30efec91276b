"""Threshold co-signing (issue 23): `sign` adds a maintainer's signature, the trusted-keys v2
policy says how many distinct keys must have signed, and `verify bundle` counts them.

The bundle is the release harness's pristine one (real signing, real bundle writer); the
second and third maintainers are real `keygen` keys; the policy is `trust-policy`'s file.
Every verification runs the real CLI (`tinyrustlm-verify bundle --json`) in-process.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.cli import main as release_main
from pipeline.documents.keys import KeyFiles, generate_key_files, load_private_key
from pipeline.documents.sign import add_signature
from pipeline.documents.trust_policy import trust_policy
from pipeline.release.cosign import CoSignRefused, CoSignTrust, CoSignUnverified, cosign_bundle
from tests.harness.release import Harness, fake_report, verify_json
from verify.bundle import verifier
from verify.bundle.errors import TrustedKeysInvalid
from verify.bundle.trusted_keys import load_trust_root, trust_root_of
from verify.formats.trusted_keys import RevokedKey

SIGNATURE_FILES = ("manifest.sigstore.json", "provenance.sigstore.json")


@pytest.fixture(autouse=True)
def _fake_inspection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verifier, "default_deriver", lambda: fake_report)


@dataclass(frozen=True)
class Maintainers:
    bundle: Path  # a private copy: dist/tinyrustlm-<version>/
    a: KeyFiles  # made the release
    b: KeyFiles
    c: KeyFiles


@pytest.fixture
def team(pristine: tuple[Harness, Path], tmp_path: Path) -> Maintainers:
    harness, bundle = pristine
    copy = tmp_path / "dist" / bundle.name
    shutil.copytree(bundle, copy)
    keys = tmp_path / "keys"
    return Maintainers(
        copy,
        harness.key,
        generate_key_files(keys, "bob", "release"),
        generate_key_files(keys, "carol", "release"),
    )


def trust_of(team: Maintainers) -> CoSignTrust:
    """What `sign` verifies against: the release key's own trusted-keys file."""
    return CoSignTrust(load_trust_root(team.a.trusted_keys), allow_dev_key=True)


def policy(tmp_path: Path, keys: list[KeyFiles], threshold: int, **edits: object) -> Path:
    """A `trust-policy` v2 file; `edits` change fields of its JSON (windows, revocations)."""
    data = trust_policy([k.trusted_keys for k in keys], threshold, [])
    doc = json.loads(data)
    for entry in doc["keys"]:
        entry.update(edits.get(entry["keyid"], {}))
    if "revoked" in edits:
        doc["revoked"] = edits["revoked"]
    path = tmp_path / f"policy-{len(list(tmp_path.glob('policy-*')))}.json"
    path.write_text(json.dumps(doc))
    return path


def files_of(bundle: Path) -> dict[str, bytes]:
    return {
        p.relative_to(bundle).as_posix(): p.read_bytes() for p in bundle.rglob("*") if p.is_file()
    }


def test_threshold_met_by_two_maintainers(team: Maintainers, tmp_path: Path) -> None:
    cosign_bundle(team.bundle, team.b.private_pem, trust=trust_of(team))
    code, result, err = verify_json(team.bundle, policy(tmp_path, [team.a, team.b, team.c], 2))
    assert code == 0, err
    assert result["ok"]
    step2 = result["steps"][1]["detail"]
    assert "manifest 2 of 2" in step2 and "provenance 2 of 2" in step2
    for key in (team.a, team.b):
        assert key.keyid[:16] in step2
    assert sorted(result["keyids"]) == sorted([team.a.keyid, team.b.keyid])


def test_short_by_one_names_how_many_of_how_many(team: Maintainers, tmp_path: Path) -> None:
    cosign_bundle(team.bundle, team.b.private_pem, trust=trust_of(team))
    code, result, _ = verify_json(team.bundle, policy(tmp_path, [team.a, team.b, team.c], 3))
    assert (code, result["error"]["id"]) == (1, "signature.threshold")
    assert "2 of 3 required signatures on the manifest" in result["error"]["message"]
    # the release key alone, threshold 2: one short
    code, result, _ = verify_json(team.bundle, policy(tmp_path, [team.a, team.c], 2))
    assert (code, result["error"]["id"]) == (1, "signature.threshold")
    assert "1 of 2 required" in result["error"]["message"]
    assert "not in the trusted-keys file" in result["error"]["message"]  # bob's is not counted


def test_the_same_key_twice_is_one_vote(team: Maintainers, tmp_path: Path) -> None:
    with pytest.raises(CoSignRefused, match="already signed"):
        cosign_bundle(team.bundle, team.a.private_pem, trust=trust_of(team))
    # a hand-made envelope with the release key's signature twice: refused, never 2 of 2
    for name in SIGNATURE_FILES:
        doc = json.loads((team.bundle / name).read_text())
        doc["dsseEnvelope"]["signatures"] *= 2
        (team.bundle / name).write_text(json.dumps(doc))
    code, result, _ = verify_json(team.bundle, policy(tmp_path, [team.a, team.b], 2))
    assert (code, result["error"]["id"]) == (1, "signature.duplicate-key")


def test_a_revoked_key_does_not_count(team: Maintainers, tmp_path: Path) -> None:
    # one signature, threshold 1, its key revoked: the signature's own error
    revoked = [{"keyid": team.a.keyid, "reason": "lost"}]
    code, result, _ = verify_json(team.bundle, policy(tmp_path, [team.a], 1, revoked=revoked))
    assert (code, result["error"]["id"]) == (1, "signature.key-revoked")
    cosign_bundle(team.bundle, team.b.private_pem, trust=trust_of(team))
    revoked = [{"keyid": team.b.keyid, "reason": "laptop stolen"}]
    code, result, _ = verify_json(
        team.bundle, policy(tmp_path, [team.a, team.b], 2, revoked=revoked)
    )
    assert (code, result["error"]["id"]) == (1, "signature.threshold")
    assert (
        "1 of 2" in result["error"]["message"]
        and "revoked (laptop stolen)" in result["error"]["message"]
    )
    assert verify_json(team.bundle, policy(tmp_path, [team.a, team.b], 2))[0] == 0


def _iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_key_counts_only_inside_its_window(team: Maintainers, tmp_path: Path) -> None:
    cosign_bundle(team.bundle, team.b.private_pem, trust=trust_of(team))
    start = int(time.time()) + 100
    end = start + 1000
    window = {team.b.keyid: {"not_before": _iso(start), "not_after": _iso(end)}}
    trusted = policy(tmp_path, [team.a, team.b], 2, **window)
    for at, expected in ((start - 1, "from epoch"), (end, "until epoch")):
        code, result, _ = verify_json(team.bundle, trusted, "--at-epoch", str(at))
        assert (code, result["error"]["id"]) == (1, "signature.threshold"), at
        assert "1 of 2" in result["error"]["message"] and expected in result["error"]["message"]
    for at in (start, end - 1):  # [not_before, not_after): both boundary seconds inside
        code, result, err = verify_json(team.bundle, trusted, "--at-epoch", str(at))
        assert code == 0, (at, err)


def test_one_signature_not_yet_valid_is_refused_with_its_own_id(
    team: Maintainers, tmp_path: Path
) -> None:
    """Threshold 1, one signature: the signature's own reason is the error (not "0 of 1")."""
    start = int(time.time()) + 1000
    later = {team.a.keyid: {"not_before": _iso(start), "not_after": _iso(start + 1000)}}
    trusted = policy(tmp_path, [team.a], 1, **later)
    code, result, _ = verify_json(team.bundle, trusted)
    assert (code, result["error"]["id"]) == (1, "signature.key-not-yet-valid")
    assert verify_json(team.bundle, trusted, "--at-epoch", str(start))[0] == 0  # the boundary


def test_one_signature_by_a_key_the_policy_does_not_allow(
    team: Maintainers, tmp_path: Path
) -> None:
    path = policy(tmp_path, [team.a, team.c], 1)
    doc = json.loads(path.read_text())
    doc["policy"]["manifest"] = {"keyids": [team.c.keyid], "threshold": 1}
    path.write_text(json.dumps(doc))
    code, result, _ = verify_json(team.bundle, path)
    assert (code, result["error"]["id"]) == (1, "signature.key-not-allowed")


def test_a_key_not_allowed_for_the_document(team: Maintainers, tmp_path: Path) -> None:
    cosign_bundle(team.bundle, team.b.private_pem, trust=trust_of(team))
    path = policy(tmp_path, [team.a, team.b, team.c], 2)
    doc = json.loads(path.read_text())
    doc["policy"]["provenance"] = {"keyids": [team.a.keyid], "threshold": 1}
    path.write_text(json.dumps(doc))
    assert verify_json(team.bundle, path)[0] == 0  # bob's provenance signature is ignored
    doc["policy"]["provenance"] = {"keyids": [team.a.keyid, team.c.keyid], "threshold": 2}
    path.write_text(json.dumps(doc))
    code, result, _ = verify_json(team.bundle, path)
    assert (code, result["error"]["id"]) == (1, "signature.threshold")
    assert "does not let it sign the provenance" in result["error"]["message"]


def test_cosigning_changes_only_signatures_and_what_derives_from_them(
    team: Maintainers, tmp_path: Path
) -> None:
    before = files_of(team.bundle)
    done = cosign_bundle(team.bundle, team.b.private_pem, trust=trust_of(team))
    after = files_of(team.bundle)
    tarball = next(n for n in before if n.endswith(".tar.gz"))
    changed = {n for n in before.keys() | after.keys() if before.get(n) != after.get(n)}
    assert changed == {*SIGNATURE_FILES, "SHA256SUMS", tarball} == set(done.rewritten)
    for name in SIGNATURE_FILES:
        old, new = (json.loads(d[name])["dsseEnvelope"] for d in (before, after))
        assert new["payload"] == old["payload"] and new["payloadType"] == old["payloadType"]
        assert old["signatures"][0] in new["signatures"] and len(new["signatures"]) == 2
    # order of signing does not matter: bob then carol == carol then bob, byte for byte
    cosign_bundle(team.bundle, team.c.private_pem, trust=trust_of(team))
    first = files_of(team.bundle)
    fresh = tmp_path / "fresh" / team.bundle.name
    for name, data in before.items():
        (fresh / name).parent.mkdir(parents=True, exist_ok=True)
        (fresh / name).write_bytes(data)
    cosign_bundle(fresh, team.c.private_pem, trust=trust_of(team))
    cosign_bundle(fresh, team.b.private_pem, trust=trust_of(team))
    assert files_of(fresh) == first


def test_a_cosignature_over_other_bytes_is_refused(team: Maintainers, tmp_path: Path) -> None:
    """A co-signer who changes one byte of the signed manifest and signs that: the release
    key's signature no longer verifies, so the bundle is refused, whoever else signed."""
    name = SIGNATURE_FILES[0]
    doc = json.loads((team.bundle / name).read_text())
    envelope = doc["dsseEnvelope"]
    payload = bytearray(base64.b64decode(envelope["payload"]))
    payload[payload.index(b'"version":"') + 11] ^= 0x01
    envelope["payload"] = base64.b64encode(bytes(payload)).decode()
    tampered = json.dumps(doc).encode()
    (team.bundle / name).write_bytes(
        add_signature(load_private_key(team.b.private_pem), tampered, name)
    )
    code, result, _ = verify_json(team.bundle, policy(tmp_path, [team.a, team.b], 2))
    assert (code, result["error"]["id"]) == (1, "signature.invalid")
    assert team.a.keyid[:16] in result["error"]["message"]


def test_sign_refuses_a_bundle_whose_checksums_do_not_match(team: Maintainers) -> None:
    sums = team.bundle / "SHA256SUMS"
    sums.write_bytes(sums.read_bytes().replace(b"  ", b"  ./", 1))
    before = hashlib.sha256(sums.read_bytes()).hexdigest()
    with pytest.raises(CoSignRefused, match="SHA256SUMS"):
        cosign_bundle(team.bundle, team.b.private_pem, trust=trust_of(team))
    assert hashlib.sha256(sums.read_bytes()).hexdigest() == before  # nothing rewritten


def test_sign_cli_output_and_refusal(team: Maintainers, capsys: pytest.CaptureFixture[str]) -> None:
    sign = ["sign", str(team.bundle), "--key", str(team.b.private_pem), *_trust_args(team)]
    assert release_main(sign) == 0
    out = capsys.readouterr().out
    assert "manifest.sigstore.json: 2 signature(s)" in out
    assert release_main(sign) == 1
    err = capsys.readouterr().err
    assert err.startswith("error[sign.refused]: key ") and "already signed" in err
    assert "Traceback" not in err


def test_a_policy_that_can_never_be_met_is_refused(team: Maintainers) -> None:
    data = trust_policy([team.a.trusted_keys], 1, [RevokedKey(keyid=team.b.keyid, reason="x")])
    trust_root_of(data, "ok")
    doc = json.loads(data)
    doc["policy"]["manifest"]["threshold"] = 2
    with pytest.raises(TrustedKeysInvalid, match="threshold 2 of 1 key"):
        trust_root_of(json.dumps(doc).encode(), "t")
    doc["policy"]["manifest"] = {"keyids": [team.b.keyid], "threshold": 1}
    with pytest.raises(TrustedKeysInvalid, match="not one of the file's keys"):
        trust_root_of(json.dumps(doc).encode(), "t")
    del doc["policy"]["manifest"]
    with pytest.raises(TrustedKeysInvalid, match="no signing rule for the manifest"):
        trust_root_of(json.dumps(doc).encode(), "t")


def test_trust_policy_cli(
    team: Maintainers, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "p.json"
    keys = ["--keys", str(team.a.trusted_keys), str(team.b.trusted_keys)]
    assert release_main(["trust-policy", *keys, "--threshold", "2", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["policy"]["manifest"]["threshold"] == 2
    assert release_main(["trust-policy", *keys, "--threshold", "3", "--out", str(out)]) == 3
    assert "threshold 3 of 2 key(s) can never be met" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse: exit 2, one line
        release_main(["trust-policy", *keys, "--threshold", "0", "--out", str(out)])
    assert "at least one key must sign" in capsys.readouterr().err


def test_the_conformance_matrix_takes_a_v2_policy_but_not_a_keyless_one(
    team: Maintainers, tmp_path: Path
) -> None:
    """js/loader.js reads trust policies (threshold, windows, revocations: the agreement is
    tests/js/loader/test_trust_agreement.py) but cannot verify a Sigstore keyless signature."""
    from pipeline.conformance.trust import TrustRefused, check_signed_manifest, load_trust

    cosign_bundle(team.bundle, team.b.private_pem, trust=trust_of(team))
    path = policy(tmp_path, [team.a, team.b], 2)
    trust, root = load_trust(path, allow_dev_key=False)
    assert trust.trusted_keys == json.loads(path.read_text())
    signers = check_signed_manifest(team.bundle, root, allow_dev_key=False)
    assert set(signers.split(", ")) == {team.a.keyid, team.b.keyid}
    doc = json.loads(path.read_text())
    doc["keyless"] = {"identity": "https://ci.example/wf", "issuer": "https://issuer.example"}
    path.write_text(json.dumps(doc))
    with pytest.raises(TrustRefused, match="cannot verify the keyless") as info:
        load_trust(path, allow_dev_key=False)
    assert info.value.error_id == "trusted-keys.invalid"
    load_trust(team.a.trusted_keys, allow_dev_key=False)  # v1: as before


# -- issue 36: `sign` verifies fully before it signs, and adds no file ----------------------
def _trust_args(team: Maintainers) -> list[str]:
    return ["--trusted-keys", str(team.a.trusted_keys), "--allow-dev-key"]


def _manifest_lists_a_wrong_digest(bundle: Path) -> None:
    """A listed file whose bytes are not the manifest's (SHA256SUMS and tarball re-derived,
    so only `verify bundle`'s own steps can tell)."""
    wasm = next(p for p in (bundle / "artifacts").iterdir() if p.suffix == ".wasm")
    wasm.write_bytes(wasm.read_bytes() + b"\0")
    _rederive(bundle)


def _extra_file(bundle: Path) -> None:
    (bundle / "notes.txt").write_text("not in the manifest\n")
    _rederive(bundle)


def _rederive(bundle: Path) -> None:
    from pipeline.release.bundle import bundle_contents
    from verify.formats.manifest import ModuleManifest

    manifest = ModuleManifest.model_validate_json((bundle / "manifest.json").read_bytes())
    tarball = f"{bundle.name}.tar.gz"
    files = {n: d for n, d in files_of(bundle).items() if n not in ("SHA256SUMS", tarball)}
    native = frozenset(a.url for a in manifest.native_artifacts)
    for name, data in bundle_contents(
        manifest.version, files, manifest.source_date_epoch, native
    ).items():
        (bundle / name).write_bytes(data)


BROKEN = {"wrong-digest": _manifest_lists_a_wrong_digest, "extra-file": _extra_file}


@pytest.mark.parametrize("damage", BROKEN.values(), ids=BROKEN.keys())
def test_sign_never_co_signs_a_bundle_verify_refuses(
    team: Maintainers, damage: Callable[[Path], None], capsys: pytest.CaptureFixture[str]
) -> None:
    damage(team.bundle)
    before = files_of(team.bundle)
    code, result, _ = verify_json(team.bundle, team.a.trusted_keys)
    assert code == 1  # the control: verify refuses it
    with pytest.raises(CoSignUnverified) as info:
        cosign_bundle(team.bundle, team.b.private_pem, trust=trust_of(team))
    assert result["error"]["id"] in info.value.message
    sign = ["sign", str(team.bundle), "--key", str(team.b.private_pem), *_trust_args(team)]
    assert release_main(sign) == 1
    assert capsys.readouterr().err.startswith("error[sign.unverified]: the bundle does not pass")
    assert files_of(team.bundle) == before  # not one byte signed or rewritten


def test_sign_verifies_against_the_trust_it_is_given(
    team: Maintainers, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bundle whose only signer the given trust does not hold is not co-signed either."""
    before = files_of(team.bundle)
    sign = ["sign", str(team.bundle), "--key", str(team.b.private_pem)]
    assert release_main([*sign, "--trusted-keys", str(team.c.trusted_keys)]) == 1
    assert "error[sign.unverified]" in capsys.readouterr().err
    assert files_of(team.bundle) == before
    assert release_main([*sign, "--trusted-keys", str(team.c.trusted_keys) + ".missing"]) == 3
    assert "error[sign.trusted-keys]" in capsys.readouterr().err


def test_sign_below_a_threshold_is_how_the_threshold_is_reached(
    team: Maintainers, tmp_path: Path
) -> None:
    """Thresholds count as 1 while co-signing: a 2-of-2 release signed once is co-signed."""
    two = policy(tmp_path, [team.a, team.b], 2)
    assert verify_json(team.bundle, two)[0] == 1  # short of its threshold
    cosign_bundle(team.bundle, team.b.private_pem, trust=CoSignTrust(load_trust_root(two), True))
    assert verify_json(team.bundle, two)[0] == 0


TARGETS = {
    "tarball": lambda bundle: bundle / f"{bundle.name}.tar.gz",
    "folder-inside": lambda bundle: bundle / "artifacts",
    "manifest": lambda bundle: bundle / "manifest.json",
}


@pytest.mark.parametrize("target", TARGETS.values(), ids=TARGETS.keys())
def test_sign_on_anything_but_the_bundle_folder_leaves_nothing(
    team: Maintainers, target: Callable[[Path], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    before = files_of(team.bundle)
    around = sorted(p.name for p in team.bundle.parent.iterdir())
    sign = ["sign", str(target(team.bundle)), "--key", str(team.b.private_pem)]
    assert release_main([*sign, *_trust_args(team)]) == 3
    assert capsys.readouterr().err.startswith("error[sign.not-a-bundle]")
    assert files_of(team.bundle) == before  # no .release.lock (or anything) inside
    assert sorted(p.name for p in team.bundle.parent.iterdir()) == around
    code, _, _ = verify_json(team.bundle, team.a.trusted_keys)
    assert code == 0
