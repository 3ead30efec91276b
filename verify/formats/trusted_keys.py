"""`tinyrustlm.trusted-keys.v1`: the verifier's trust root as people write it.

    {"schema": "tinyrustlm.trusted-keys.v1",
     "keys": [{"keyid": "<hex sha256 of SPKI DER>", "public_key_pem": "-----BEGIN PUBLIC KEY...",
               "role": "release" | "development", "not_after": "2031-01-01T00:00:00Z"}],
     "signers": "one-key"}

The shape only; `verify.bundle.trusted_keys` loads it (keyids checked against their keys).
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, Field

from verify.formats.base import Frozen, Sha256Hex

TRUSTED_KEYS_SCHEMA = "tinyrustlm.trusted-keys.v1"
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
