"""Every way of tampering with a bundle gives its own error id, exit 1, and no traceback.

Each case copies the pristine bundle, changes one thing, and runs the real CLI entry point
(`tinyrustlm-verify bundle ...`) in-process with the fake report deriver.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pipeline.documents.keys import generate_key_files
from pipeline.documents.sign import sign_to_sigstore_bundle
from tests.harness.release import (
    VERSION,
    Harness,
    copy_pristine,
    fake_report,
    repack,
    verify_json,
)
from verify.bundle import verifier
from verify.bundle.step_titles import STEP_TITLES
from verify.bundle.trusted_keys import trusted_key_entry, trusted_keys_json
from verify.canonical import canonical_json
from verify.cli import main as verify_main
from verify.formats.manifest import MANIFEST_PAYLOAD_TYPE
from verify.formats.report import VerificationReport

TARBALL = f"tinyrustlm-{VERSION}.tar.gz"


@pytest.fixture(autouse=True)
def _fake_inspection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verifier, "default_deriver", lambda: fake_report)


def flip(path: Path) -> None:
    """Change one byte near the middle; text stays text of the same character class."""
    data = bytearray(path.read_bytes())
    # a tarball: its CRC-32 byte (a flip mid-deflate may fail as corrupt data, a wrong CRC or
    # an overlong stream depending on the key's random bytes; the fuzz campaign covers those)
    at = len(data) - 8 if path.name.endswith(".gz") else len(data) // 2
    text = path.suffix in (".json", "") and all(b < 0x80 for b in data)
    if not text or path.name.endswith((".wasm", ".gz")) or path.parent.name == "artifacts":
        data[at] ^= 0x01
    else:
        while not chr(data[at]).isalnum():
            at += 1
        c = chr(data[at])
        for alphabet in ("0123456789", "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"):
            if c in alphabet:
                data[at] = ord(alphabet[(alphabet.index(c) + 1) % len(alphabet)])
    path.write_bytes(bytes(data))


# file in the bundle (glob) -> the error id flipping one of its bytes must give
FLIP_CASES = [
    ("artifacts/runtime.scalar-wasm32.*.wasm", "files.digest-mismatch"),
    ("artifacts/runtime.simd128-wasm32.*.wasm", "files.digest-mismatch"),
    ("artifacts/runtime.simd128-threads-wasm32.*.wasm", "files.digest-mismatch"),
    ("artifacts/tinyrustlm.x86_64-unknown-linux-gnu.*", "files.digest-mismatch"),
    ("js/host.js", "files.digest-mismatch"),
    ("js/loader.js", "files.digest-mismatch"),
    ("manifest.json", "manifest.not-signed-bytes"),
    ("manifest.sigstore.json", "signature.invalid"),
    ("provenance.sigstore.json", "signature.invalid"),
    ("sbom.cdx.json", "provenance.subjects"),
    ("verification-report.json", "provenance.subjects"),
    ("report.html", "provenance.subjects"),
    ("SHA256SUMS", "checksums.mismatch"),
    (TARBALL, "tarball.gzip"),
]


@pytest.mark.parametrize(("pattern", "error_id"), FLIP_CASES, ids=[c[0] for c in FLIP_CASES])
def test_flip_a_byte(
    pristine: tuple[Harness, Path], tmp_path: Path, pattern: str, error_id: str
) -> None:
    bundle = copy_pristine(pristine, tmp_path)
    (target,) = bundle.glob(pattern)
    before = target.read_bytes()
    flip(target)
    assert target.read_bytes() != before
    code, result, _ = verify_json(bundle, pristine[0].trusted)
    assert (code, result["ok"], result["error"]["id"]) == (1, False, error_id)


def test_every_bundle_file_has_a_flip_case(pristine: tuple[Harness, Path]) -> None:
    bundle = pristine[1]
    covered = {p for pattern, _ in FLIP_CASES for p in bundle.glob(pattern)}
    assert covered == {p for p in bundle.rglob("*") if p.is_file()}


def _resign(
    bundle: Path,
    name: str,
    key: Ed25519PrivateKey,
    payload_type: str | None = None,
    payload: bytes | None = None,
) -> None:
    doc = json.loads((bundle / name).read_text())
    envelope = doc["dsseEnvelope"]
    body = payload if payload is not None else base64.b64decode(envelope["payload"])
    (bundle / name).write_bytes(
        sign_to_sigstore_bundle(key, payload_type or envelope["payloadType"], body)
    )


def _edit_json(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def _drop_artifact(b: Path, h: Harness) -> Path:
    next(b.glob("artifacts/*.wasm")).unlink()
    return h.trusted


def _drop_sbom(b: Path, h: Harness) -> Path:
    (b / "sbom.cdx.json").unlink()
    return h.trusted


def _drop_signature(b: Path, h: Harness) -> Path:
    (b / "provenance.sigstore.json").unlink()
    return h.trusted


def _drop_tarball(b: Path, h: Harness) -> Path:
    (b / TARBALL).unlink()
    return h.trusted


def _add_file(b: Path, h: Harness) -> Path:
    (b / "js/extra.js").write_text("export const evil = 1;\n")
    return h.trusted


def _swap_artifacts(b: Path, h: Harness) -> Path:
    one, two = sorted(b.glob("artifacts/*.wasm"))[:2]
    one_bytes, two_bytes = one.read_bytes(), two.read_bytes()
    one.write_bytes(two_bytes)
    two.write_bytes(one_bytes)
    return h.trusted


def _replace_signature(b: Path, h: Harness) -> Path:
    other = json.loads((b / "provenance.sigstore.json").read_text())
    sig = other["dsseEnvelope"]["signatures"][0]["sig"]
    _edit_json(
        b / "manifest.sigstore.json", lambda d: d["dsseEnvelope"]["signatures"][0].update(sig=sig)
    )
    return h.trusted


def _untrusted_key(b: Path, h: Harness) -> Path:
    _resign(b, "manifest.sigstore.json", Ed25519PrivateKey.generate())
    return h.trusted


def _changed_hint(b: Path, h: Harness) -> Path:
    _edit_json(
        b / "manifest.sigstore.json",
        lambda d: d["verificationMaterial"]["publicKey"].update(hint="0" * 64),
    )
    return h.trusted


def _payload_type(b: Path, h: Harness) -> Path:
    from pipeline.documents.keys import load_private_key

    key = load_private_key(h.key.private_pem)
    _resign(b, "manifest.sigstore.json", key, payload_type="application/json")
    return h.trusted


def _key_expired(b: Path, h: Harness) -> Path:
    from pipeline.documents.keys import load_private_key

    public = load_private_key(h.key.private_pem).public_key()
    past = datetime.now(UTC) - timedelta(days=1)
    path = b.parent / "expired-keys.json"
    path.write_bytes(trusted_keys_json([trusted_key_entry(public, "release", past)]))
    return path


def _role_mismatch(b: Path, h: Harness) -> Path:
    from pipeline.documents.keys import load_private_key

    public = load_private_key(h.key.private_pem).public_key()
    path = b.parent / "dev-role.json"
    later = datetime.now(UTC) + timedelta(days=30)
    path.write_bytes(trusted_keys_json([trusted_key_entry(public, "development", later)]))
    return path


def _extra_signature(b: Path, h: Harness) -> Path:
    doc = json.loads((b / "manifest.sigstore.json").read_text())
    doc["dsseEnvelope"]["signatures"].append(doc["dsseEnvelope"]["signatures"][0])
    (b / "manifest.sigstore.json").write_text(json.dumps(doc))
    return h.trusted


def _with_tlog_entry(b: Path, h: Harness) -> Path:
    _edit_json(
        b / "manifest.sigstore.json", lambda d: d["verificationMaterial"].update(tlogEntries=[{}])
    )
    return h.trusted


def _checksum_of_other_bytes(b: Path, h: Harness) -> Path:
    """A well-formed line whose digest is the SHA-256 of other bytes: only the digest
    comparison can reject it (a non-hex digit would stop at the parser)."""
    lines = (b / "SHA256SUMS").read_text().splitlines(keepends=True)
    digest, sep, name = lines[0].partition("  ")
    other = hashlib.sha256(b"other bytes than " + name.encode()).hexdigest()
    assert other != digest and len(other) == len(digest)
    lines[0] = other + sep + name
    (b / "SHA256SUMS").write_text("".join(lines))
    return h.trusted


def _signing_key(h: Harness) -> Ed25519PrivateKey:
    from pipeline.documents.keys import load_private_key

    return load_private_key(h.key.private_pem)


def _wrong_build_id(b: Path, h: Harness) -> Path:
    """A manifest re-signed by the release key whose build id is not what the files give."""
    manifest = json.loads((b / "manifest.json").read_bytes())
    manifest["build_id"] = hashlib.sha256(b"other files").hexdigest()
    payload = canonical_json(manifest)
    (b / "manifest.json").write_bytes(payload)
    _resign(b, "manifest.sigstore.json", _signing_key(h), payload=payload)
    return h.trusted


def _reattest_report(b: Path, h: Harness, change: Callable[[dict[str, Any]], None]) -> None:
    """Change verification-report.json, then re-sign the provenance over its new digest and
    repack, as a builder with the release key would: only step 12 can refuse it."""
    report = json.loads((b / "verification-report.json").read_bytes())
    change(report)
    data = canonical_json(report) + b"\n"
    (b / "verification-report.json").write_bytes(data)
    envelope = json.loads((b / "provenance.sigstore.json").read_bytes())["dsseEnvelope"]
    statement = json.loads(base64.b64decode(envelope["payload"]))
    for subject in statement["subject"]:
        if subject["name"] == "verification-report.json":
            subject["digest"]["sha256"] = hashlib.sha256(data).hexdigest()
    _resign(b, "provenance.sigstore.json", _signing_key(h), payload=canonical_json(statement))
    repack(b)


def _report_field_wrong_type(b: Path, h: Harness) -> Path:
    _reattest_report(b, h, lambda r: r["artifacts"][0]["findings"][0].update(ok="yes"))
    return h.trusted


def _report_without_verifier(b: Path, h: Harness) -> Path:
    _reattest_report(b, h, lambda r: r.pop("verifier"))
    return h.trusted


def _report_lane_twice(b: Path, h: Harness) -> Path:
    _reattest_report(b, h, lambda r: r["artifacts"].append(r["artifacts"][0]))
    return h.trusted


def _report_other_evidence(b: Path, h: Harness) -> Path:
    _reattest_report(b, h, lambda r: r["artifacts"][0]["findings"][0].update(evidence="seen"))
    return h.trusted


def _report_without_a_lane(b: Path, h: Harness) -> Path:
    _reattest_report(b, h, lambda r: r["artifacts"].pop())
    return h.trusted


# name -> (tamper, extra CLI args, error id)
CASES: dict[str, tuple[Callable[[Path, Harness], Path], tuple[str, ...], str]] = {
    "drop-artifact": (_drop_artifact, (), "files.missing"),
    "drop-sbom": (_drop_sbom, (), "files.missing"),
    "drop-signature": (_drop_signature, (), "files.missing"),
    "drop-tarball": (_drop_tarball, (), "files.missing"),
    "add-file": (_add_file, (), "files.extra"),
    "swap-artifacts": (_swap_artifacts, (), "files.swapped"),
    "replace-signature": (_replace_signature, (), "signature.invalid"),
    "untrusted-key": (_untrusted_key, (), "signature.untrusted-key"),
    "hint-mismatch": (_changed_hint, (), "signature.hint-mismatch"),
    "payload-type": (_payload_type, (), "signature.payload-type"),
    "key-expired": (_key_expired, (), "signature.key-expired"),
    "role-mismatch": (_role_mismatch, ("--allow-dev-key",), "manifest.key-class"),
    "role-development": (_role_mismatch, (), "signature.development-key"),
    "same-key-signs-twice": (_extra_signature, (), "signature.duplicate-key"),
    "tlog-entry": (_with_tlog_entry, (), "signature.malformed"),
    "sha256sums-digest-of-other-bytes": (_checksum_of_other_bytes, (), "checksums.mismatch"),
    "build-id-not-the-files": (_wrong_build_id, (), "manifest.build-id"),
    "report-field-wrong-type": (_report_field_wrong_type, (), "report.invalid"),
    "report-field-missing": (_report_without_verifier, (), "report.invalid"),
    "report-lane-twice": (_report_lane_twice, (), "report.invalid"),
    "report-other-evidence": (_report_other_evidence, (), "report.mismatch"),
    "report-lane-missing": (_report_without_a_lane, (), "report.mismatch"),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_tampering(pristine: tuple[Harness, Path], tmp_path: Path, case: str) -> None:
    tamper, extra, error_id = CASES[case]
    bundle = copy_pristine(pristine, tmp_path)
    trusted = tamper(bundle, pristine[0])
    code, result, _ = verify_json(bundle, trusted, *extra)
    assert (code, result["error"]["id"]) == (1, error_id)


@pytest.mark.parametrize(
    ("case", "where"),
    [
        ("report-field-wrong-type", "verification-report.json: artifacts.0.findings.0.ok"),
        ("report-field-missing", "verification-report.json: verifier"),
        ("report-lane-twice", "verification-report.json: artifacts.4.lane"),
    ],
    ids=["wrong-type", "missing", "lane-twice"],
)
def test_malformed_report_names_the_field(
    pristine: tuple[Harness, Path], tmp_path: Path, case: str, where: str
) -> None:
    """A shipped report that is not a VerificationReport is refused at step 12 by its model,
    naming the file and the field (never a loose walk that skips what it does not know)."""
    bundle = copy_pristine(pristine, tmp_path)
    CASES[case][0](bundle, pristine[0])
    code, result, _ = verify_json(bundle, pristine[0].trusted)
    assert (code, result["error"]["id"], result["error"]["where"]) == (1, "report.invalid", where)
    assert result["error"]["step"] == 12


def test_pristine_copy_verifies(pristine: tuple[Harness, Path], tmp_path: Path) -> None:
    """The control for every case above: an untouched copy passes through the same CLI."""
    bundle = copy_pristine(pristine, tmp_path)
    code, result, _ = verify_json(bundle, pristine[0].trusted)
    assert (code, result["ok"], len(result["steps"])) == (0, True, len(STEP_TITLES))


def test_expired_manifest(pristine: tuple[Harness, Path], tmp_path: Path) -> None:
    h, _ = pristine
    bundle = copy_pristine(pristine, tmp_path)
    expires = json.loads((bundle / "manifest.json").read_text())["expires_epoch"]
    code, result, _ = verify_json(bundle, h.trusted, "--at-epoch", str(expires))
    assert (code, result["error"]["id"]) == (1, "manifest.expired")
    code, _, _ = verify_json(bundle, h.trusted, "--at-epoch", str(expires - 1))
    assert code == 0


def test_dev_key_needs_allow_dev_key(harness: Harness, tmp_path: Path) -> None:
    bundle = harness.release(key_path=None, env={}).bundle
    assert bundle is not None
    trusted = harness.repo / ".dev-keys/development.trusted-keys.json"
    code, result, _ = verify_json(bundle, trusted)
    assert (code, result["error"]["id"]) == (1, "signature.development-key")
    code, result, _ = verify_json(bundle, trusted, "--allow-dev-key")
    assert (code, result["key_class"]) == (0, "development")


def test_report_is_rederived_with_verifiers_policy(
    pristine: tuple[Harness, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A verifier whose policy finds something the builder's did not rejects the bundle."""

    def stricter(artifacts: Any) -> VerificationReport:
        doc = fake_report(artifacts).model_dump(by_alias=True)
        doc["artifacts"][0]["findings"].append(
            {"id": "strict.extra", "ok": False, "evidence": "verifier-only rule"}
        )
        return VerificationReport.model_validate(doc)

    monkeypatch.setattr(verifier, "default_deriver", lambda: stricter)
    code, result, _ = verify_json(pristine[1], pristine[0].trusted)
    assert (code, result["error"]["id"]) == (1, "report.mismatch")


@pytest.mark.parametrize(
    ("content", "error_id"),
    [(b"not a tarball", "bundle.unreadable"), (None, "bundle.unreadable")],
    ids=["garbage-file", "no-such-path"],
)
def test_unreadable_input_exits_3(
    pristine: tuple[Harness, Path], tmp_path: Path, content: bytes | None, error_id: str
) -> None:
    path = tmp_path / "input.tar.gz"
    if content is not None:
        path.write_bytes(content)
    code, result, _ = verify_json(path, pristine[0].trusted)
    assert (code, result["error"]["id"]) == (3, error_id)


@pytest.mark.parametrize(
    "text",
    ['{"schema": "tinyrustlm.trusted-keys.v1", "keys": []}', "{", '{"keys": 1}'],
    ids=["empty", "not-json", "wrong-shape"],
)
def test_bad_trusted_keys_exit_3(pristine: tuple[Harness, Path], tmp_path: Path, text: str) -> None:
    path = tmp_path / "trusted.json"
    path.write_text(text)
    code, result, _ = verify_json(pristine[1], path)
    assert (code, result["error"]["id"]) == (3, "trusted-keys.invalid")
    assert result["error"]["step"] is None and result["steps"] == []


def test_keyid_must_be_the_keys_digest(pristine: tuple[Harness, Path], tmp_path: Path) -> None:
    doc = json.loads(pristine[0].trusted.read_text())
    doc["keys"][0]["keyid"] = "f" * 64
    path = tmp_path / "trusted.json"
    path.write_text(json.dumps(doc))
    code, result, _ = verify_json(pristine[1], path)
    assert (code, result["error"]["id"]) == (3, "trusted-keys.invalid")


def test_human_output_names_the_failed_step(
    pristine: tuple[Harness, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = copy_pristine(pristine, tmp_path)
    (bundle / "js/extra.js").write_text("x")
    code = verify_main(["bundle", str(bundle), "--trusted-keys", str(pristine[0].trusted)])
    out, err = capsys.readouterr()
    assert code == 1
    assert "[ 7/15] no missing or extra files: FAILED" in out
    assert err.startswith("error[files.extra]:") and "js/extra.js" in err


def test_signed_payload_is_used_not_reserialised(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    """A re-serialised (non-canonical) but correctly signed manifest is refused."""
    from pipeline.documents.keys import load_private_key

    h, _ = pristine
    bundle = copy_pristine(pristine, tmp_path)
    pretty = json.dumps(json.loads((bundle / "manifest.json").read_text()), indent=1).encode()
    (bundle / "manifest.json").write_bytes(pretty)
    _resign(
        bundle,
        "manifest.sigstore.json",
        load_private_key(h.key.private_pem),
        MANIFEST_PAYLOAD_TYPE,
        pretty,
    )
    code, result, _ = verify_json(bundle, h.trusted)
    assert (code, result["error"]["id"]) == (1, "manifest.invalid")


def test_other_trusted_key_file_does_not_vouch(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    other = generate_key_files(tmp_path / "other", "other", "release")
    code, result, _ = verify_json(pristine[1], other.trusted_keys)
    assert (code, result["error"]["id"]) == (1, "signature.untrusted-key")
