"""DSSE envelopes with Ed25519, shipped as sigstore bundles v0.3 (no transparency log).

Formats, not policy: PAE, keyid, strict parsing of envelopes and bundles, and checking one
signature against one public key. Which keys are trusted is `verify.bundle.trusted_keys`; what a
verifier must check, in which order, is `verify.bundle.verifier`.

    DSSE: https://github.com/secure-systems-lab/dsse/blob/v1.0.0/protocol.md
    bundle: https://github.com/sigstore/protobuf-specs (Bundle, mediaType v0.3)
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from verify.bundle.errors import MalformedSignatureBundle, SignatureInvalid
from verify.canonical import MalformedJson, canonical_json, parse_json

SIGSTORE_BUNDLE_MEDIA_TYPE = "application/vnd.dev.sigstore.bundle.v0.3+json"


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding: the exact bytes that are signed."""
    type_bytes = payload_type.encode("utf-8")
    return b"DSSEv1 %d %b %d %b" % (len(type_bytes), type_bytes, len(payload), payload)


def keyid_of(public_key: Ed25519PublicKey) -> str:
    """keyid = hex SHA-256 of the public key's SubjectPublicKeyInfo DER."""
    spki = public_key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(spki).hexdigest()


@dataclass(frozen=True)
class DsseSignature:
    keyid: str
    sig: bytes


@dataclass(frozen=True)
class Envelope:
    payload_type: str
    payload: bytes
    signatures: tuple[DsseSignature, ...]


@dataclass(frozen=True)
class SigstoreBundle:
    """The parts of a v0.3 bundle we use: the unauthenticated key hint and the envelope."""

    hint: str
    envelope: Envelope


def _b64(text: object, where: str) -> bytes:
    if not isinstance(text, str):
        raise MalformedSignatureBundle("expected a base64 string", where=where)
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise MalformedSignatureBundle(f"invalid base64: {exc}", where=where) from exc


def _object(value: object, keys: set[str], where: str) -> dict[str, Any]:
    """`value` as an object with exactly `keys` (strict on structure)."""
    if not isinstance(value, dict):
        raise MalformedSignatureBundle("expected a JSON object", where=where)
    missing = keys - value.keys()
    unknown = value.keys() - keys
    if missing:
        raise MalformedSignatureBundle(f"missing field(s) {sorted(missing)}", where=where)
    if unknown:
        raise MalformedSignatureBundle(f"unknown field(s) {sorted(unknown)}", where=where)
    return value


def parse_envelope(value: object, where: str) -> Envelope:
    obj = _object(value, {"payload", "payloadType", "signatures"}, where)
    if not isinstance(obj["payloadType"], str):
        raise MalformedSignatureBundle("payloadType must be a string", where=f"{where}.payloadType")
    sigs = obj["signatures"]
    if not isinstance(sigs, list) or not sigs:
        raise MalformedSignatureBundle("signatures must be a non-empty list", where=where)
    parsed: list[DsseSignature] = []
    for i, raw in enumerate(sigs):
        sig_where = f"{where}.signatures[{i}]"
        sig_obj = _object(raw, {"sig", "keyid"}, sig_where)
        if not isinstance(sig_obj["keyid"], str):
            raise MalformedSignatureBundle("keyid must be a string", where=f"{sig_where}.keyid")
        parsed.append(DsseSignature(sig_obj["keyid"], _b64(sig_obj["sig"], f"{sig_where}.sig")))
    return Envelope(
        payload_type=obj["payloadType"],
        payload=_b64(obj["payload"], f"{where}.payload"),
        signatures=tuple(parsed),
    )


def parse_sigstore_bundle(data: bytes, where: str) -> SigstoreBundle:
    """Strictly read a v0.3 bundle holding a DSSE envelope and a public-key hint."""
    try:
        doc = parse_json(data, where)
    except MalformedJson as exc:  # a corrupt signature file is a rejection, not a crash
        raise MalformedSignatureBundle(str(exc), where=where) from exc
    top = _object(doc, {"mediaType", "verificationMaterial", "dsseEnvelope"}, where)
    if top["mediaType"] != SIGSTORE_BUNDLE_MEDIA_TYPE:
        raise MalformedSignatureBundle(
            f"mediaType {top['mediaType']!r} is not {SIGSTORE_BUNDLE_MEDIA_TYPE!r}",
            where=f"{where}: mediaType",
        )
    material = _object(
        top["verificationMaterial"], {"publicKey", "tlogEntries"}, f"{where}: verificationMaterial"
    )
    if material["tlogEntries"] != []:
        raise MalformedSignatureBundle(
            "tlogEntries must be empty (releases are signed with a local key, no log)",
            where=f"{where}: verificationMaterial.tlogEntries",
        )
    key = _object(material["publicKey"], {"hint"}, f"{where}: verificationMaterial.publicKey")
    if not isinstance(key["hint"], str):
        raise MalformedSignatureBundle("hint must be a string", where=f"{where}: publicKey.hint")
    envelope = parse_envelope(top["dsseEnvelope"], f"{where}: dsseEnvelope")
    return SigstoreBundle(hint=key["hint"], envelope=envelope)


def sigstore_bundle_json(envelope: Envelope, hint: str) -> bytes:
    """The canonical JSON bytes of a v0.3 bundle (deterministic: same inputs, same bytes)."""
    doc = {
        "mediaType": SIGSTORE_BUNDLE_MEDIA_TYPE,
        "verificationMaterial": {"publicKey": {"hint": hint}, "tlogEntries": []},
        "dsseEnvelope": {
            "payload": base64.b64encode(envelope.payload).decode("ascii"),
            "payloadType": envelope.payload_type,
            "signatures": [
                {"keyid": s.keyid, "sig": base64.b64encode(s.sig).decode("ascii")}
                for s in envelope.signatures
            ],
        },
    }
    return canonical_json(doc) + b"\n"


def verify_signature(
    envelope: Envelope, signature: DsseSignature, public_key: Ed25519PublicKey, where: str
) -> None:
    """Check one Ed25519 signature over PAE(payloadType, payload) as received."""
    try:
        public_key.verify(signature.sig, pae(envelope.payload_type, envelope.payload))
    except InvalidSignature as exc:
        raise SignatureInvalid(
            f"the signature by key {signature.keyid[:16]}… does not verify", where=where
        ) from exc
