"""The expected values of the loader's trust unit tests (tests/js/unit/trust.test.mjs), given
by the Python verifier: `python -m tests.js.unit.fixtures` writes fixtures/trust.json, which is
committed (the node tests run without Python, fast enough for Stryker to run them per mutant);
test_unit.py regenerates it and compares, so it cannot drift from verify/.

- `envelopes`: every row of trust_table.py (the issue 23 table: who may sign the manifest),
  with fixed keys derived from their names, judged by verify/'s `trust_root_of` +
  `check_envelope` (step 2): accepted with the counted keys in envelope order, or the refusal's
  id as the loader's code. The rows the loader refuses further (LOADER_FURTHER) carry the
  loader's code, written in that table by hand.
- `roots`: trusted-keys documents (one defect each, or none) read by `trust_root_of`: the keys'
  windows in whole epoch seconds, the manifest rule and the revocations, or the refusal with
  the field it names.
- `dates`: RFC 3339 stamps as the verifier's `AwareDatetime` reads a key's `not_after`: whole
  epoch seconds toward zero, or refused.
- `versions`: the one table of release versions (tests/release_versions.json) as
  verify/formats/release_version.py reads each: its order key, or null (refused).
Nothing here is computed by the JS under test.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from tests.js.loader.test_trust_agreement import _stamp, edited
from tests.js.loader.trust_table import (
    CASES,
    COSIGNED,
    LOADER_CODE,
    LOADER_FURTHER,
    ROLES,
    TrustCase,
)
from verify.bundle.dsse import DsseSignature, Envelope, keyid_of, pae, sigstore_bundle_json
from verify.bundle.trusted_keys import check_envelope, trust_root_of
from verify.canonical import canonical_json
from verify.errors import VerifyError
from verify.formats.manifest import MANIFEST_PAYLOAD_TYPE
from verify.formats.release_version import release_version_key
from verify.formats.trusted_keys import TRUSTED_KEYS_SCHEMA_V2

OUT = Path(__file__).with_name("fixtures") / "trust.json"
VERSIONS = Path(__file__).parents[2] / "release_versions.json"
BASE = 1_900_000_000  # the table's instant: now = BASE + case.at
FAR = "2099-01-01T00:00:00Z"  # every key's not_after unless a row sets its window
SIGNATURE_FILE = "manifest.sigstore.json"


def private_key(name: str) -> Ed25519PrivateKey:
    """A fixed key per name (its seed is SHA-256 of the name): the same bytes on every run."""
    return Ed25519PrivateKey.from_private_bytes(hashlib.sha256(name.encode()).digest())


def keyid(name: str) -> str:
    return keyid_of(private_key(name).public_key())


def entry(name: str) -> dict[str, Any]:
    pem = (
        private_key(name).public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    )
    return {
        "keyid": keyid(name),
        "public_key_pem": pem.decode(),
        "role": ROLES[name],
        "not_after": FAR,
    }


def manifest(key_class: str) -> bytes:
    """A manifest the loader reads past its signatures: schema, semantics, ABI, key class,
    expiry (well after BASE), its wasm artifacts (none)."""
    return canonical_json(
        {
            "schema": "tinyrustlm.module-manifest.v1",
            "runtime_semantics": 1,
            "abi_version": 1,
            "version": "1.2.3",
            "key_class": key_class,
            "expires_epoch": BASE + 10**6,
            "artifacts": [],
        }
    )


def trusted_keys(case: TrustCase) -> dict[str, Any]:
    entries = []
    for name in case.keys:
        row = entry(name)
        not_before, not_after = case.windows.get(name, (None, None))
        if not_before is not None:
            row["not_before"] = _stamp(BASE, not_before)
        if not_after is not None:
            row["not_after"] = _stamp(BASE, not_after)
        entries.append(row)
    doc: dict[str, Any]
    if case.threshold is None:
        doc = {"schema": "tinyrustlm.trusted-keys.v1", "keys": entries}
    else:
        every = [keyid(n) for n in case.keys]
        allowed = [keyid(n) for n in case.allowed] if case.allowed else every
        doc = {
            "schema": TRUSTED_KEYS_SCHEMA_V2,
            "keys": entries,
            "policy": {
                "manifest": {"keyids": allowed, "threshold": case.threshold},
                "provenance": {"keyids": every, "threshold": case.threshold},
            },
            "revoked": [{"keyid": keyid(n), "reason": "lost"} for n in case.revoked],
        }
    return edited(doc, case.edit)


def signature(case: TrustCase) -> bytes:
    signers = ("alice", "bob") if case.signers == COSIGNED else case.signers
    payload = manifest(case.manifest)
    signatures = []
    for signer in signers:
        name = signer.rstrip("~")
        sig = private_key(name).sign(pae(MANIFEST_PAYLOAD_TYPE, payload))
        if signer.endswith("~"):  # a byte flipped: a signature that does not verify
            sig = bytes([sig[0] ^ 0x01]) + sig[1:]
        signatures.append(DsseSignature(keyid(name), sig))
    envelope = Envelope(MANIFEST_PAYLOAD_TYPE, payload, tuple(signatures))
    hint = keyid(case.hint) if case.hint else signatures[0].keyid
    data = sigstore_bundle_json(envelope, hint=hint)
    return json.dumps(edited(json.loads(data), case.envelope)).encode() if case.envelope else data


def verifier_verdict(case: TrustCase) -> dict[str, Any]:
    doc = trusted_keys(case)
    try:
        root = trust_root_of(json.dumps(doc).encode(), "trusted-keys")
        counted = check_envelope(
            signature(case), SIGNATURE_FILE, "manifest", root, case.allow_dev_key, BASE + case.at
        )
    except VerifyError as exc:
        return {"code": LOADER_CODE[exc.error_id], "keyids": None}
    return {"code": None, "keyids": [k.keyid for k in counted.signers]}


def envelope_row(case: TrustCase, loader_code: str | None = None) -> dict[str, Any]:
    verdict = verifier_verdict(case)
    expect = LOADER_CODE[case.expect]
    assert (verdict["code"] or "accepted") == expect, (case.name, verdict)
    if loader_code is not None:  # the loader refuses what verify/'s step 2 accepts (see table)
        verdict = {"code": loader_code, "keyids": None}
    return {
        "name": case.name,
        "trustedKeys": trusted_keys(case),
        "manifest": base64.b64encode(manifest(case.manifest)).decode(),
        "signature": base64.b64encode(signature(case)).decode(),
        "now": BASE + case.at,
        "allowDevKey": case.allow_dev_key,
        "message": case.message,
        **verdict,
    }


DROP = ...  # a field `_set` removes (None sets it to JSON null)


def _set(doc: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`doc` with each dotted path ("keys.0.role") set to its value (DROP: removed; a
    callable: applied to the old value)."""
    for path, value in changes.items():
        *parents, last = path.split(".")
        target: Any = doc
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        key: Any = int(last) if last.isdigit() else last
        if value is DROP:
            del target[key]
        else:
            target[key] = value(target[key]) if callable(value) else value
    return doc


def _v2(**changes: Any) -> dict[str, Any]:
    alice, bob = keyid("alice"), keyid("bob")
    doc: dict[str, Any] = {
        "schema": TRUSTED_KEYS_SCHEMA_V2,
        "keys": [entry("alice"), entry("bob")],
        "policy": {
            "manifest": {"keyids": [alice, bob], "threshold": 2},
            "provenance": {"keyids": [alice], "threshold": 1},
        },
        "revoked": [{"keyid": "0" * 64, "reason": "lost"}],
    }
    return _set(doc, changes)


def _v1(**changes: Any) -> dict[str, Any]:
    return _set({"schema": "tinyrustlm.trusted-keys.v1", "keys": [entry("alice")]}, changes)


A, B = "alice", "bob"
EMPTY_PEM = "-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----\n"
# name -> a trusted-keys document with one defect, or none
# fmt: off
ROOTS: dict[str, Any] = {
    "v2, two keys, a 2-of-2 manifest rule, a revocation": _v2(),
    "v2 without revocations": _v2(revoked=DROP),
    "v2 with a development key": _v2(**{"keys.1": entry("dora"), "policy.manifest.keyids": [
        keyid(A), keyid("dora")]}),
    "v2 with a window": _v2(**{"keys.0.not_before": "2030-01-01T00:00:00Z",
                               "keys.0.not_after": "2031-01-01T00:00:00+01:00"}),
    "v2 with a null not_before": _v2(**{"keys.0.not_before": None}),
    "v1": _v1(),
    "v1 without a schema": _v1(schema=DROP),
    "v1, any-trusted-key": _v1(signers="any-trusted-key"),
    "v1, one-key": _v1(signers="one-key"),
    "v1 with another signers": _v1(signers="every-key"),
    "v1 with an unknown field": _v1(comment="x"),
    "v1 without keys": _v1(keys=DROP),
    "v1 with no keys": _v1(keys=[]),
    "v1 with keys not a list": _v1(keys={"0": entry("alice")}),
    "v1 with a not_before": _v1(**{"keys.0.not_before": "2030-01-01T00:00:00Z"}),
    "another schema": _v1(schema="tinyrustlm.trusted-keys.v3"),
    "not an object": [entry("alice")],
    "null": None,
    "a key twice": _v1(keys=[entry("alice"), entry("alice")]),
    "a key that is not an object": _v1(keys=["alice"]),
    "a key without its keyid": _v1(**{"keys.0.keyid": DROP}),
    "a key without its role": _v1(**{"keys.0.role": DROP}),
    "a key without not_after": _v1(**{"keys.0.not_after": DROP}),
    "a key without its PEM": _v1(**{"keys.0.public_key_pem": DROP}),
    "a key with an unknown field": _v1(**{"keys.0.comment": "x"}),
    "an uppercase keyid": _v1(**{"keys.0.keyid": keyid(A).upper()}),
    "a short keyid": _v1(**{"keys.0.keyid": keyid(A)[:63]}),
    "a keyid of another key": _v1(**{"keys.0.keyid": keyid(B)}),
    "a keyid that is a number": _v1(**{"keys.0.keyid": 1}),
    "another role": _v1(**{"keys.0.role": "admin"}),
    "a PEM of no key": _v1(**{"keys.0.public_key_pem": EMPTY_PEM}),
    "a PEM that is a number": _v1(**{"keys.0.public_key_pem": 7}),
    "a PEM of bad base64": _v1(**{"keys.0.public_key_pem": lambda p: p.replace("MCow", "MCo=", 1)}),
    "not_before after not_after": _v2(**{"keys.0.not_before": "2032-01-01T00:00:00Z",
                                         "keys.0.not_after": "2031-01-01T00:00:00Z"}),
    "not_before at not_after": _v2(**{"keys.0.not_before": "2031-01-01T00:00:00Z",
                                      "keys.0.not_after": "2031-01-01T00:00:00Z"}),
    "not_before a microsecond before not_after": _v2(**{
        "keys.0.not_before": "2031-01-01T00:00:00.999999Z",
        "keys.0.not_after": "2031-01-01T00:00:01Z"}),
    "not_before a microsecond after not_after": _v2(**{
        "keys.0.not_before": "2031-01-01T00:00:01.000001Z",
        "keys.0.not_after": "2031-01-01T00:00:01Z"}),
    "not_before half a second before not_after, in one second": _v2(**{
        "keys.0.not_before": "2031-01-01T00:00:00Z",
        "keys.0.not_after": "2031-01-01T00:00:00.5Z"}),
    "not_before's fraction below not_after's, a second later": _v2(**{
        "keys.0.not_before": "2031-01-01T00:00:01.1Z",
        "keys.0.not_after": "2031-01-01T00:00:00.5Z"}),
    "fractions past the microsecond are cut": _v2(**{
        "keys.0.not_before": "2031-01-01T00:00:00.123456Z",
        "keys.0.not_after": "2031-01-01T00:00:00.1234561Z"}),
    "a fraction of one digit is tenths": _v2(**{
        "keys.0.not_before": "2031-01-01T00:00:00.5Z",
        "keys.0.not_after": "2031-01-01T00:00:00.000006Z"}),
    "v2 without a policy": _v2(policy=DROP),
    "v2 without keys": _v2(keys=DROP),
    "v2 with no keys": _v2(keys=[]),
    "v2 with an unknown field": _v2(comment="x"),
    "v2 with a signers field": _v2(signers="one-key"),
    "a policy that is a list": _v2(policy=[]),
    "a policy for another document": _v2(**{"policy.sbom": {"keyids": [keyid(A)], "threshold": 1}}),
    "no rule for the manifest": _v2(**{"policy.manifest": DROP}),
    "no rule for the provenance": _v2(**{"policy.provenance": DROP}),
    "a rule that is not an object": _v2(**{"policy.manifest": [keyid(A)]}),
    "a rule without keyids": _v2(**{"policy.manifest.keyids": DROP}),
    "a rule without a threshold": _v2(**{"policy.manifest.threshold": DROP}),
    "a rule with an unknown field": _v2(**{"policy.manifest.comment": "x"}),
    "a rule of no keys": _v2(**{"policy.manifest.keyids": []}),
    "a rule whose keyids is a string": _v2(**{"policy.manifest.keyids": keyid(A)}),
    "a rule naming a bad keyid": _v2(**{"policy.provenance.keyids": [keyid(A)[:-1]]}),
    "a rule naming a number": _v2(**{"policy.provenance.keyids": [5]}),
    "a rule naming an unknown key": _v2(**{"policy.manifest.keyids": [keyid(A), "f" * 64]}),
    "a rule naming a key twice": _v2(**{"policy.manifest.keyids": [keyid(A), keyid(A)]}),
    "a threshold of 0": _v2(**{"policy.manifest.threshold": 0}),
    "a threshold of -1": _v2(**{"policy.manifest.threshold": -1}),
    "a threshold of 1.5": _v2(**{"policy.manifest.threshold": 1.5}),
    "a threshold above the keys": _v2(**{"policy.provenance.threshold": 2}),
    "a threshold equal to the keys": _v2(**{"policy.provenance.threshold": 1}),
    "revoked not a list": _v2(revoked={"keyid": "0" * 64, "reason": "lost"}),
    "a revocation without a reason": _v2(**{"revoked.0.reason": DROP}),
    "a revocation with an empty reason": _v2(**{"revoked.0.reason": ""}),
    "a revocation whose reason is a number": _v2(**{"revoked.0.reason": 1}),
    "a revocation without a keyid": _v2(**{"revoked.0.keyid": DROP}),
    "a revocation of a bad keyid": _v2(**{"revoked.0.keyid": "0" * 63}),
    "a revocation with an unknown field": _v2(**{"revoked.0.when": "now"}),
    "a revocation that is not an object": _v2(revoked=["0" * 64]),
    "a key revoked twice": _v2(revoked=[{"keyid": "0" * 64, "reason": "a"},
                                        {"keyid": "0" * 64, "reason": "b"}]),
    "a revoked key of the file": _v2(revoked=[{"keyid": keyid(B), "reason": "stolen"}]),
    # dates and thresholds only as written (RFC 3339 text, a JSON integer), on both sides
    "not_after as epoch seconds": _v1(**{"keys.0.not_after": 4102444800}),
    "a threshold written as a string": _v2(**{"policy.provenance.threshold": "1"}),
}
# fmt: on
# Documents verify/ reads and the loader refuses on purpose (trust_table.py LOADER_FURTHER):
# a keyless identity it cannot verify. `trust_root_of` accepts it; the loader's refusal is the
# expected value.
# fmt: off
LOADER_REFUSES: dict[str, Any] = {
    "a keyless identity": _v2(keyless={"identity": "https://ci.example/release.yml",
                                       "issuer": "https://token.actions.githubusercontent.com"}),
}
# fmt: on


def _where(text: str) -> str:
    """verify/'s `where` ("trusted-keys: keys[0].keyid", "trusted-keys: keys.0.keyid") as a
    path the loader's can be compared with: "keys.0.keyid"."""
    path = text.removeprefix("trusted-keys").removeprefix(":").strip()
    return re.sub(r"\[(\d+)\]", r".\1", path)


def root_row(name: str, doc: Any) -> dict[str, Any]:
    try:
        root = trust_root_of(json.dumps(doc).encode(), "trusted-keys")
    except VerifyError as exc:
        assert exc.error_id == "trusted-keys.invalid", (name, exc.error_id)
        return {"name": name, "doc": doc, "code": "TrustedKeysInvalid", "where": _where(exc.where)}
    rule = root.rule("manifest")
    return {
        "name": name,
        "doc": doc,
        "code": None,
        "keys": {
            k.keyid: {
                "role": k.role,
                "notBefore": k.not_before_epoch,
                "notAfter": k.not_after_epoch,
            }
            for k in root.keys.values()
        },
        "rule": {"keyids": sorted(rule.keyids), "threshold": rule.threshold},
        "revoked": root.revoked,
    }


# stamps of a key's not_after: the forms AwareDatetime reads, and ones it refuses
# fmt: off
DATES = [
    "2031-01-01T00:00:00Z", "2031-01-01t00:00:00z", "2031-01-01 00:00:00Z",
    "2031-01-01_00:00:00Z", "2031-01-01T00:00Z", "2031-01-01T00:00:00.5Z",
    "2031-01-01T00:00:00.123456789Z", "2031-01-01T00:00:00.000001Z", "2031-06-30T23:59:59Z",
    "2031-01-01T00:00:00+01:00", "2031-01-01T00:00:00-05:30", "2031-01-01T00:00:00+0130",
    "2031-01-01T00:00:00-0000", "2031-01-01T00:00:00+23:59", "2031-01-01T00:00:00-23:59",
    "2032-02-29T12:00:00Z", "1969-12-31T23:59:59.5Z", "1969-12-31T23:59:59Z",
    "1960-01-01T00:00:00.25+02:00", "1970-01-01T00:00:00Z", "2000-02-29T00:00:00Z",
    "2031-12-31T23:59:59.999999Z", "2031-01-01T00:00:00+00:00", "1970-01-01T00:00:00.5Z",
    # refused
    "2031-01-01T00:00:00", "2031-01-01", "2031-02-29T00:00:00Z", "2031-02-30T00:00:00Z",
    "2031-04-31T00:00:00Z", "2031-13-01T00:00:00Z", "2031-00-01T00:00:00Z",
    "2031-01-00T00:00:00Z", "2031-01-32T00:00:00Z", "2031-01-01T24:00:00Z",
    "2031-01-01T23:60:00Z", "2031-01-01T23:59:60Z", "2031-01-01T00:00:00+24:00",
    "2031-01-01T00:00:00+01:60", "2031-01-01T00:00:00.Z",
    "31-01-01T00:00:00Z", "2031-1-01T00:00:00Z", "2031-01-01T0:00:00Z", "2031-01-01T00:00:00+1",
    "2031-01-01X00:00:00Z", " 2031-01-01T00:00:00Z", "2031-01-01T00:00:00Z ",
    "2031-01-01T00:00:00ZZ", "2031-01-01T00:00:00+01:00Z", "2100-02-29T00:00:00Z",
    "2031-01-01T00:00:00GMT", "",
]
# fmt: on


def version_rows() -> list[dict[str, Any]]:
    """Every version of the shared table, ordered ones first: verify/'s key, or None."""
    table = json.loads(VERSIONS.read_text(encoding="utf-8"))
    versions = [*table["ordered"], *(r["version"] for r in table["refused"])]
    rows = []
    for version in versions:
        key = release_version_key(version)
        rows.append({"version": version, "key": None if key is None else list(key)})
    return rows


def date_row(stamp: str) -> dict[str, Any]:
    doc = _v1(**{"keys.0.not_after": stamp})
    try:
        root = trust_root_of(json.dumps(doc).encode(), "trusted-keys")
    except VerifyError:
        return {"stamp": stamp, "epoch": None}
    return {"stamp": stamp, "epoch": root.keys[keyid("alice")].not_after_epoch}


# Manifests signed by alice (a v1 trusted-keys file) that the loader refuses after counting
# the signatures (step 1's own checks; verify/ makes them in its later steps): name -> (the
# manifest's bytes, the loader's code, words of its message), written from README "The loader".
def _manifest_bytes(**changes: Any) -> bytes:
    doc = json.loads(manifest("release"))
    return canonical_json(_set(doc, changes))


# fmt: off
MANIFESTS: dict[str, tuple[bytes, str, str]] = {
    "not JSON": (b"{not json", "BadManifest", "the signed manifest is not JSON ("),
    "not UTF-8": (b'{"a": "\xff"}', "BadManifest", "the signed manifest is not JSON ("),
    "another schema": (_manifest_bytes(schema="tinyrustlm.module-manifest.v2"),
                       "UnsupportedAbi", 'manifest schema "tinyrustlm.module-manifest.v2" is not'),
    "runtime semantics 2": (_manifest_bytes(runtime_semantics=2), "UnsupportedAbi",
                            "runtime_semantics 2 / abi_version 1 are not supported by this loader"
                            " (1 / 1)"),
    "ABI 2": (_manifest_bytes(abi_version=2), "UnsupportedAbi",
              "runtime_semantics 1 / abi_version 2 are not supported"),
    "a development key class signed by a release key": (
        _manifest_bytes(key_class="development"), "KeyClassMismatch",
        f"manifest key_class development but the role of signing key {keyid(A)[:16]}… is release"),
    "an expiry written as text": (_manifest_bytes(expires_epoch=str(BASE + 10**6)),
                                  "ManifestExpired", "the manifest expired at"),
    "no artifacts": (_manifest_bytes(artifacts=DROP), "BadManifest",
                     "the manifest lists no wasm artifacts"),
}
# fmt: on


def manifest_row(name: str, data: bytes, code: str, message: str) -> dict[str, Any]:
    sig = private_key(A).sign(pae(MANIFEST_PAYLOAD_TYPE, data))
    envelope = Envelope(MANIFEST_PAYLOAD_TYPE, data, (DsseSignature(keyid(A), sig),))
    return {
        "name": name,
        "trustedKeys": _v1(),
        "manifest": base64.b64encode(data).decode(),
        "signature": base64.b64encode(sigstore_bundle_json(envelope, hint=keyid(A))).decode(),
        "now": BASE,
        "allowDevKey": False,
        "code": code,
        "message": message,
        "keyids": None,
    }


def fixtures() -> dict[str, Any]:
    return {
        "generated_by": "python -m tests.js.unit.fixtures",
        "keys": {name: keyid(name) for name in ROLES},
        "envelopes": [envelope_row(c) for c in CASES]
        + [envelope_row(c, code) for c, code in LOADER_FURTHER],
        "roots": [root_row(n, d) for n, d in ROOTS.items()]
        + [
            {**root_row(n, d), "code": "TrustedKeysInvalid", "where": None, "verify": "accepts"}
            for n, d in LOADER_REFUSES.items()
        ],
        "dates": [date_row(d) for d in DATES],
        "versions": version_rows(),
        "manifests": [manifest_row(n, *row) for n, row in MANIFESTS.items()],
    }


def render() -> str:
    return json.dumps(fixtures(), indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    if argv not in ([], ["--check"]):
        print("usage: python -m tests.js.unit.fixtures [--check]", file=sys.stderr)
        return 2
    text = render()
    if argv == ["--check"]:
        return 0 if OUT.is_file() and OUT.read_text(encoding="utf-8") == text else 1
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
