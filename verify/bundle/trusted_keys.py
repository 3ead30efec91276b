"""The verifier's trust root: a JSON file of keyid -> public key PEM, role, not-after
(its format: `verify.formats.trusted_keys`, `tinyrustlm.trusted-keys.v1`).

A keyid that is not the digest of its own key is refused when the file is loaded, so a
keyid can never name a different key than the one it is written beside. `signers` is the
trust policy for a bundle's two signatures: "one-key" (the default) requires the manifest and
the provenance to be signed by the same key; "any-trusted-key" lets each be signed by any
key in the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    PublicFormat,
    load_pem_public_key,
)
from pydantic import ValidationError

from verify.bundle import errors as e
from verify.bundle.dsse import SigstoreBundle, keyid_of, parse_sigstore_bundle, verify_signature
from verify.bundle.errors import TrustedKeysInvalid
from verify.canonical import MalformedJson, parse_json
from verify.formats.trusted_keys import KeyRole, TrustedKeyEntry, TrustedKeysFile
from verify.inputs import read_regular_file


@dataclass(frozen=True)
class TrustedKey:
    keyid: str
    public_key: Ed25519PublicKey
    role: KeyRole
    not_after_epoch: int


@dataclass(frozen=True)
class TrustRoot:
    """The verifier's trust: keyid -> key, and whether one key must sign everything."""

    keys: dict[str, TrustedKey]
    one_signer: bool


def trusted_key_entry(
    public_key: Ed25519PublicKey, role: KeyRole, not_after: datetime
) -> TrustedKeyEntry:
    pem = public_key.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo).decode("ascii")
    return TrustedKeyEntry(
        keyid=keyid_of(public_key), public_key_pem=pem, role=role, not_after=not_after
    )


def trusted_keys_json(entries: list[TrustedKeyEntry]) -> bytes:
    doc = TrustedKeysFile.model_validate({"keys": entries})
    return (doc.model_dump_json(by_alias=True, indent=2) + "\n").encode("utf-8")


def load_trusted_keys(path: Path) -> dict[str, TrustedKey]:
    """keyid -> trusted key (see `load_trust_root`)."""
    return load_trust_root(path).keys


def load_trust_root(path: Path) -> TrustRoot:
    """The trusted-keys file; a FIFO, device or oversized file is an `InputError`, any
    other problem with it a `TrustedKeysInvalid` naming it."""
    return trust_root_of(read_regular_file(path, "trusted-keys"), str(path))


def trust_root_of(data: bytes, where: str) -> TrustRoot:
    """The trust root in a trusted-keys document's bytes (`where` names them in errors)."""
    try:
        doc = TrustedKeysFile.model_validate(parse_json(data, where))
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise TrustedKeysInvalid(f"{first['msg']}", where=f"{where}: {field}") from exc
    except MalformedJson as exc:
        if data.lstrip().startswith(b"-----BEGIN"):
            raise TrustedKeysInvalid(
                "a PEM key, not a trusted-keys JSON file",
                where=where,
                hint="give the NAME.trusted-keys.json that `keygen` writes beside NAME.pub.pem",
            ) from exc
        raise TrustedKeysInvalid(f"{exc.message} ({exc.error_id})", where=where) from exc
    if not doc.keys:
        raise TrustedKeysInvalid("no keys: an empty trust root trusts nothing", where=where)
    keys: dict[str, TrustedKey] = {}
    for i, entry in enumerate(doc.keys):
        entry_where = f"{where}: keys[{i}]"
        try:
            public_key = load_pem_public_key(entry.public_key_pem.encode("ascii"))
        except (ValueError, UnicodeEncodeError) as exc:
            raise TrustedKeysInvalid(
                f"unreadable public_key_pem: {exc}", where=entry_where
            ) from exc
        if not isinstance(public_key, Ed25519PublicKey):
            raise TrustedKeysInvalid("only Ed25519 keys are accepted", where=entry_where)
        if keyid_of(public_key) != entry.keyid:
            raise TrustedKeysInvalid(
                "keyid is not the SHA-256 of the key's SPKI DER", where=f"{entry_where}.keyid"
            )
        if entry.keyid in keys:
            raise TrustedKeysInvalid("duplicate keyid", where=f"{entry_where}.keyid")
        keys[entry.keyid] = TrustedKey(
            entry.keyid, public_key, entry.role, int(entry.not_after.timestamp())
        )
    return TrustRoot(keys, one_signer=doc.signers == "one-key")


def check_signed(
    data: bytes, name: str, trusted: dict[str, TrustedKey], allow_dev_key: bool, now: int
) -> tuple[SigstoreBundle, TrustedKey]:
    """One signature bundle (file `name`) judged against the trust root: exactly one
    signature, by a trusted key, valid, within the key's not-after, and a development key
    only when allowed. The verifier's steps 2-4 and the conformance matrix's pre-check."""
    bundle = parse_sigstore_bundle(data, name)
    if len(bundle.envelope.signatures) != 1:
        raise e.MalformedSignatureBundle(
            f"expected exactly one signature, found {len(bundle.envelope.signatures)}",
            where=name,
        )
    signature = bundle.envelope.signatures[0]
    key = trusted.get(signature.keyid)
    if key is None:
        raise e.UntrustedKey(
            f"signed by key {signature.keyid} which is not in the trusted-keys file",
            where=f"{name}: dsseEnvelope.signatures[0].keyid",
        )
    verify_signature(bundle.envelope, signature, key.public_key, name)
    if now >= key.not_after_epoch:
        raise e.KeyExpired(
            f"key {key.keyid[:16]}… is trusted only until epoch {key.not_after_epoch}",
            where=f"{name}: trusted key not_after",
        )
    if key.role == "development" and not allow_dev_key:
        raise e.DevKeyRefused(
            f"signed by development key {key.keyid[:16]}…; pass --allow-dev-key to "
            "accept a local trial build",
            where=name,
        )
    return bundle, key
