"""Steps 2-4: the two signed documents' envelopes, who counted as signing them (`Signed`),
the keyless signature when one is required, key hints and payload types."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from verify.bundle import errors as e
from verify.bundle.dsse import SigstoreBundle
from verify.bundle.keyless import KEYLESS_SIGNATURE, KeylessIdentity, verify_keyless
from verify.bundle.layout import MANIFEST, MANIFEST_SIGNATURE, PROVENANCE_SIGNATURE
from verify.bundle.trusted_keys import TrustedKey, TrustRoot, check_envelope
from verify.formats.in_toto import IN_TOTO_PAYLOAD_TYPE
from verify.formats.manifest import MANIFEST_PAYLOAD_TYPE
from verify.formats.trusted_keys import SignedDocument

# signature bundle -> the payloadType it must carry
SIGNED_FILES = {
    MANIFEST_SIGNATURE: MANIFEST_PAYLOAD_TYPE,
    PROVENANCE_SIGNATURE: IN_TOTO_PAYLOAD_TYPE,
}
# signature bundle -> the document whose signing rule it meets
SIGNED_DOCUMENT: dict[str, SignedDocument] = {
    MANIFEST_SIGNATURE: "manifest",
    PROVENANCE_SIGNATURE: "provenance",
}


@dataclass(frozen=True)
class Signed:
    """Step 2's result: each signature bundle, and the trusted keys its threshold counted."""

    bundles: Mapping[str, SigstoreBundle]  # keyed by SIGNED_FILES' names
    signers: Mapping[str, tuple[TrustedKey, ...]]
    detail: str

    def payload(self, name: str) -> bytes:
        """The signed payload of signature bundle `name`, as received."""
        return self.bundles[name].envelope.payload

    @property
    def manifest_signers(self) -> tuple[TrustedKey, ...]:
        return self.signers[MANIFEST_SIGNATURE]


def _short(keyids: set[str]) -> str:
    return ", ".join(f"{k[:16]}…" for k in sorted(keyids))


def check_signatures(
    files: Mapping[str, bytes], root: TrustRoot, allow_dev_key: bool, now: int
) -> Signed:
    bundles: dict[str, SigstoreBundle] = {}
    signers: dict[str, tuple[TrustedKey, ...]] = {}
    for name in SIGNED_FILES:
        if name not in files:
            raise e.MissingFile("signature bundle is missing", where=name)
        counted = check_envelope(files[name], name, SIGNED_DOCUMENT[name], root, allow_dev_key, now)
        bundles[name] = counted.bundle
        signers[name] = counted.signers
    manifest_keys, provenance_keys = (
        {k.keyid for k in signers[n]} for n in (MANIFEST_SIGNATURE, PROVENANCE_SIGNATURE)
    )
    if root.one_signer and manifest_keys != provenance_keys:
        raise e.SignersDiffer(
            f"manifest signed by {_short(manifest_keys)}, provenance by "
            f"{_short(provenance_keys)}; one release key signs both (unless the trusted-keys "
            'file says "signers": "any-trusted-key")',
            where=f"{PROVENANCE_SIGNATURE}: dsseEnvelope.signatures[0].keyid",
        )
    parts = []
    for name, keys in signers.items():
        rule = root.rule(SIGNED_DOCUMENT[name])
        named = ", ".join(f"{k.keyid[:16]}… ({k.role})" for k in keys)
        parts.append(f"{SIGNED_DOCUMENT[name]} {len(keys)} of {rule.threshold}: {named}")
    return Signed(bundles, signers, "; ".join(parts))


def check_keyless(files: Mapping[str, bytes], want: KeylessIdentity | None) -> str:
    """Step 2b: "" when no identity is required, else "; <what the keyless check found>"."""
    if want is None:
        return ""
    if KEYLESS_SIGNATURE not in files:
        raise e.KeylessRefused(
            f"a keyless signature by {want.identity!r} is required, the bundle has none "
            "(the release job adds it with `tinyrustlm-release sign BUNDLE --keyless`)",
            where=KEYLESS_SIGNATURE,
        )
    if MANIFEST not in files:
        raise e.MissingFile("the bundle has no manifest.json", where=MANIFEST)
    summary = verify_keyless(files[MANIFEST], files[KEYLESS_SIGNATURE], want, KEYLESS_SIGNATURE)
    return f"; {summary}"


def check_hints(signed: Signed) -> str:
    for name, bundle in signed.bundles.items():
        keyids = [s.keyid for s in bundle.envelope.signatures]
        if bundle.hint not in keyids:
            raise e.HintMismatch(
                f"publicKey.hint {bundle.hint[:16]}… is not the keyid of any signature "
                f"({_short(set(keyids))})",
                where=f"{name}: verificationMaterial.publicKey.hint",
            )
    return "each hint names one of its signatures"


def check_payload_types(signed: Signed) -> str:
    for name, expected in SIGNED_FILES.items():
        actual = signed.bundles[name].envelope.payload_type
        if actual != expected:
            raise e.PayloadTypeMismatch(
                f"payloadType {actual!r}, expected {expected!r}",
                where=f"{name}: dsseEnvelope.payloadType",
            )
    return "manifest + in-toto"
