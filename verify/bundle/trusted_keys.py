"""The verifier's trust root: which keys, and the signing policy a release must meet
(the formats: `verify.formats.trusted_keys`).

v1 (still read; `keygen` writes it for one key):

    {"schema": "tinyrustlm.trusted-keys.v1",
     "keys": [{"keyid": "<hex sha256 of SPKI DER>", "public_key_pem": "-----BEGIN PUBLIC KEY...",
               "role": "release" | "development", "not_after": "2031-01-01T00:00:00Z"}],
     "signers": "one-key" | "any-trusted-key"}

v2 (threshold co-signing, `tinyrustlm-release trust-policy` writes it):

    {"schema": "tinyrustlm.trusted-keys.v2",
     "keys": [{..., "not_before": "2026-01-01T00:00:00Z", "not_after": "2028-01-01T00:00:00Z"}],
     "policy": {"manifest":   {"keyids": ["<keyid>", ...], "threshold": 2},
                "provenance": {"keyids": ["<keyid>", ...], "threshold": 2}},
     "revoked": [{"keyid": "<keyid>", "reason": "laptop stolen 2026-11-30"}],
     "keyless": {"identity": "https://github.com/O/R/.github/workflows/release.yml@refs/...",
                 "issuer": "https://token.actions.githubusercontent.com"}}   (optional)

A keyid that is not the digest of its own key is refused when the file is loaded, so a
keyid can never name a different key than the one it is written beside. A document
(manifest, provenance) is accepted when at least `threshold` DISTINCT keys of its rule's
`keyids` signed its DSSE envelope, each key listed, within [not_before, not_after) at the
verification time, not revoked, and not a development key unless allowed. A signature that
does not count (untrusted, revoked, outside its window, not allowed for the document) is
ignored, as TUF does; one key signing an envelope twice, or a listed key's signature that
does not verify, refuses the bundle. v1 reads as threshold 1 of every listed key, and its
`signers: "one-key"` (the default) additionally requires the manifest and the provenance to be
signed by the same key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    PublicFormat,
    load_pem_public_key,
)
from pydantic import BaseModel, ValidationError

from verify.bundle import errors as e
from verify.bundle.dsse import (
    DsseSignature,
    SigstoreBundle,
    keyid_of,
    parse_sigstore_bundle,
    verify_signature,
)
from verify.bundle.errors import TrustedKeysInvalid
from verify.bundle.keyless import KeylessIdentity
from verify.canonical import MalformedJson, parse_json
from verify.formats.base import strict_model
from verify.formats.trusted_keys import (
    SIGNED_DOCUMENTS,
    TRUSTED_KEYS_SCHEMA_V2,
    KeyRole,
    SignedDocument,
    TrustedKeyEntry,
    TrustedKeyEntryV2,
    TrustedKeysFile,
    TrustedKeysFileV2,
)
from verify.inputs import read_regular_file

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class TrustedKey:
    keyid: str
    public_key: Ed25519PublicKey
    role: KeyRole
    not_after_epoch: int
    not_before_epoch: int | None = None


@dataclass(frozen=True)
class Rule:
    keyids: frozenset[str]
    threshold: int


@dataclass(frozen=True)
class TrustRoot:
    """The verifier's trust: keyid -> key, the signing rule per document, revoked keys, and
    (v1 only) whether one key must sign everything."""

    keys: dict[str, TrustedKey]
    one_signer: bool
    rules: dict[str, Rule] = field(default_factory=dict)  # document -> rule (none: v1 rule)
    revoked: dict[str, str] = field(default_factory=dict)  # keyid -> reason
    keyless: KeylessIdentity | None = None  # must also have signed manifest.json

    def rule(self, document: SignedDocument) -> Rule:
        return self.rules.get(document) or Rule(frozenset(self.keys), 1)


def trust_root_from_keys(keys: Mapping[str, TrustedKey], one_signer: bool = True) -> TrustRoot:
    """A v1 trust root over `keys`: threshold 1 of any of them."""
    return TrustRoot(dict(keys), one_signer)


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


def trust_policy_json(doc: TrustedKeysFileV2) -> bytes:
    """A v2 document's bytes, checked the way the verifier reads them."""
    data = (doc.model_dump_json(by_alias=True, indent=2, exclude_none=True) + "\n").encode()
    trust_root_of(data, "trust policy")
    return data


def load_trusted_keys(path: Path) -> dict[str, TrustedKey]:
    """keyid -> trusted key (see `load_trust_root`). The keys only: a v2 file's revocations
    and rules are not in it, so whatever decides trust reads `load_trust_root`."""
    return load_trust_root(path).keys


def load_trust_root(path: Path) -> TrustRoot:
    """The trusted-keys file; a FIFO, device or oversized file is an `InputError`, any
    other problem with it a `TrustedKeysInvalid` naming it."""
    return trust_root_of(read_regular_file(path, "trusted-keys"), str(path))


def _validated(model: type[M], doc: object, where: str) -> M:
    try:
        return strict_model(model, doc)  # `true` is no threshold, a number no time
    except ValidationError as exc:
        first = exc.errors()[0]
        field_name = ".".join(str(p) for p in first["loc"])
        raise TrustedKeysInvalid(f"{first['msg']}", where=f"{where}: {field_name}") from exc


def _key_of(entry: TrustedKeyEntry, where: str) -> TrustedKey:
    try:
        public_key = load_pem_public_key(entry.public_key_pem.encode("ascii"))
    except (ValueError, UnicodeEncodeError) as exc:
        raise TrustedKeysInvalid(f"unreadable public_key_pem: {exc}", where=where) from exc
    if not isinstance(public_key, Ed25519PublicKey):
        raise TrustedKeysInvalid("only Ed25519 keys are accepted", where=where)
    if keyid_of(public_key) != entry.keyid:
        raise TrustedKeysInvalid(
            "keyid is not the SHA-256 of the key's SPKI DER", where=f"{where}.keyid"
        )
    not_before = getattr(entry, "not_before", None)
    if not_before is not None and not_before >= entry.not_after:
        raise TrustedKeysInvalid("not_before is not before not_after", where=f"{where}.not_before")
    return TrustedKey(
        entry.keyid,
        public_key,
        entry.role,
        int(entry.not_after.timestamp()),
        None if not_before is None else int(not_before.timestamp()),
    )


def _keys_of(
    entries: list[TrustedKeyEntry] | list[TrustedKeyEntryV2], where: str
) -> dict[str, TrustedKey]:
    if not entries:
        raise TrustedKeysInvalid("no keys: an empty trust root trusts nothing", where=where)
    keys: dict[str, TrustedKey] = {}
    for i, entry in enumerate(entries):
        key = _key_of(entry, f"{where}: keys[{i}]")
        if key.keyid in keys:
            raise TrustedKeysInvalid("duplicate keyid", where=f"{where}: keys[{i}].keyid")
        keys[key.keyid] = key
    return keys


def trust_root_of(data: bytes, where: str) -> TrustRoot:
    """The trust root in a trusted-keys document's bytes (`where` names them in errors)."""
    try:
        doc = parse_json(data, where)
    except MalformedJson as exc:
        if data.lstrip().startswith(b"-----BEGIN"):
            raise TrustedKeysInvalid(
                "a PEM key, not a trusted-keys JSON file",
                where=where,
                hint="give the NAME.trusted-keys.json that `keygen` writes beside NAME.pub.pem",
            ) from exc
        raise TrustedKeysInvalid(f"{exc.message} ({exc.error_id})", where=where) from exc
    if not isinstance(doc, dict) or doc.get("schema") != TRUSTED_KEYS_SCHEMA_V2:
        v1 = _validated(TrustedKeysFile, doc, where)
        return TrustRoot(_keys_of(v1.keys, where), one_signer=v1.signers == "one-key")
    v2 = _validated(TrustedKeysFileV2, doc, where)
    keys = _keys_of(v2.keys, where)
    rules: dict[str, Rule] = {}
    for document in SIGNED_DOCUMENTS:
        rule = v2.policy.get(document)
        rule_where = f"{where}: policy.{document}"
        if rule is None:
            raise TrustedKeysInvalid(f"no signing rule for the {document}", where=rule_where)
        unknown = sorted(set(rule.keyids) - keys.keys())
        if unknown:
            raise TrustedKeysInvalid(
                f"keyid {unknown[0]} is not one of the file's keys", where=f"{rule_where}.keyids"
            )
        if len(set(rule.keyids)) != len(rule.keyids):
            raise TrustedKeysInvalid("a keyid is listed twice", where=f"{rule_where}.keyids")
        if rule.threshold > len(rule.keyids):
            raise TrustedKeysInvalid(
                f"threshold {rule.threshold} of {len(rule.keyids)} key(s) can never be met",
                where=f"{rule_where}.threshold",
            )
        rules[document] = Rule(frozenset(rule.keyids), rule.threshold)
    revoked: dict[str, str] = {}
    for i, entry in enumerate(v2.revoked):
        if entry.keyid in revoked:
            raise TrustedKeysInvalid("revoked twice", where=f"{where}: revoked[{i}].keyid")
        revoked[entry.keyid] = entry.reason
    keyless = None
    if v2.keyless is not None:
        keyless = KeylessIdentity(v2.keyless.identity, v2.keyless.issuer, v2.keyless.instance)
    return TrustRoot(keys, one_signer=False, rules=rules, revoked=revoked, keyless=keyless)


@dataclass(frozen=True)
class Counted:
    """One envelope judged against one document's rule."""

    bundle: SigstoreBundle
    signers: tuple[TrustedKey, ...]  # distinct, counted, in envelope order


def _refusal(
    signature: DsseSignature,
    document: SignedDocument,
    root: TrustRoot,
    allow_dev_key: bool,
    now: int,
    where: str,
) -> e.BundleRejected | None:
    """Why this signature (already verified when its key is listed) does not count."""
    keyid = signature.keyid
    key = root.keys.get(keyid)
    if key is None:
        return e.UntrustedKey(
            f"signed by key {keyid} which is not in the trusted-keys file", where=f"{where}.keyid"
        )
    if keyid in root.revoked:
        return e.KeyRevoked(
            f"key {keyid[:16]}… is revoked ({root.revoked[keyid]})", where=f"{where}: revoked"
        )
    if key.not_before_epoch is not None and now < key.not_before_epoch:
        return e.KeyNotYetValid(
            f"key {keyid[:16]}… is trusted only from epoch {key.not_before_epoch} (now {now})",
            where=f"{where}: trusted key not_before",
        )
    if now >= key.not_after_epoch:
        return e.KeyExpired(
            f"key {keyid[:16]}… is trusted only until epoch {key.not_after_epoch}",
            where=f"{where}: trusted key not_after",
        )
    if keyid not in root.rule(document).keyids:
        return e.KeyNotAllowed(
            f"key {keyid[:16]}… is trusted but the policy does not let it sign the {document}",
            where=f"{where}: policy.{document}.keyids",
        )
    if key.role == "development" and not allow_dev_key:
        return e.DevKeyRefused(
            f"signed by development key {keyid[:16]}…; pass --allow-dev-key to "
            "accept a local trial build",
            where=where,
        )
    return None


def check_envelope(
    data: bytes,
    name: str,
    document: SignedDocument,
    root: TrustRoot,
    allow_dev_key: bool,
    now: int,
) -> Counted:
    """One signature bundle (file `name`) judged against `document`'s rule: at least
    `threshold` distinct counted keys, or the refusal naming how many of how many."""
    bundle = parse_sigstore_bundle(data, name)
    rule = root.rule(document)
    seen: set[str] = set()
    counted: list[TrustedKey] = []
    refused: list[e.BundleRejected] = []
    for i, signature in enumerate(bundle.envelope.signatures):
        where = f"{name}: dsseEnvelope.signatures[{i}]"
        if signature.keyid in seen:
            raise e.SignatureDuplicated(
                f"key {signature.keyid[:16]}… signed this envelope twice; a threshold counts "
                "distinct keys",
                where=f"{where}.keyid",
            )
        seen.add(signature.keyid)
        key = root.keys.get(signature.keyid)
        if key is not None:  # a listed key's signature must verify, counted or not
            verify_signature(bundle.envelope, signature, key.public_key, name)
        refusal = _refusal(signature, document, root, allow_dev_key, now, where)
        if refusal is None:
            assert key is not None
            counted.append(key)
        else:
            refused.append(refusal)
    if len(counted) >= rule.threshold:
        return Counted(bundle, tuple(counted))
    if rule.threshold == 1 and len(refused) == 1:
        raise refused[0]  # the one signature's own reason (the v1 verifier's errors)
    reasons = "; ".join(r.message for r in refused) or "no other signatures"
    raise e.ThresholdNotMet(
        f"{len(counted)} of {rule.threshold} required signatures on the {document} "
        f"(distinct trusted keys out of {len(rule.keyids)} allowed); not counted: {reasons}",
        where=f"{name}: dsseEnvelope.signatures",
    )


def check_signed(
    data: bytes, name: str, trusted: dict[str, TrustedKey], allow_dev_key: bool, now: int
) -> tuple[SigstoreBundle, TrustedKey]:
    """One single-signature bundle by any key of `trusted` (v1 rule; the rebuild
    attestations and the conformance matrix's pre-check of a v1 file)."""
    bundle = parse_sigstore_bundle(data, name)
    if len(bundle.envelope.signatures) != 1:
        raise e.MalformedSignatureBundle(
            f"expected exactly one signature, found {len(bundle.envelope.signatures)}",
            where=name,
        )
    counted = check_envelope(
        data, name, "manifest", trust_root_from_keys(trusted), allow_dev_key, now
    )
    return counted.bundle, counted.signers[0]
