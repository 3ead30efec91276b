"""One table, two verifiers: who may sign the manifest (issue 23).

Each row is a trusted-keys document (v1, or a v2 trust policy with its threshold, windows,
revocations) and a manifest envelope signed by some keys, judged at one instant. verify/
(`trust_root_of` + `check_envelope`, what `tinyrustlm-verify bundle` runs in step 2) and the
loader (`verifySignedManifest`, step 1 in node) must both give the row's verdict: the same
acceptance with the same counted keys, or the same refusal, named by the verifier's error id
here and by the loader code `LOADER_CODE` maps it to. test_trust_agreement.py drives both.

The keys are real `keygen` keys; alice's is the release harness's release key, and the
envelope of the `cosigned` rows is the harness's released bundle co-signed by bob with
`tinyrustlm-release sign`. Times are seconds after `BASE` (an hour after the release's commit,
well inside the manifest's validity); a window bound is written "+100", "+100.5" (a fraction:
both verifiers take whole seconds toward zero, Python's int(timestamp())) or "+100 +01:00"
(the same instant written in another zone).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ACCEPTED = "accepted"

# the verifier's error id -> the loader's LoaderError code (the one place they are paired)
LOADER_CODE: dict[str, str] = {
    ACCEPTED: ACCEPTED,
    "trusted-keys.invalid": "TrustedKeysInvalid",
    "signature.malformed": "MalformedSignature",
    "signature.untrusted-key": "UntrustedKey",
    "signature.invalid": "SignatureInvalid",
    "signature.duplicate-key": "DuplicateSignature",
    "signature.key-revoked": "KeyRevoked",
    "signature.key-not-yet-valid": "KeyNotYetValid",
    "signature.key-expired": "KeyExpired",
    "signature.key-not-allowed": "KeyNotAllowed",
    "signature.development-key": "DevelopmentKey",
    "signature.threshold": "SignatureThreshold",
}

# key name -> role; alice is the release harness's key, eve is in no trusted-keys file
ROLES: dict[str, str] = {
    "alice": "release",
    "bob": "release",
    "carol": "release",
    "dora": "development",
    "eve": "release",
}
COSIGNED = "cosigned"  # the real co-signed bundle's manifest envelope (alice + bob)


@dataclass(frozen=True)
class TrustCase:
    name: str
    # who signs manifest.sigstore.json, in envelope order ("bob~": bob's signature with a
    # flipped byte; a name twice: the same signature twice), or COSIGNED
    signers: tuple[str, ...] | str
    expect: str  # ACCEPTED or the verifier's error id
    keys: tuple[str, ...] = ("alice",)  # the trusted-keys file's keys
    threshold: int | None = 1  # the v2 policy's threshold (both documents); None: a v1 file
    allowed: tuple[str, ...] | None = None  # policy.manifest.keyids (default: every key)
    # key -> (not_before, not_after)
    windows: Mapping[str, tuple[str | None, str]] = field(default_factory=dict)
    revoked: tuple[str, ...] = ()
    at: int = 0  # now = BASE + at
    allow_dev_key: bool = False
    manifest: str = "release"  # the signed manifest's key_class (the signers' role)
    counted: tuple[str, ...] = ()  # accepted: the counted keys (as a set)
    message: str = ""  # both refusals' messages contain it
    hint: str | None = None  # the bundle's publicKey.hint (default: the first signer)
    # fields of the document set ("policy.provenance", "keys.0.not_after": nested ones;
    # None: removed)
    edit: dict[str, Any] = field(default_factory=dict)
    # fields of manifest.sigstore.json set the same way (a callable: applied to the old value)
    envelope: dict[str, Any] = field(default_factory=dict)


THREE = ("alice", "bob", "carol")
BOB_WINDOW = {"bob": ("+100", "+1100")}

# fmt: off
CASES: list[TrustCase] = [
    # threshold met, short by one, not met by a key the file does not list
    TrustCase("2 of 3, co-signed with sign", COSIGNED, ACCEPTED, keys=THREE, threshold=2,
              counted=("alice", "bob")),
    TrustCase("2 of 2, co-signed with sign", COSIGNED, ACCEPTED, keys=("alice", "bob"),
              threshold=2, counted=("alice", "bob")),
    TrustCase("the hint names the co-signer", ("alice", "bob"), ACCEPTED, keys=("alice", "bob"),
              threshold=2, hint="bob", counted=("alice", "bob")),
    TrustCase("3 of 3, all three signed", ("alice", "bob", "carol"), ACCEPTED,
              keys=THREE, threshold=3, counted=("alice", "bob", "carol")),
    TrustCase("short by one: 2 of 3 signed, 3 required", COSIGNED, "signature.threshold",
              keys=THREE, threshold=3,
              message="2 of 3 required signatures on the manifest"),
    TrustCase("short by one: alone, 2 required", ("alice",), "signature.threshold",
              keys=THREE, threshold=2, message="1 of 2 required signatures on the manifest"),
    TrustCase("a co-signer the file does not list", COSIGNED, "signature.threshold",
              keys=("alice", "carol"), threshold=2, message="1 of 2 required"),
    TrustCase("an unlisted extra signature is ignored", ("eve", "alice"), ACCEPTED,
              counted=("alice",)),
    TrustCase("only unlisted signatures", ("eve",), "signature.untrusted-key"),
    TrustCase("an unlisted key twice", ("eve", "eve~"), "signature.duplicate-key"),
    # the same key twice is one vote, and refused outright
    TrustCase("the same key twice", ("alice", "alice"), "signature.duplicate-key",
              keys=("alice", "bob"), threshold=2, message="signed this envelope twice"),
    TrustCase("the same key twice, threshold 1", ("alice", "alice"), "signature.duplicate-key"),
    TrustCase("the same key twice after another", ("bob", "alice", "bob"),
              "signature.duplicate-key", keys=THREE, threshold=2),
    # every signature by a listed key verifies, counted or not
    TrustCase("a bad co-signature", ("alice", "bob~"), "signature.invalid", keys=THREE,
              threshold=2),
    TrustCase("a bad signature by a revoked key", ("alice", "bob~"), "signature.invalid",
              keys=("alice", "bob"), revoked=("bob",)),
    TrustCase("a bad signature by an unlisted key is never checked", ("alice", "eve~"),
              ACCEPTED, counted=("alice",)),
    # revocation
    TrustCase("the only signer revoked", ("alice",), "signature.key-revoked",
              revoked=("alice",), message="is revoked (lost)"),
    TrustCase("a revoked co-signer does not count", COSIGNED, "signature.threshold",
              keys=("alice", "bob"), threshold=2, revoked=("bob",),
              message="1 of 2 required signatures on the manifest"),
    TrustCase("a revoked co-signer, threshold 1", COSIGNED, ACCEPTED,
              keys=("alice", "bob"), revoked=("bob",), counted=("alice",)),
    TrustCase("a revoked key not in the file", ("alice",), ACCEPTED, revoked=("eve",),
              counted=("alice",)),
    # windows: [not_before, not_after), at the exact seconds
    TrustCase("a second before not_before", COSIGNED, "signature.threshold",
              keys=("alice", "bob"), threshold=2, windows=BOB_WINDOW, at=99,
              message="1 of 2 required"),
    TrustCase("at not_before", COSIGNED, ACCEPTED, keys=("alice", "bob"), threshold=2,
              windows=BOB_WINDOW, at=100, counted=("alice", "bob")),
    TrustCase("a second before not_after", COSIGNED, ACCEPTED, keys=("alice", "bob"),
              threshold=2, windows=BOB_WINDOW, at=1099, counted=("alice", "bob")),
    TrustCase("at not_after", COSIGNED, "signature.threshold", keys=("alice", "bob"),
              threshold=2, windows=BOB_WINDOW, at=1100, message="1 of 2 required"),
    TrustCase("alone, before not_before", ("alice",), "signature.key-not-yet-valid",
              windows={"alice": ("+100", "+1100")}, at=99),
    TrustCase("alone, at not_after", ("alice",), "signature.key-expired",
              windows={"alice": ("+100", "+1100")}, at=1100),
    TrustCase("v1, at not_after", ("alice",), "signature.key-expired", threshold=None,
              windows={"alice": (None, "+1100")}, at=1100),
    TrustCase("v1, a second before not_after", ("alice",), ACCEPTED, threshold=None,
              windows={"alice": (None, "+1100")}, at=1099, counted=("alice",)),
    TrustCase("not_after with a fraction, the second before", ("alice",), ACCEPTED,
              windows={"alice": (None, "+1100.5")}, at=1099, counted=("alice",)),
    TrustCase("not_after with a fraction, its whole second", ("alice",),
              "signature.key-expired", windows={"alice": (None, "+1100.5")}, at=1100),
    TrustCase("not_before in another zone, at it", ("alice",), ACCEPTED,
              windows={"alice": ("+100 +01:00", "+1100 -05:30")}, at=100, counted=("alice",)),
    TrustCase("not_after in another zone, at it", ("alice",), "signature.key-expired",
              windows={"alice": ("+100 +01:00", "+1100 -05:30")}, at=1100),
    # which keys may sign the manifest
    TrustCase("trusted, not allowed to sign the manifest", ("bob",), "signature.key-not-allowed",
              keys=("alice", "bob"), allowed=("alice",)),
    TrustCase("a co-signer not allowed for the manifest", COSIGNED, "signature.threshold",
              keys=THREE, threshold=2, allowed=("alice", "carol"),
              message="does not let it sign the manifest"),
    # development keys
    TrustCase("development key, not allowed", ("dora",), "signature.development-key",
              keys=("dora",), manifest="development"),
    TrustCase("development key, allowDevKey", ("dora",), ACCEPTED, keys=("dora",),
              manifest="development", allow_dev_key=True, counted=("dora",)),
    TrustCase("development key, v1, not allowed", ("dora",), "signature.development-key",
              keys=("dora",), threshold=None, manifest="development"),
    TrustCase("development key, v1, allowDevKey", ("dora",), ACCEPTED, keys=("dora",),
              threshold=None, manifest="development", allow_dev_key=True, counted=("dora",)),
    TrustCase("a development co-signer does not count by default", ("alice", "dora"),
              "signature.threshold", keys=("alice", "dora"), threshold=2,
              message="1 of 2 required"),
    # v1 files: threshold 1 of their keys
    TrustCase("v1, the release key", ("alice",), ACCEPTED, threshold=None, counted=("alice",)),
    TrustCase("v1, the co-signed bundle", COSIGNED, ACCEPTED, keys=("alice", "bob"),
              threshold=None, counted=("alice", "bob")),
    TrustCase("v1, another key", ("alice",), "signature.untrusted-key", keys=("bob",),
              threshold=None),
    TrustCase("v1 without a schema field", ("alice",), ACCEPTED, threshold=None,
              edit={"schema": None}, counted=("alice",)),
    # signature files both refuse to read (dsse.py's strict shape)
    TrustCase("a transparency-log entry", ("alice",), "signature.malformed",
              envelope={"verificationMaterial.tlogEntries": [{"logIndex": "1"}]}),
    TrustCase("an unknown field beside a signature", ("alice",), "signature.malformed",
              envelope={"dsseEnvelope.signatures.0.comment": "x"}),
    TrustCase("a signature's base64 without its padding", ("alice",), "signature.malformed",
              envelope={"dsseEnvelope.signatures.0.sig": lambda v: v.rstrip("=")}),
    TrustCase("no signatures", ("alice",), "signature.malformed",
              envelope={"dsseEnvelope.signatures": []}),
    TrustCase("no key hint", ("alice",), "signature.malformed",
              envelope={"verificationMaterial.publicKey.hint": None}),
    # trusted-keys documents both refuse to read
    TrustCase("a threshold that can never be met", COSIGNED, "trusted-keys.invalid",
              keys=("alice", "bob"), threshold=3),
    TrustCase("a date without a zone", ("alice",), "trusted-keys.invalid",
              windows={"alice": (None, "+1100 naive")}),
    TrustCase("not_before after not_after", ("alice",), "trusted-keys.invalid",
              windows={"alice": ("+1100", "+100")}),
    TrustCase("not_before equal to not_after", ("alice",), "trusted-keys.invalid",
              windows={"alice": ("+100", "+100")}),
    TrustCase("not_before in a v1 file", ("alice",), "trusted-keys.invalid", threshold=None,
              windows={"alice": ("+100", "+1100")}),
    TrustCase("a revocation without a reason", ("alice",), "trusted-keys.invalid",
              edit={"revoked": [{"keyid": "0" * 64, "reason": ""}]}),
    TrustCase("the same key revoked twice", ("alice",), "trusted-keys.invalid",
              edit={"revoked": [{"keyid": "0" * 64, "reason": "a"}] * 2}),
    TrustCase("no rule for the provenance", ("alice",), "trusted-keys.invalid",
              edit={"policy.provenance": None}),
    TrustCase("an unknown field", ("alice",), "trusted-keys.invalid", edit={"comment": "x"}),
    TrustCase("an unknown schema", ("alice",), "trusted-keys.invalid",
              edit={"schema": "tinyrustlm.trusted-keys.v3"}),
    TrustCase("no keys", ("alice",), "trusted-keys.invalid", threshold=None,
              edit={"keys": []}),
    # dates and thresholds only as written (RFC 3339 text, a JSON integer): verify/ reads the
    # document strictly too, so an epoch number or a digit string is refused by both
    TrustCase("not_after as epoch seconds", ("alice",), "trusted-keys.invalid",
              edit={"keys.0.not_after": 4102444800}),
    TrustCase("a threshold written as a string", ("alice",), "trusted-keys.invalid",
              edit={"policy.manifest.threshold": "1"}),
]
# fmt: on

# Rows the loader refuses although verify/'s step 2 accepts them: its step 1 also does what
# the verifier does in later steps (3: the hint names one of the signatures; 5: the manifest's
# key_class is every counted signer's role), and it cannot verify a keyless signature at all,
# so a policy requiring one is refused. `expect` is verify/'s step-2 verdict; the code and
# `message` are the loader's.
# fmt: off
LOADER_FURTHER: list[tuple[TrustCase, str]] = [
    (TrustCase("the hint names none of the signatures", ("alice", "bob"), ACCEPTED,
               keys=("alice", "bob"), threshold=2, hint="carol", counted=("alice", "bob"),
               message="publicKey.hint"),
     "KeyHintMismatch"),
    (TrustCase("a development co-signer counted with allowDevKey", ("alice", "dora"), ACCEPTED,
               keys=("alice", "dora"), threshold=2, allow_dev_key=True,
               counted=("alice", "dora"), message="key_class release"),
     "KeyClassMismatch"),
    (TrustCase("a policy requiring a keyless identity", ("alice",), ACCEPTED,
               edit={"keyless": {"identity": "https://ci.example/release.yml",
                                 "issuer": "https://token.actions.githubusercontent.com"}},
               counted=("alice",), message="cannot verify"),
     "TrustedKeysInvalid"),
]
# fmt: on
