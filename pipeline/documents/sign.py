"""Sign exact bytes: a DSSE envelope (Ed25519) wrapped in a sigstore bundle v0.3.

Ed25519 signatures are deterministic, so the same payload and key give the same bundle
bytes (part of "releasing twice gives byte-identical bundles").
"""

from __future__ import annotations

from dataclasses import replace

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from verify.bundle.dsse import (
    DsseSignature,
    Envelope,
    keyid_of,
    pae,
    parse_sigstore_bundle,
    sigstore_bundle_json,
)


def sign_envelope(key: Ed25519PrivateKey, payload_type: str, payload: bytes) -> Envelope:
    keyid = keyid_of(key.public_key())
    signature = key.sign(pae(payload_type, payload))
    return Envelope(payload_type, payload, (DsseSignature(keyid, signature),))


def sign_to_sigstore_bundle(key: Ed25519PrivateKey, payload_type: str, payload: bytes) -> bytes:
    """Sigstore bundle v0.3 JSON whose publicKey.hint is the signing keyid."""
    envelope = sign_envelope(key, payload_type, payload)
    return sigstore_bundle_json(envelope, hint=envelope.signatures[0].keyid)


def add_signature(key: Ed25519PrivateKey, bundle_json: bytes, where: str) -> bytes:
    """A co-signature: `bundle_json` (a v0.3 bundle) with `key`'s signature over the same
    PAE(payloadType, payload) added. The payload, its type, the hint and every existing
    signature stay as they are; signatures are ordered by keyid, so the same set of signers
    gives the same bytes in whatever order they signed. A key that already signed is refused
    (`AlreadySigned`)."""
    parsed = parse_sigstore_bundle(bundle_json, where)
    keyid = keyid_of(key.public_key())
    if keyid in {s.keyid for s in parsed.envelope.signatures}:
        raise AlreadySigned(keyid, where)
    envelope = parsed.envelope
    mine = DsseSignature(keyid, key.sign(pae(envelope.payload_type, envelope.payload)))
    signatures = tuple(sorted((*envelope.signatures, mine), key=lambda s: s.keyid))
    return sigstore_bundle_json(replace(envelope, signatures=signatures), hint=parsed.hint)


class AlreadySigned(Exception):
    """The key has already signed this envelope: one key is one vote, never two."""

    def __init__(self, keyid: str, where: str) -> None:
        super().__init__(f"key {keyid} has already signed {where}")
        self.keyid = keyid
        self.where = where
