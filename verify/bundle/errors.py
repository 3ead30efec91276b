"""One exception class per way a release bundle can be rejected, each with a stable id.

The id is what scripts match on (it is printed in diagnostics and in `--json` output);
the class lets tests and callers tell the failures apart without parsing messages.
Everything here is a `VerificationFailed` (exit 1), except `BundleUnreadable`,
`TrustedKeysInvalid` and `ResourceLimit` (exit 3: the verifier could not even start, or not
finish).
"""

from __future__ import annotations

from typing import ClassVar

from verify.errors import VerificationFailed, VerifyError


class BundleRejected(VerificationFailed):
    """Verification read the bundle and rejected it; `error_id` says why."""

    error_id: ClassVar[str] = "bundle.rejected"


class BundleUnreadable(VerifyError):
    error_id = "bundle.unreadable"


class TrustedKeysInvalid(VerifyError):
    error_id = "trusted-keys.invalid"


# -- signatures ---------------------------------------------------------------------------
class MalformedSignatureBundle(BundleRejected):
    error_id = "signature.malformed"


class UntrustedKey(BundleRejected):
    error_id = "signature.untrusted-key"


class SignatureInvalid(BundleRejected):
    error_id = "signature.invalid"


class KeyExpired(BundleRejected):
    error_id = "signature.key-expired"


class DevKeyRefused(BundleRejected):
    error_id = "signature.development-key"


class KeyNotYetValid(BundleRejected):
    error_id = "signature.key-not-yet-valid"


class KeyRevoked(BundleRejected):
    error_id = "signature.key-revoked"


class KeyNotAllowed(BundleRejected):
    """A trusted key the signing policy does not let sign this document."""

    error_id = "signature.key-not-allowed"


class SignatureDuplicated(BundleRejected):
    """One key signed an envelope twice: never two votes towards a threshold."""

    error_id = "signature.duplicate-key"


class ThresholdNotMet(BundleRejected):
    """Fewer distinct trusted, valid, unrevoked keys signed than the policy's threshold."""

    error_id = "signature.threshold"


class KeylessRefused(BundleRejected):
    """The Sigstore keyless signature is missing, or not by the required identity/issuer, or
    does not verify (certificate chain, transparency log, signature)."""

    error_id = "signature.keyless"


class HintMismatch(BundleRejected):
    error_id = "signature.hint-mismatch"


class PayloadTypeMismatch(BundleRejected):
    error_id = "signature.payload-type"


# -- manifest -----------------------------------------------------------------------------
class ManifestInvalid(BundleRejected):
    error_id = "manifest.invalid"


class ManifestMismatch(BundleRejected):
    error_id = "manifest.not-signed-bytes"


class KeyClassMismatch(BundleRejected):
    error_id = "manifest.key-class"


class ManifestExpired(BundleRejected):
    error_id = "manifest.expired"


class BuildIdMismatch(BundleRejected):
    error_id = "manifest.build-id"


# -- files --------------------------------------------------------------------------------
class DigestMismatch(BundleRejected):
    error_id = "files.digest-mismatch"


class ArtifactSwapped(BundleRejected):
    error_id = "files.swapped"


class MissingFile(BundleRejected):
    error_id = "files.missing"


class ExtraFile(BundleRejected):
    error_id = "files.extra"


# -- attestations and reports -------------------------------------------------------------
class ProvenanceInvalid(BundleRejected):
    error_id = "provenance.invalid"


class ProvenanceMismatch(BundleRejected):
    error_id = "provenance.subjects"


class SbomInvalid(BundleRejected):
    error_id = "sbom.invalid"


class SbomMismatch(BundleRejected):
    error_id = "sbom.hashes"


class ChecksumsMismatch(BundleRejected):
    error_id = "checksums.mismatch"


class TarballMismatch(BundleRejected):
    error_id = "tarball.mismatch"


class ReportMismatch(BundleRejected):
    error_id = "report.mismatch"


# -- reading the bundle -------------------------------------------------------------------
class LimitExceeded(BundleRejected):
    """A bundle bigger than anything a release makes: refused at the first byte over."""

    error_id = "bundle.limit"


class GzipInvalid(BundleRejected):
    """The tarball's gzip framing: header, deflate data, CRC-32, ISIZE, nothing after it."""

    error_id = "tarball.gzip"


class TarballNotRebuilt(BundleRejected):
    """The tarball is not byte for byte the deterministic tarball of the verified files."""

    error_id = "tarball.not-reproducible"


class SignersDiffer(BundleRejected):
    error_id = "signature.signers-differ"


class VersionBelowFloor(BundleRejected):
    error_id = "manifest.version-floor"


class ResourceLimit(VerifyError):
    """Last line of defence: the verifier ran out of memory or stack on some input. Every
    bound above should refuse first; this turns a traceback into an id and exit 3."""

    error_id = "verify.resource-limit"


# -- conformance --------------------------------------------------------------------------
class ConformanceInvalid(BundleRejected):
    error_id = "conformance.invalid"


class ConformanceMismatch(BundleRejected):
    error_id = "conformance.mismatch"


class ConformanceMissing(BundleRejected):
    error_id = "conformance.missing"


class ConformanceEngineMissing(BundleRejected):
    error_id = "conformance.engine-missing"


class ConformanceRowFailed(BundleRejected):
    error_id = "conformance.row-failed"


# -- builder paths and rebuilds -----------------------------------------------------------
class BuilderPathLeaked(BundleRejected):
    error_id = "paths.builder-path"


class RebuildsInsufficient(BundleRejected):
    error_id = "rebuilds.insufficient"
