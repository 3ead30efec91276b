"""Sign manifest.json with a Sigstore keyless identity (the CI job's ambient OIDC token).

sigstore-python does all of it: `sigstore.oidc.detect_credential` finds the ambient credential
(GitHub Actions: `permissions: id-token: write`), `SigningContext` asks Fulcio for a short-lived
certificate for that identity, signs, and logs the signature in Rekor; the result is a
Sigstore bundle (`manifest.keyless.sigstore.json`) that `verify bundle --certificate-identity`
checks offline. This needs the network and an OIDC token, so it was NOT exercised in this
project's tests (only the refusal when no credential exists is); verification is
(`verify/bundle/keyless.py`, with real staging bundles).
"""

from __future__ import annotations

from pipeline.errors import PipelineError


class KeylessUnavailable(PipelineError):
    """No ambient OIDC credential, or Sigstore could not be reached to sign."""

    error_id = "keyless.unavailable"
    default_hint = (
        "sign keyless inside a CI job with an OIDC token (GitHub: `permissions: id-token: "
        "write`), or sign with --key PEM"
    )


def ambient_token() -> str:
    """The CI job's ambient OIDC token, or `KeylessUnavailable` (checked before a release
    builds anything, and again when it signs)."""
    from sigstore.errors import Error as SigstoreError  # 1.4 s to import (measured): only here
    from sigstore.oidc import detect_credential

    try:
        token = detect_credential()
    except SigstoreError as exc:
        raise KeylessUnavailable(f"the ambient OIDC credential is unusable: {exc}") from exc
    if token is None:
        raise KeylessUnavailable(
            "no ambient OIDC credential: keyless signing runs inside a CI job that has one",
            where="--keyless",
            hint="in GitHub Actions give the job `permissions: id-token: write`; elsewhere "
            "sign with a maintainer key (--key)",
        )
    return token


def sign_keyless(data: bytes) -> bytes:
    """A Sigstore bundle (JSON bytes) signing `data` with the ambient identity, production."""
    from sigstore.errors import Error as SigstoreError  # 1.4 s to import (measured): only here
    from sigstore.models import ClientTrustConfig
    from sigstore.oidc import IdentityToken
    from sigstore.sign import SigningContext

    token = ambient_token()
    try:
        context = SigningContext.from_trust_config(ClientTrustConfig.production())
        with context.signer(IdentityToken(token), cache=False) as signer:
            bundle = signer.sign_artifact(data)
    except SigstoreError as exc:
        raise KeylessUnavailable(f"Sigstore keyless signing failed: {exc}") from exc
    return bundle.to_json().encode("utf-8")
