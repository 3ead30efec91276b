"""Strict types in every signed document and trust file (issue 36, item 7): a boolean is not an
integer (`"threshold": true` is not 1), a number is not a time (an epoch is read neither as
seconds nor, above 2e10, as milliseconds: a time is an RFC 3339 string), a string is not a
number. One row per reader and field: each valid document is read first (the control), then
the same document with one value of the wrong JSON type must be refused by that reader.

Readers: trusted keys v1 and v2 (`trust_root_of`), the signed manifest and a rebuild
attestation (through `verify bundle`, re-signed), conformance.json and the loader receipts in
it (`check_conformance`), the verification report (`read_report`). The provenance statement
has no model: step 8 reads its few fields with `isinstance` checks (tests/verify/bundle/
test_refusals.py); TUF metadata is python-tuf's to read, and our code only takes the strings
of a target's `custom` (`pipeline.tuf.releases.releases_of`, str-checked).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pipeline.documents.attest import Compared, rebuild_statement, write_attestation
from pipeline.documents.keys import SigningKey, load_private_key
from pipeline.documents.sign import sign_to_sigstore_bundle
from tests.harness.receipts import loader_receipt, receipt_sha256
from tests.harness.release import Harness, copy_pristine, fake_report, verify_json
from verify.bundle import verifier
from verify.bundle.conformance_check import check_conformance
from verify.bundle.dsse import keyid_of
from verify.bundle.errors import ConformanceInvalid, ReportInvalid, TrustedKeysInvalid
from verify.bundle.layout import MANIFEST, MANIFEST_SIGNATURE, REPORT
from verify.bundle.report_check import read_report
from verify.bundle.trusted_keys import (
    trust_policy_json,
    trust_root_of,
    trusted_key_entry,
    trusted_keys_json,
)
from verify.canonical import canonical_json
from verify.formats.conformance import (
    MODEL_TIERS,
    CaseList,
    ConformanceReportV2,
    TierModel,
    TierRow,
)
from verify.formats.manifest import ModuleManifest
from verify.formats.trusted_keys import (
    SIGNED_DOCUMENTS,
    SigningRule,
    TrustedKeyEntryV2,
    TrustedKeysFileV2,
)

Doc = dict[str, Any]
SECONDS = 1893456000  # 2030-01-01 as a number of seconds
MILLIS = 1893456000000  # the same instant in milliseconds (> 2e10: lax pydantic reads ms)


@pytest.fixture(autouse=True)
def _fake_inspection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verifier, "default_deriver", lambda: fake_report)


def _set(path: str, value: object) -> Callable[[Doc], None]:
    """Set the value at a dotted path (list indexes as numbers)."""

    def change(doc: Doc) -> None:
        *parents, last = path.split(".")
        node: Any = doc
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return change


def _private(name: str) -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(name.encode().ljust(32, b"\0"))


# -- trusted keys v1 and v2 ---------------------------------------------------------------
def _v1() -> Doc:
    entry = trusted_key_entry(
        _private("alice").public_key(), "release", datetime(2030, 1, 1, tzinfo=UTC)
    )
    doc: Doc = json.loads(trusted_keys_json([entry]))
    return doc


def _v2() -> Doc:
    v1 = trusted_key_entry(
        _private("alice").public_key(), "release", datetime(2031, 1, 1, tzinfo=UTC)
    )
    entry = TrustedKeyEntryV2(**v1.model_dump(), not_before=datetime(2026, 1, 1, tzinfo=UTC))
    rule = SigningRule(keyids=[entry.keyid], threshold=1)
    doc = TrustedKeysFileV2.model_validate(
        {
            "schema": "tinyrustlm.trusted-keys.v2",
            "keys": [entry],
            "policy": dict.fromkeys(SIGNED_DOCUMENTS, rule),
        }
    )
    parsed: Doc = json.loads(trust_policy_json(doc))
    return parsed


TRUST: dict[str, tuple[Callable[[], Doc], Callable[[Doc], None]]] = {
    "v2 threshold true": (_v2, _set("policy.manifest.threshold", True)),
    "v2 threshold as a string": (_v2, _set("policy.provenance.threshold", "1")),
    "v2 threshold as 1.0": (_v2, _set("policy.manifest.threshold", 1.0)),
    "v2 not_before in seconds": (_v2, _set("keys.0.not_before", SECONDS - 10**8)),
    "v2 not_after in milliseconds": (_v2, _set("keys.0.not_after", MILLIS)),
    "v2 not_after true": (_v2, _set("keys.0.not_after", True)),
    "v1 not_after in seconds": (_v1, _set("keys.0.not_after", SECONDS)),
    "v1 not_after in milliseconds": (_v1, _set("keys.0.not_after", MILLIS)),
}


@pytest.mark.parametrize(("make", "change"), TRUST.values(), ids=TRUST.keys())
def test_trusted_keys_are_read_strictly(
    make: Callable[[], Doc], change: Callable[[Doc], None]
) -> None:
    doc = make()
    trust_root_of(json.dumps(doc).encode(), "control")
    change(doc)
    with pytest.raises(TrustedKeysInvalid):
        trust_root_of(json.dumps(doc).encode(), "changed")


# -- the signed manifest, and a rebuild attestation (through `verify bundle`) ---------------
MANIFEST_FIELDS: dict[str, Callable[[Doc], None]] = {
    "runtime_semantics true": _set("runtime_semantics", True),
    "source_date_epoch true": _set("source_date_epoch", True),
    "expires_epoch as a string": _set("expires_epoch", str(SECONDS)),
    "artifact size true": _set("artifacts.0.size", True),
    "requires_cross_origin_isolation as 1": _set("artifacts.0.requires_cross_origin_isolation", 1),
    "memory.shared as 0": _set("artifacts.0.memory", {"shared": 0, "growth": True}),
}


@pytest.mark.parametrize("change", MANIFEST_FIELDS.values(), ids=MANIFEST_FIELDS.keys())
def test_the_signed_manifest_is_read_strictly(
    pristine: tuple[Harness, Path], tmp_path: Path, change: Callable[[Doc], None]
) -> None:
    h = pristine[0]
    bundle = copy_pristine(pristine, tmp_path)
    doc = json.loads((bundle / MANIFEST).read_bytes())
    change(doc)
    payload = canonical_json(doc)
    (bundle / MANIFEST).write_bytes(payload)
    key = load_private_key(h.key.private_pem)
    envelope = json.loads((bundle / MANIFEST_SIGNATURE).read_bytes())["dsseEnvelope"]
    (bundle / MANIFEST_SIGNATURE).write_bytes(
        sign_to_sigstore_bundle(key, envelope["payloadType"], payload)
    )
    code, result, _ = verify_json(bundle, h.trusted)
    assert (code, result["error"]["id"], result["error"]["step"]) == (1, "manifest.invalid", 5)


def _attestation(bundle: Path, out: Path, change: Callable[[Doc], None] | None) -> Path:
    manifest = ModuleManifest.model_validate_json((bundle / MANIFEST).read_bytes())
    digests = dict(manifest.listed_files())
    artifacts = [Compared(url, digests[url], digests[url]) for url, _ in manifest.lanes()]
    documents = [Compared("sbom.cdx.json", "a" * 64, "a" * 64)]
    alice = SigningKey(_private("alice"), keyid_of(_private("alice").public_key()), "release", "a")
    statement = rebuild_statement(manifest, artifacts, documents, alice.keyid)
    if change is not None:  # the statement with a wrong JSON type, signed by alice as is
        doc = statement.model_dump(mode="json", by_alias=True)
        change(doc)
        signed = sign_to_sigstore_bundle(
            alice.private_key, "application/vnd.in-toto+json", canonical_json(doc)
        )
        out.write_bytes(signed)
        return out
    write_attestation(statement, alice, out)
    return out


STATEMENT_FIELDS: dict[str, Callable[[Doc], None] | None] = {
    "control": None,
    "sourceDateEpoch true": _set(
        "predicate.buildDefinition.internalParameters.sourceDateEpoch", True
    ),
    "sourceDateEpoch as a string": _set(
        "predicate.buildDefinition.internalParameters.sourceDateEpoch", "1"
    ),
    "matched as 1": _set("predicate.runDetails.byproducts.0.annotations.matched", 1),
}


@pytest.mark.parametrize("change", STATEMENT_FIELDS.values(), ids=STATEMENT_FIELDS.keys())
def test_a_rebuild_attestation_is_read_strictly(
    pristine: tuple[Harness, Path], tmp_path: Path, change: Callable[[Doc], None] | None
) -> None:
    h, bundle = pristine
    rebuilders = tmp_path / "rebuilders.json"
    later = datetime(2100, 1, 1, tzinfo=UTC)
    rebuilders.write_bytes(
        trusted_keys_json([trusted_key_entry(_private("alice").public_key(), "release", later)])
    )
    attestation = _attestation(bundle, tmp_path / "a.sigstore.json", change)
    code, result, _ = verify_json(
        bundle,
        h.trusted,
        "--rebuilders",
        str(rebuilders),
        "--require-rebuilds",
        "1",
        "--rebuild-scope",
        "artifacts",
        "--rebuild-attestation",
        str(attestation),
    )
    if change is None:
        assert (code, result["ok"]) == (0, True)
        return
    assert (code, result["error"]["id"]) == (1, "rebuilds.insufficient")
    assert "not a rebuild attestation" in json.dumps(result)


# -- conformance.json and its receipts; the verification report ----------------------------
def _conformance(bundle: Path) -> tuple[Doc, ModuleManifest, str]:
    data = (bundle / MANIFEST).read_bytes()
    manifest = ModuleManifest.model_validate_json(data)
    import hashlib

    manifest_sha = hashlib.sha256(data).hexdigest()
    rows = []
    for tier in MODEL_TIERS:
        for a in manifest.artifacts:
            receipt = loader_receipt("chromium", a.id, a.sha256, manifest_sha, tier)
            rows.append(
                TierRow(
                    tier=tier,
                    engine="chromium",
                    engine_kind="browser",
                    engine_version="1",
                    isolated=True,
                    lane=a.id,
                    artifact_sha256=a.sha256,
                    outcome="pass",
                    chosen=False,
                    cases_passed=3,
                    cases_failed=0,
                    receipt=receipt,
                    receipt_sha256=receipt_sha256(receipt),
                )
            )
    c = "c" * 64
    report = ConformanceReportV2(  # a v2 report: read strictly too, without required engines
        release_version=manifest.version,
        source_revision=manifest.source_revision,
        cases=CaseList(count=3, seed=1, sha256=c, oracle_lane="oracle", oracle_sha256=c),
        models=[TierModel(tier=t, model=t, model_sha256=c, oracle_stops={}) for t in MODEL_TIERS],
        rows=rows,
    )
    doc: Doc = json.loads(report.model_dump_json(by_alias=True))
    return doc, manifest, manifest_sha


def _receipt(path: str, value: object) -> Callable[[Doc], None]:
    """Change a field of the first row's receipt, and its digest with it (so only the type
    is wrong)."""

    def change(doc: Doc) -> None:
        row = doc["rows"][0]
        _set(path, value)(row["receipt"])
        row["receipt_sha256"] = receipt_sha256(row["receipt"])

    return change


CONFORMANCE_FIELDS: dict[str, Callable[[Doc], None]] = {
    "cases_passed true": _set("rows.0.cases_passed", True),
    "isolated as 1": _set("rows.0.isolated", 1),
    "cases.count true": _set("cases.count", True),
    "cases.seed as a string": _set("cases.seed", "1"),
    "receipt workers_requested true": _receipt("observed.workers_requested", True),
    "receipt runtime_semantics true": _receipt("runtime_semantics", True),
    "receipt cross_origin_isolated as 1": _receipt("observed.cross_origin_isolated", 1),
}


@pytest.mark.parametrize("change", CONFORMANCE_FIELDS.values(), ids=CONFORMANCE_FIELDS.keys())
def test_conformance_and_its_receipts_are_read_strictly(
    pristine: tuple[Harness, Path], change: Callable[[Doc], None]
) -> None:
    doc, manifest, manifest_sha = _conformance(pristine[1])
    check_conformance(json.dumps(doc).encode(), manifest, manifest_sha, [])
    changed = copy.deepcopy(doc)
    change(changed)
    with pytest.raises(ConformanceInvalid):
        check_conformance(json.dumps(changed).encode(), manifest, manifest_sha, [])


REPORT_FIELDS: dict[str, Callable[[Doc], None]] = {
    "ok as 1": _set("ok", 1),
    "artifact size true": _set("artifacts.0.size", True),
    "finding ok as 0": _set("artifacts.0.findings.0.ok", 0),
}


@pytest.mark.parametrize("change", REPORT_FIELDS.values(), ids=REPORT_FIELDS.keys())
def test_the_verification_report_is_read_strictly(
    pristine: tuple[Harness, Path], change: Callable[[Doc], None]
) -> None:
    data = (pristine[1] / REPORT).read_bytes()
    read_report(data, REPORT)
    doc = json.loads(data)
    change(doc)
    with pytest.raises(ReportInvalid):
        read_report(json.dumps(doc).encode(), REPORT)
