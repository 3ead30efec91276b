"""`tinyrustlm.trusted-keys.v1` and `.v2`: the verifier's trust root as people write it.

    {"schema": "tinyrustlm.trusted-keys.v1",
     "keys": [{"keyid": "<hex sha256 of SPKI DER>", "public_key_pem": "-----BEGIN PUBLIC KEY...",
               "role": "release" | "development", "not_after": "2031-01-01T00:00:00Z"}],
     "signers": "one-key"}

v2 adds the signing policy (threshold co-signing): per-key validity windows, which keys may
sign each document and how many must, revocations and an optional keyless identity (see
`verify.bundle.trusted_keys`, which loads both, keyids checked against their keys).
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, Field

from verify.formats.base import Frozen, Sha256Hex

TRUSTED_KEYS_SCHEMA = "tinyrustlm.trusted-keys.v1"
TRUSTED_KEYS_SCHEMA_V2 = "tinyrustlm.trusted-keys.v2"
SignedDocument = Literal["manifest", "provenance"]
SIGNED_DOCUMENTS: tuple[SignedDocument, ...] = ("manifest", "provenance")
SigstoreInstance = Literal["production", "staging"]
KeyRole = Literal["release", "development"]
SignerPolicy = Literal["one-key", "any-trusted-key"]


class TrustedKeyEntry(Frozen):
    keyid: Sha256Hex
    public_key_pem: str
    role: KeyRole
    not_after: AwareDatetime


class TrustedKeysFile(Frozen):
    schema_: Literal["tinyrustlm.trusted-keys.v1"] = Field(
        "tinyrustlm.trusted-keys.v1", alias="schema"
    )
    keys: list[TrustedKeyEntry]
    signers: SignerPolicy = Field(
        "one-key",
        description="one-key: manifest and provenance must be signed by the same key; "
        "any-trusted-key: each by any key listed here",
    )


class TrustedKeyEntryV2(TrustedKeyEntry):
    not_before: AwareDatetime | None = Field(
        None, description="the key counts from this instant on (inclusive); none: always"
    )


class SigningRule(Frozen):
    keyids: list[Sha256Hex] = Field(min_length=1, description="keys that may sign this document")
    threshold: int = Field(ge=1, description="how many distinct ones of them must")


class RevokedKey(Frozen):
    keyid: Sha256Hex
    reason: str = Field(min_length=1)


class KeylessRule(Frozen):
    identity: str = Field(min_length=1, description="the Fulcio certificate's SAN")
    issuer: str = Field(min_length=1, description="the OIDC issuer that vouched for it")
    instance: SigstoreInstance = "production"


class TrustedKeysFileV2(Frozen):
    schema_: Literal["tinyrustlm.trusted-keys.v2"] = Field(alias="schema")
    keys: list[TrustedKeyEntryV2]
    policy: dict[SignedDocument, SigningRule]
    revoked: list[RevokedKey] = Field(default_factory=list)
    keyless: KeylessRule | None = Field(
        None, description="a Sigstore keyless identity that must also sign manifest.json"
    )
