"""The matrix runs every JS lane through js/loader.js (integration, on a real release).

node is the cheap engine for most of it: each row's receipt is the loader's capability receipt
for that lane; a manifest whose signature does not verify, an untrusted key, a development key
not allowed give failed rows with the loader's error code, a lane the signed manifest disables
a refused one; the same tampered bundle in Chromium; the CLI's own signature check; and
`release --conformance` signing the manifest the loader verified, byte for byte.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import shutil
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pipeline.cli import main as release_main
from pipeline.conformance import browsers
from pipeline.conformance.matrix import ModelFile, Options, Trust, run_matrix
from pipeline.conformance.subject import from_bundle
from pipeline.documents.keys import load_private_key
from pipeline.documents.sign import sign_to_sigstore_bundle
from pipeline.errors import CheckFailed
from pipeline.release import steps
from pipeline.release.steps import run_conformance
from verify.bundle.conformance_check import check_conformance
from verify.bundle.errors import ConformanceMismatch
from verify.bundle.layout import CONFORMANCE, MANIFEST, MANIFEST_SIGNATURE
from verify.bundle.trusted_keys import trusted_key_entry, trusted_keys_json
from verify.canonical import canonical_json
from verify.formats.conformance import MODEL_TIERS, ConformanceReport, TokenRow
from verify.formats.manifest import MANIFEST_PAYLOAD_TYPE, ModuleManifest
from verify.formats.receipt import CapabilityReceipt

pytestmark = pytest.mark.integration

CHROMIUM = browsers.BROWSERS["chromium"]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _matrix(
    bundle: Path,
    model: ModelFile,
    trust: Trust,
    tmp_path: Path,
    engine: str = "node",
    **options: Any,
) -> list[TokenRow]:
    opts = Options(
        engines=[engine], cases=2, page_timeout=300, say=lambda _: None, trust=trust, **options
    )
    report = run_matrix(from_bundle(bundle), [model], opts, tmp_path)
    return report.rows


def _copy(bundle: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "bundle"
    shutil.copytree(bundle, copy)
    return copy


def _flip_signature(bundle: Path) -> None:
    """One bit of the Ed25519 signature flipped; manifest.json untouched."""
    path = bundle / MANIFEST_SIGNATURE
    doc = json.loads(path.read_bytes())
    sig = bytearray(base64.b64decode(doc["dsseEnvelope"]["signatures"][0]["sig"]))
    sig[10] ^= 0x01
    doc["dsseEnvelope"]["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()
    path.write_bytes(canonical_json(doc))


def _other_trust() -> Trust:
    """Trusted keys that do not hold the key that signed the bundle."""
    stranger = Ed25519PrivateKey.generate().public_key()
    entry = trusted_key_entry(stranger, "development", datetime(2099, 1, 1, tzinfo=UTC))
    return Trust(json.loads(trusted_keys_json([entry])), allow_dev_key=True)


def test_node_rows_carry_the_loaders_receipt_for_their_lane(
    conformance_bundle: tuple[Path, Path],
    small_model: ModelFile,
    dev_trust: Trust,
    tmp_path: Path,
) -> None:
    bundle = conformance_bundle[0]
    subject = from_bundle(bundle)
    # the loader's first choice: the lane needing the most features (relaxed SIMD and threads)
    first = max(subject.wasm, key=lambda w: (w.threads, w.relaxed)).lane
    rows = _matrix(bundle, small_model, dev_trust, tmp_path)
    assert [r.lane for r in rows] == [w.lane for w in subject.wasm]
    manifest_sha = _sha((bundle / MANIFEST).read_bytes())
    for row in rows:
        assert row.outcome == "pass", row
        assert row.receipt is not None
        receipt = CapabilityReceipt.model_validate(row.receipt)
        assert row.receipt_sha256 == _sha(canonical_json(row.receipt))
        assert (receipt.module.artifact_id, receipt.module.sha256) == (
            row.lane,
            row.artifact_sha256,
        )
        assert receipt.module.build_manifest_sha256 == manifest_sha
        # the loader chose this lane because every other one was denied, and said so
        assert [(a.artifact_id, a.outcome) for a in receipt.attempts][-1] == (row.lane, "selected")
        assert {a.error_code for a in receipt.attempts if a.outcome == "skipped"} == {"LaneDenied"}
        assert len(receipt.attempts) == len(subject.wasm)
    assert [r.lane for r in rows if r.chosen] == [first]  # the loader's first candidate


@pytest.mark.parametrize(
    ("tamper", "code"),
    [("signature", "SignatureInvalid"), ("key", "UntrustedKey"), ("dev-key", "DevelopmentKey")],
)
def test_node_a_manifest_the_loader_refuses_fails_every_js_row_with_its_code(
    conformance_bundle: tuple[Path, Path],
    small_model: ModelFile,
    dev_trust: Trust,
    tmp_path: Path,
    tamper: str,
    code: str,
) -> None:
    bundle, trust = conformance_bundle[0], dev_trust
    if tamper == "signature":
        bundle = _copy(bundle, tmp_path)
        _flip_signature(bundle)
    elif tamper == "key":
        trust = _other_trust()
    else:
        trust = replace(dev_trust, allow_dev_key=False)
    rows = _matrix(bundle, small_model, trust, tmp_path)
    assert rows and all(r.outcome == "fail" for r in rows), rows
    for row in rows:
        assert row.detail.startswith(f"{code}: "), row.detail
        assert row.receipt is None and row.cases_failed == 2 and not row.chosen


def test_node_a_lane_the_signed_manifest_disables_is_refused_not_failed(
    conformance_bundle: tuple[Path, Path],
    small_model: ModelFile,
    dev_trust: Trust,
    tmp_path: Path,
) -> None:
    bundle = _copy(conformance_bundle[0], tmp_path)
    subject = from_bundle(bundle)
    simd = next(w.lane for w in subject.wasm if w.simd and not w.threads)
    manifest = json.loads((bundle / MANIFEST).read_bytes())
    manifest["disabled_lanes"] = [simd]
    payload = canonical_json(manifest)
    key = load_private_key(conformance_bundle[1].parent / "development.key.pem")
    (bundle / MANIFEST).write_bytes(payload)
    (bundle / MANIFEST_SIGNATURE).write_bytes(
        sign_to_sigstore_bundle(key, MANIFEST_PAYLOAD_TYPE, payload)
    )
    rows = {r.lane: r for r in _matrix(bundle, small_model, dev_trust, tmp_path)}
    assert rows[simd].outcome == "not-run"
    assert rows[simd].detail.startswith("LaneDisabled: ")
    assert {r.outcome for lane, r in rows.items() if lane != simd} == {"pass"}


def test_node_a_cosigned_bundle_under_a_trust_policy(
    conformance_bundle: tuple[Path, Path], small_model: ModelFile, tmp_path: Path
) -> None:
    """The bundle co-signed with `sign` by a second development key: the matrix takes the v2
    policy (`load_trust`, as the CLI reads it) and every node row passes at 2 of 2; at 3 of 3
    every row fails with the loader's SignatureThreshold naming 2 of 3."""
    from pipeline.conformance.trust import check_signed_manifest, load_trust
    from pipeline.documents.keys import generate_key_files
    from pipeline.documents.trust_policy import trust_policy
    from pipeline.release.cosign import CoSignTrust, cosign_bundle
    from verify.bundle.trusted_keys import load_trust_root

    bundle, dev_keys = conformance_bundle
    copy = tmp_path / "dist" / bundle.name
    shutil.copytree(bundle, copy)
    second = generate_key_files(tmp_path / "keys", "codev", "development")
    third = generate_key_files(tmp_path / "keys", "third", "release")
    cosigning = CoSignTrust(load_trust_root(dev_keys), allow_dev_key=True)
    cosign_bundle(copy, second.private_pem, trust=cosigning)
    policies = {}
    for threshold, keys in ((2, [dev_keys, second.trusted_keys]),
                            (3, [dev_keys, second.trusted_keys, third.trusted_keys])):  # fmt: skip
        path = tmp_path / f"policy-{threshold}.json"
        path.write_bytes(trust_policy(keys, threshold, []))
        policies[threshold] = load_trust(path, allow_dev_key=True)
    trust, root = policies[2]
    assert len(check_signed_manifest(copy, root, allow_dev_key=True).split(", ")) == 2
    for run in ("met", "short"):
        (tmp_path / run).mkdir()
    rows = _matrix(copy, small_model, trust, tmp_path / "met")
    assert rows and {r.outcome for r in rows} == {"pass"}, rows
    rows = _matrix(copy, small_model, policies[3][0], tmp_path / "short")
    assert rows and all(r.outcome == "fail" for r in rows), rows
    for row in rows:
        assert row.detail.startswith("SignatureThreshold: 2 of 3 required"), row.detail


@pytest.mark.skipif(CHROMIUM.executable() is None, reason="chromium is not installed")
def test_chromium_a_tampered_signature_fails_every_row_with_the_loaders_code(
    conformance_bundle: tuple[Path, Path],
    small_model: ModelFile,
    dev_trust: Trust,
    tmp_path: Path,
) -> None:
    bundle = _copy(conformance_bundle[0], tmp_path)
    _flip_signature(bundle)
    rows = _matrix(bundle, small_model, dev_trust, tmp_path, "chromium", isolation=(True,))
    assert rows and all(r.outcome == "fail" for r in rows), rows
    assert all(r.detail.startswith("SignatureInvalid: ") for r in rows), rows


def _cli(args: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = release_main(["conformance", *args])
    return code, err.getvalue()


def test_cli_checks_the_manifest_signature_before_any_engine_starts(
    conformance_bundle: tuple[Path, Path], tmp_path: Path
) -> None:
    bundle, keys = conformance_bundle
    out = tmp_path / "report.json"
    tampered = _copy(bundle, tmp_path)
    _flip_signature(tampered)
    base = ["--engines", "node", "--cases", "1", "--out", str(out)]
    code, err = _cli([str(bundle), *base])
    assert code == 2 and "--trusted-keys is required" in err
    code, err = _cli([str(bundle), "--trusted-keys", str(keys), *base])
    assert code == 3 and "[signature.development-key]" in err
    code, err = _cli([str(tampered), "--trusted-keys", str(keys), "--allow-dev-key", *base])
    assert code == 3 and "[signature.invalid]" in err and "manifest.sigstore.json" in err
    assert not out.exists()  # refused before the matrix
    code, err = _cli([str(bundle), "--trusted-keys", str(keys), "--allow-dev-key", *base])
    assert code == 0, err
    assert ConformanceReport.model_validate_json(out.read_bytes()).rows


def test_release_conformance_signs_the_manifest_its_loader_verified(
    built_clone: Path, tmp_path: Path
) -> None:
    request = steps.ReleaseRequest(repo_root=built_clone, dist=tmp_path / "dist", env={})
    matrix = run_conformance(Options(engines=["node"], cases=2))
    log: list[str] = []
    bundle = steps.run_release(request, replace(steps.STEPS, conformance=matrix), log.append).bundle
    # step 6 ran after the manifest was signed (5) and before the provenance (7)
    assert [line for line in log if line.startswith("[6/")][-1].startswith("[6/9] conformance: ok")
    report = ConformanceReport.model_validate_json((bundle / CONFORMANCE).read_bytes())
    manifest_sha = _sha((bundle / MANIFEST).read_bytes())
    assert report.rows and {r.outcome for r in report.rows} == {"pass"}
    # every lane ran a model of each tier (f32 `small`, int8 `small-int8`)
    lanes = {
        w.id for w in ModuleManifest.model_validate_json((bundle / MANIFEST).read_bytes()).artifacts
    }
    assert report.tiers() == list(MODEL_TIERS)
    assert {(r.lane, r.tier) for r in report.rows} == {(w, t) for w in lanes for t in MODEL_TIERS}
    for row in report.rows:
        receipt = CapabilityReceipt.model_validate(row.receipt)
        assert receipt.module.build_manifest_sha256 == manifest_sha
    # verify bundle's step 13 holds the receipts to this manifest, whole
    manifest = ModuleManifest.model_validate_json((bundle / MANIFEST).read_bytes())
    data = (bundle / CONFORMANCE).read_bytes()
    assert "rows" in check_conformance(data, manifest, manifest_sha, ["node"])
    with pytest.raises(ConformanceMismatch, match="not this bundle's"):
        check_conformance(data, manifest, "0" * 64, [])
    doc = json.loads(data)
    doc["rows"][0]["receipt"]["observed"]["memory_bytes"] += 65536
    with pytest.raises(ConformanceMismatch, match="not the digest of its receipt"):
        check_conformance(json.dumps(doc).encode(), manifest, manifest_sha, [])

    def matrix_on_another_manifest(signed: steps.ManifestSigned) -> steps.Conformed:
        # as if the matrix had run on another manifest (no need to run it again)
        files = {**signed.documents.files, MANIFEST: b"another manifest"}
        other = replace(signed, documents=replace(signed.documents, files=files))
        return steps.Conformed(other, None, "")

    request = replace(request, dist=tmp_path / "dist2")
    with pytest.raises(CheckFailed, match="manifest changed between signing it") as caught:
        steps.run_release(
            request, replace(steps.STEPS, conformance=matrix_on_another_manifest), lambda _: None
        )
    assert caught.value.error_id == "release.manifest-changed"
