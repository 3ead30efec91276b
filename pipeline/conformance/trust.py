"""Whom the matrix's loader trusts, and the manifest signature checked before any engine starts.

The JS engines run every lane through js/loader.js, which verifies manifest.sigstore.json
against the trusted keys it is given; `conformance BUNDLE` checks the same signature here
first, so a bundle the keys do not vouch for is one clear error instead of a matrix of
failed rows. (`run_matrix` itself does not pre-check: there the loader's refusal is recorded.)
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from pipeline.conformance.matrix import Trust
from pipeline.io.inputs import PassedOn
from verify.bundle import errors as e
from verify.bundle.layout import MANIFEST, MANIFEST_SIGNATURE
from verify.bundle.trusted_keys import TrustRoot, check_envelope, trust_root_of
from verify.errors import VerifyError
from verify.formats.manifest import MANIFEST_PAYLOAD_TYPE
from verify.inputs import read_regular_file


class TrustRefused(PassedOn):
    """The trusted keys are unreadable, or the bundle's manifest signature does not verify
    against them; `error_id` is the verifier's stable id (signature.invalid, ...)."""

    def __init__(self, exc: VerifyError) -> None:
        super().__init__(
            exc.message,
            error_id=exc.error_id,
            where=exc.where,
            hint="pass the trusted keys (v1) or trust policy (v2) of the keys that signed this "
            "bundle (and --allow-dev-key for a development build)",
        )


def load_trust(path: Path, allow_dev_key: bool) -> tuple[Trust, TrustRoot]:
    """The document the loader gets, and the same keys parsed (checked) by the verifier."""
    try:
        data = read_regular_file(path, "trusted-keys")  # read once: what is checked is what is sent
        root = trust_root_of(data, str(path))
        if root.keyless is not None:  # js/loader.js cannot verify a Sigstore keyless bundle
            raise e.TrustedKeysInvalid(
                "js/loader.js cannot verify the keyless (Sigstore) signature this policy "
                "requires; give the matrix the same policy without `keyless`",
                where=f"{path}: keyless",
            )
    except VerifyError as exc:
        raise TrustRefused(exc) from exc
    return Trust(json.loads(data), allow_dev_key), root


def check_signed_manifest(
    bundle: Path, root: TrustRoot, allow_dev_key: bool, now: int | None = None
) -> str:
    """The keyid(s) that signed `bundle`'s manifest (its signing rule met), or
    `TrustRefused` saying why not."""
    now = int(time.time()) if now is None else now
    try:
        data = read_regular_file(bundle / MANIFEST_SIGNATURE, "json")
        signed = check_envelope(data, MANIFEST_SIGNATURE, "manifest", root, allow_dev_key, now)
        envelope = signed.bundle.envelope
        if envelope.payload_type != MANIFEST_PAYLOAD_TYPE:
            raise e.PayloadTypeMismatch(
                f"expected a signature over {MANIFEST_PAYLOAD_TYPE!r}",
                where=f"{MANIFEST_SIGNATURE}: dsseEnvelope.payloadType",
            )
        if envelope.payload != read_regular_file(bundle / MANIFEST, "json"):
            raise e.ManifestMismatch(
                "manifest.json is not byte-identical to the signed payload",
                where=str(bundle / MANIFEST),
            )
    except VerifyError as exc:
        raise TrustRefused(exc) from exc
    return ", ".join(key.keyid for key in signed.signers)
