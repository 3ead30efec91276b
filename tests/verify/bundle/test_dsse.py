"""verify/bundle/dsse.py on its own: PAE and keyid against independent computations, the strict
envelope and bundle parser refusing each malformation with its own message and place (an
empty `signatures` list among them), the canonical bundle bytes, and one signature check."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from verify.bundle.dsse import (
    SIGSTORE_BUNDLE_MEDIA_TYPE,
    DsseSignature,
    Envelope,
    keyid_of,
    pae,
    parse_envelope,
    parse_sigstore_bundle,
    sigstore_bundle_json,
    verify_signature,
)
from verify.bundle.errors import MalformedSignatureBundle, SignatureInvalid
from verify.canonical import MAX_JSON_DEPTH
from verify.formats.in_toto import IN_TOTO_PAYLOAD_TYPE

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
# RFC 8410: an Ed25519 SubjectPublicKeyInfo is this fixed DER prefix and the 32 raw key bytes
ED25519_SPKI_PREFIX = bytes.fromhex("302a300506032b6570032100")


def test_pae_is_the_dsse_v1_encoding() -> None:
    # the example of the DSSE protocol document
    assert pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )
    # lengths are of the UTF-8 bytes, and the payload goes in as bytes
    assert pae("t/\u00e9", b"\x00\xff") == b"DSSEv1 4 t/\xc3\xa9 2 \x00\xff"
    assert pae("", b"") == b"DSSEv1 0  0 "


def test_keyid_is_the_sha256_of_the_spki_der() -> None:
    raw = KEY.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    expected = hashlib.sha256(ED25519_SPKI_PREFIX + raw).hexdigest()
    assert keyid_of(KEY.public_key()) == expected
    assert expected == "a050837d85070582ccf7394b0988847cc312cb88259b894899f6f239cf1791a5"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _envelope(**changes: Any) -> dict[str, Any]:
    env: dict[str, Any] = {
        "payload": _b64(b'{"a":1}'),
        "payloadType": IN_TOTO_PAYLOAD_TYPE,
        "signatures": [{"keyid": "k1", "sig": _b64(b"\x01\x02")}],
    }
    env.update(changes)
    return env


def test_a_good_envelope_parses_in_order() -> None:
    sigs = [{"keyid": "k1", "sig": _b64(b"\x01")}, {"keyid": "k2", "sig": _b64(b"\x02")}]
    env = parse_envelope(_envelope(signatures=sigs), "env")
    assert env == Envelope(
        IN_TOTO_PAYLOAD_TYPE,
        b'{"a":1}',
        (DsseSignature("k1", b"\x01"), DsseSignature("k2", b"\x02")),
    )


# name -> (the envelope value, message, where)
BAD_ENVELOPES: dict[str, tuple[object, str, str]] = {
    "not-an-object": ([], "expected a JSON object", "env"),
    "missing-payload": (
        {k: v for k, v in _envelope().items() if k != "payload"},
        "missing field(s) ['payload']",
        "env",
    ),
    "missing-two": ({"signatures": []}, "missing field(s) ['payload', 'payloadType']", "env"),
    "unknown-field": (
        _envelope(extra=1, more=2),
        "unknown field(s) ['extra', 'more']",
        "env",
    ),
    "payload-type-not-string": (
        _envelope(payloadType=7),
        "payloadType must be a string",
        "env.payloadType",
    ),
    "signatures-empty": (
        _envelope(signatures=[]),
        "signatures must be a non-empty list",
        "env",
    ),
    "signatures-not-list": (
        _envelope(signatures={"keyid": "k1", "sig": ""}),
        "signatures must be a non-empty list",
        "env",
    ),
    "signature-not-object": (
        _envelope(signatures=["k1"]),
        "expected a JSON object",
        "env.signatures[0]",
    ),
    "second-signature-extra-field": (
        _envelope(signatures=[{"keyid": "a", "sig": ""}, {"keyid": "b", "sig": "", "x": 1}]),
        "unknown field(s) ['x']",
        "env.signatures[1]",
    ),
    "keyid-not-string": (
        _envelope(signatures=[{"keyid": 1, "sig": ""}]),
        "keyid must be a string",
        "env.signatures[0].keyid",
    ),
    "sig-not-string": (
        _envelope(signatures=[{"keyid": "k", "sig": None}]),
        "expected a base64 string",
        "env.signatures[0].sig",
    ),
    "sig-not-base64": (
        _envelope(signatures=[{"keyid": "k", "sig": "a*b="}]),
        "invalid base64: ",
        "env.signatures[0].sig",
    ),
    "payload-not-ascii": (
        _envelope(payload="\u00e9\u00e9\u00e9\u00e9"),
        "invalid base64: ",
        "env.payload",
    ),
    "payload-bad-padding": (_envelope(payload="abc"), "invalid base64: ", "env.payload"),
    "payload-not-string": (_envelope(payload=["x"]), "expected a base64 string", "env.payload"),
}


@pytest.mark.parametrize("case", list(BAD_ENVELOPES), ids=list(BAD_ENVELOPES))
def test_a_malformed_envelope_is_refused_with_its_place(case: str) -> None:
    value, message, where = BAD_ENVELOPES[case]
    _refused(lambda: parse_envelope(value, "env"), message, where)


def _refused(parse: Callable[[], object], message: str, where: str) -> None:
    """`parse` refuses with `message` (its start, when it ends with ": ") at `where`."""
    with pytest.raises(MalformedSignatureBundle) as caught:
        parse()
    assert caught.value.error_id == "signature.malformed"
    assert caught.value.message.startswith(message), caught.value.message
    if not message.endswith(": "):
        assert caught.value.message == message
    assert caught.value.where == where


def _bundle(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "mediaType": SIGSTORE_BUNDLE_MEDIA_TYPE,
        "verificationMaterial": {"publicKey": {"hint": "k1"}, "tlogEntries": []},
        "dsseEnvelope": _envelope(),
    }
    doc.update(changes)
    return doc


def test_a_good_bundle_parses() -> None:
    parsed = parse_sigstore_bundle(json.dumps(_bundle()).encode(), "f.json")
    assert parsed.hint == "k1"
    assert parsed.envelope == parse_envelope(_envelope(), "x")


# name -> (the bundle bytes, message start, where)
BAD_BUNDLES: dict[str, tuple[bytes, str, str]] = {
    "not-json": (b"{", "not JSON: ", "f.json"),
    "too-deep": (
        b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1),
        f"JSON nested {MAX_JSON_DEPTH + 1} deep, more than {MAX_JSON_DEPTH}",
        "f.json",
    ),
    "not-an-object": (b"[]", "expected a JSON object", "f.json"),
    "missing-envelope": (
        json.dumps({k: v for k, v in _bundle().items() if k != "dsseEnvelope"}).encode(),
        "missing field(s) ['dsseEnvelope']",
        "f.json",
    ),
    "media-type": (
        json.dumps(_bundle(mediaType="application/json")).encode(),
        f"mediaType 'application/json' is not {SIGSTORE_BUNDLE_MEDIA_TYPE!r}",
        "f.json: mediaType",
    ),
    "material-extra": (
        json.dumps(
            _bundle(verificationMaterial={"publicKey": {"hint": "k"}, "tlogEntries": [], "x": 0})
        ).encode(),
        "unknown field(s) ['x']",
        "f.json: verificationMaterial",
    ),
    "tlog-entry": (
        json.dumps(
            _bundle(verificationMaterial={"publicKey": {"hint": "k"}, "tlogEntries": [{}]})
        ).encode(),
        "tlogEntries must be empty (releases are signed with a local key, no log)",
        "f.json: verificationMaterial.tlogEntries",
    ),
    "tlog-null": (
        json.dumps(
            _bundle(verificationMaterial={"publicKey": {"hint": "k"}, "tlogEntries": None})
        ).encode(),
        "tlogEntries must be empty (releases are signed with a local key, no log)",
        "f.json: verificationMaterial.tlogEntries",
    ),
    "public-key-extra": (
        json.dumps(
            _bundle(
                verificationMaterial={"publicKey": {"hint": "k", "rawBytes": ""}, "tlogEntries": []}
            )
        ).encode(),
        "unknown field(s) ['rawBytes']",
        "f.json: verificationMaterial.publicKey",
    ),
    "hint-not-string": (
        json.dumps(
            _bundle(verificationMaterial={"publicKey": {"hint": 5}, "tlogEntries": []})
        ).encode(),
        "hint must be a string",
        "f.json: publicKey.hint",
    ),
    "empty-signatures": (
        json.dumps(_bundle(dsseEnvelope=_envelope(signatures=[]))).encode(),
        "signatures must be a non-empty list",
        "f.json: dsseEnvelope",
    ),
}


@pytest.mark.parametrize("case", list(BAD_BUNDLES), ids=list(BAD_BUNDLES))
def test_a_malformed_bundle_is_refused_with_its_place(case: str) -> None:
    data, message, where = BAD_BUNDLES[case]
    _refused(lambda: parse_sigstore_bundle(data, "f.json"), message, where)


def test_bundle_bytes_are_canonical_and_read_back() -> None:
    envelope = Envelope("t/x", b"hi", (DsseSignature("kid", b"\x01\x02"),))
    data = sigstore_bundle_json(envelope, "kid")
    assert data == (
        b'{"dsseEnvelope":{"payload":"aGk=","payloadType":"t/x","signatures":[{"keyid":"kid",'
        b'"sig":"AQI="}]},"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json",'
        b'"verificationMaterial":{"publicKey":{"hint":"kid"},"tlogEntries":[]}}\n'
    )
    parsed = parse_sigstore_bundle(data, "x")
    assert (parsed.hint, parsed.envelope) == ("kid", envelope)


def test_one_signature_is_checked_over_pae() -> None:
    payload = b'{"a":1}'
    keyid = keyid_of(KEY.public_key())
    good = Envelope("t/x", payload, (DsseSignature(keyid, KEY.sign(pae("t/x", payload))),))
    verify_signature(good, good.signatures[0], KEY.public_key(), "w")
    # a signature over the bare payload (not PAE) does not verify
    bare = DsseSignature(keyid, KEY.sign(payload))
    with pytest.raises(SignatureInvalid) as caught:
        verify_signature(good, bare, KEY.public_key(), "w")
    assert caught.value.error_id == "signature.invalid"
    assert caught.value.message == f"the signature by key {keyid[:16]}… does not verify"
    assert caught.value.where == "w"
    # nor one over PAE with another payload type
    other = Envelope("t/y", payload, good.signatures)
    with pytest.raises(SignatureInvalid):
        verify_signature(other, good.signatures[0], KEY.public_key(), "w")
