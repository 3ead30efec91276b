"""Sign exact bytes: a DSSE envelope (Ed25519) wrapped in a sigstore bundle v0.3.

Ed25519 signatures are deterministic, so the same payload and key give the same bundle
bytes (part of "releasing twice gives byte-identical bundles").
"""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from verify.bundle.dsse import DsseSignature, Envelope, keyid_of, pae, sigstore_bundle_json


def sign_envelope(key: Ed25519PrivateKey, payload_type: str, payload: bytes) -> Envelope:
    keyid = keyid_of(key.public_key())
    signature = key.sign(pae(payload_type, payload))
    return Envelope(payload_type, payload, (DsseSignature(keyid, signature),))


def sign_to_sigstore_bundle(key: Ed25519PrivateKey, payload_type: str, payload: bytes) -> bytes:
    """Sigstore bundle v0.3 JSON whose publicKey.hint is the signing keyid."""
    envelope = sign_envelope(key, payload_type, payload)
    return sigstore_bundle_json(envelope, hint=envelope.signatures[0].keyid)
