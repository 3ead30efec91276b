"""Keyless identity: a Sigstore bundle (Fulcio certificate + Rekor entry) over manifest.json,
verified offline with sigstore-python against the trusted root it embeds.

A CI job signs with its workload identity (GitHub Actions: the ambient OIDC token; the
certificate names the workflow, `https://github.com/OWNER/REPO/.github/workflows/X.yml@REF`,
and the issuer `https://token.actions.githubusercontent.com`). The signature is the bundle
file `manifest.keyless.sigstore.json`, a message signature over manifest.json's exact bytes.
It is checked here with `sigstore.verify.Verifier` (certificate chain to Fulcio's root at the
logged time, the transparency-log inclusion proof / promise, the signature over the bytes) and
`sigstore.verify.policy.Identity` (the certificate's SAN and OIDC-issuer extension), never
with a home-made substitute. `offline=True`: no TUF refresh, the trusted root shipped inside
sigstore-python (production for real releases, staging for sigstore-python's own test assets).
"""

from __future__ import annotations

from dataclasses import dataclass

from verify.bundle import errors as e
from verify.formats.trusted_keys import SigstoreInstance

KEYLESS_SIGNATURE = "manifest.keyless.sigstore.json"
SIGSTORE_INSTANCES: tuple[SigstoreInstance, ...] = ("production", "staging")


@dataclass(frozen=True)
class KeylessIdentity:
    identity: str  # the certificate's SAN (workflow URI, or an e-mail)
    issuer: str  # the OIDC issuer that vouched for it
    instance: SigstoreInstance = "production"


def required_identity(
    policy: KeylessIdentity | None, flag: KeylessIdentity | None
) -> KeylessIdentity | None:
    """The keyless identity a bundle must carry: the trust policy's, narrowed by the flags.

    A flag may only narrow what the policy trusts: with no identity in the policy, the flag
    adds the requirement; with one, the flag may repeat it exactly (identity, issuer and
    instance) and naming any other is a `KeylessIdentityConflict` (the policy's identity
    would otherwise be replaced, not narrowed)."""
    if flag is None or policy is None:
        return policy or flag
    if flag != policy:
        raise e.KeylessIdentityConflict(
            f"the trust policy requires keyless identity {policy.identity!r} issued by "
            f"{policy.issuer!r} (Sigstore {policy.instance}); the flags name "
            f"{flag.identity!r} issued by {flag.issuer!r} (Sigstore {flag.instance})",
            where="--certificate-identity",
        )
    return policy


def verify_keyless(signed: bytes, bundle_json: bytes, want: KeylessIdentity, where: str) -> str:
    """Verify the Sigstore bundle `bundle_json` over `signed` for `want`; a one-line summary,
    or `KeylessRefused` / `MalformedSignatureBundle` saying why not."""
    from sigstore.errors import Error as SigstoreError  # 1.4 s to import (measured): only here
    from sigstore.errors import VerificationError
    from sigstore.models import Bundle, InvalidBundle
    from sigstore.verify import Verifier
    from sigstore.verify.policy import Identity

    try:
        bundle = Bundle.from_json(bundle_json)
    except (InvalidBundle, ValueError) as exc:
        raise e.MalformedSignatureBundle(f"not a Sigstore bundle: {exc}", where=where) from exc
    make = Verifier.production if want.instance == "production" else Verifier.staging
    verifier = make(offline=True)
    try:
        policy = Identity(identity=want.identity, issuer=want.issuer)
        verifier.verify_artifact(signed, bundle, policy)
    except VerificationError as exc:
        raise e.KeylessRefused(
            f"the keyless signature does not verify for identity {want.identity!r} issued by "
            f"{want.issuer!r} (Sigstore {want.instance}): {exc}",
            where=where,
        ) from exc
    except SigstoreError as exc:
        raise e.KeylessRefused(f"Sigstore could not verify: {exc}", where=where) from exc
    return f"keyless {want.identity} ({want.issuer}, Sigstore {want.instance})"
