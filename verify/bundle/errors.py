"""One exception class per way a release bundle can be rejected, each with a stable id.

The id is what scripts match on (it is printed in diagnostics and in `--json` output);
the class lets tests and callers tell the failures apart without parsing messages.
Everything here is a `VerificationFailed` (exit 1), except `BundleUnreadable`,
`TrustedKeysInvalid` and `ResourceLimit` (exit 3: the verifier could not even start, or not
finish) and `KeylessIdentityConflict` (exit 2: flags that would widen the trust policy).
"""

from __future__ import annotations

from typing import ClassVar

from verify.errors import EXIT_USAGE, VerificationFailed, VerifyError


class BundleRejected(VerificationFailed):
    """Verification read the bundle and rejected it; `error_id` says why."""

    error_id: ClassVar[str] = "bundle.rejected"
    default_hint = (
        "the bundle is not what its signatures vouch for: do not use it; fetch or rebuild it from "
        "a trusted source"
    )


class BundleUnreadable(VerifyError):
    error_id = "bundle.unreadable"
    default_hint = "give the bundle folder (dist/tinyrustlm-<version>/) or its .tar.gz"


class TrustedKeysInvalid(VerifyError):
    error_id = "trusted-keys.invalid"
    default_hint = (
        "give a tinyrustlm.trusted-keys.v1 JSON file (NAME.trusted-keys.json from `keygen`)"
    )


# -- signatures ---------------------------------------------------------------------------
class MalformedSignatureBundle(BundleRejected):
    error_id = "signature.malformed"
    default_hint = "the *.sigstore.json is damaged: fetch the bundle again from its source"


class UntrustedKey(BundleRejected):
    error_id = "signature.untrusted-key"
    default_hint = (
        "the bundle is signed by a key your --trusted-keys file does not list: check you have the "
        "right trusted-keys file for this publisher"
    )


class SignatureInvalid(BundleRejected):
    error_id = "signature.invalid"
    default_hint = "the signed bytes were changed after signing: do not use this bundle"


class KeyExpired(BundleRejected):
    error_id = "signature.key-expired"
    default_hint = (
        "the signing key is past its not_after in --trusted-keys: ask the publisher for a current "
        "release or trusted-keys file"
    )


class DevKeyRefused(BundleRejected):
    error_id = "signature.development-key"
    default_hint = (
        "a development-key bundle is for trials: pass --allow-dev-key only if you meant to accept "
        "one"
    )


class KeyNotYetValid(BundleRejected):
    error_id = "signature.key-not-yet-valid"
    default_hint = (
        "the key's not_before is later than the verification time: check the trust policy's "
        "window, or the clock (--at-epoch)"
    )


class KeyRevoked(BundleRejected):
    error_id = "signature.key-revoked"
    default_hint = (
        "the trust policy revokes this key: re-sign the release with a key that is not "
        "revoked (tinyrustlm-release sign)"
    )


class KeyNotAllowed(BundleRejected):
    """A trusted key the signing policy does not let sign this document."""

    error_id = "signature.key-not-allowed"
    default_hint = (
        "the trust policy's rule for this document does not list the key: sign with a listed "
        "key, or update the policy"
    )


class SignatureDuplicated(BundleRejected):
    """One key signed an envelope twice: never two votes towards a threshold."""

    error_id = "signature.duplicate-key"
    default_hint = "one key counts once: a co-signature must come from another maintainer's key"


class ThresholdNotMet(BundleRejected):
    """Fewer distinct trusted, valid, unrevoked keys signed than the policy's threshold."""

    error_id = "signature.threshold"
    default_hint = (
        "collect more maintainers' signatures (tinyrustlm-release sign BUNDLE --key PEM) "
        "until the policy's threshold is met"
    )


class KeylessRefused(BundleRejected):
    """The Sigstore keyless signature is missing, or not by the required identity/issuer, or
    does not verify (certificate chain, transparency log, signature)."""

    error_id = "signature.keyless"
    default_hint = (
        "the Sigstore bundle must be signed by the expected identity and issuer: check "
        "--certificate-identity and --certificate-oidc-issuer"
    )


class KeylessIdentityConflict(VerifyError):
    """--certificate-identity/--certificate-oidc-issuer/--sigstore-instance name another keyless
    identity than the trust policy's: a flag may narrow what the policy trusts, never replace it."""

    exit_code = EXIT_USAGE
    error_id = "keyless.identity-conflict"
    default_hint = (
        "drop the --certificate-* flags (the trust policy's keyless identity is required "
        "anyway), or name exactly the policy's identity, issuer and instance"
    )


class HintMismatch(BundleRejected):
    error_id = "signature.hint-mismatch"
    default_hint = (
        "the signature bundle names another key than the one that signed: the bundle was tampered "
        "with or mis-assembled"
    )


class PayloadTypeMismatch(BundleRejected):
    error_id = "signature.payload-type"
    default_hint = (
        "the DSSE payload type is not the one this document is signed as: the bundle was tampered "
        "with or mis-assembled"
    )


# -- manifest -----------------------------------------------------------------------------
class ManifestInvalid(BundleRejected):
    error_id = "manifest.invalid"
    default_hint = (
        "the signed manifest is not a valid tinyrustlm.module-manifest.v1: rebuild the bundle "
        "with a matching release tool"
    )


class ManifestMismatch(BundleRejected):
    error_id = "manifest.not-signed-bytes"
    default_hint = (
        "manifest.json must be byte-identical to the signed payload: restore it from the original "
        "bundle"
    )


class KeyClassMismatch(BundleRejected):
    error_id = "manifest.key-class"
    default_hint = "the manifest's key_class must match the signing key's role in --trusted-keys"


class ManifestExpired(BundleRejected):
    error_id = "manifest.expired"
    default_hint = (
        "the release is past its expiry: get a newer release (or check the clock; --at-epoch for "
        "audits)"
    )


class BuildIdMismatch(BundleRejected):
    error_id = "manifest.build-id"
    default_hint = (
        "the build id does not recompute from the manifest and modules: the bundle was altered"
    )


# -- files --------------------------------------------------------------------------------
class DigestMismatch(BundleRejected):
    error_id = "files.digest-mismatch"
    default_hint = (
        "a file's bytes differ from the signed manifest: restore the bundle from its source"
    )


class ArtifactSwapped(BundleRejected):
    error_id = "files.swapped"
    default_hint = "an artifact sits under another lane's name: restore the bundle from its source"


class MissingFile(BundleRejected):
    error_id = "files.missing"
    default_hint = (
        "a file the manifest lists is missing: copy the whole bundle folder or use the tarball"
    )


class ExtraFile(BundleRejected):
    error_id = "files.extra"
    default_hint = (
        "the bundle holds a file the manifest does not list: remove it or restore the bundle from "
        "its source"
    )


# -- attestations and reports -------------------------------------------------------------
class ProvenanceInvalid(BundleRejected):
    error_id = "provenance.invalid"
    default_hint = (
        "provenance.sigstore.json is not a valid signed in-toto/SLSA statement: restore it from "
        "the original bundle"
    )


class ProvenanceMismatch(BundleRejected):
    error_id = "provenance.subjects"
    default_hint = (
        "the provenance's subjects differ from the bundle's files: the bundle was altered or "
        "mis-assembled"
    )


class SbomInvalid(BundleRejected):
    error_id = "sbom.invalid"
    default_hint = (
        "sbom.cdx.json is not a valid CycloneDX 1.6 SBOM: restore it from the original bundle"
    )


class SbomMismatch(BundleRejected):
    error_id = "sbom.hashes"
    default_hint = (
        "the SBOM's hashes differ from the bundle's files: restore the bundle from its source"
    )


class ChecksumsMismatch(BundleRejected):
    error_id = "checksums.mismatch"
    default_hint = "SHA256SUMS differs from the bundle's files: restore the bundle from its source"


class TarballMismatch(BundleRejected):
    error_id = "tarball.mismatch"
    default_hint = (
        "the tarball is not the release writer's layout (one top folder, safe names, files once): "
        "use the published tarball or the bundle folder"
    )


class ReportMismatch(BundleRejected):
    error_id = "report.mismatch"
    default_hint = (
        "the shipped verification report is not what the verifier derives from the artifacts: "
        "rebuild the bundle"
    )


class ReportInvalid(BundleRejected):
    """verification-report.json is not a `tinyrustlm.verification-report.v1` document."""

    error_id = "report.invalid"
    default_hint = (
        "the shipped report is damaged or not the release's own: fetch the bundle again, or "
        "re-release it (the report is re-derived and compared in step 12)"
    )


class PageMismatch(BundleRejected):
    """report.html is not the page the verifier derives from the verified documents."""

    error_id = "page.mismatch"
    default_hint = (
        "the shipped page is not what the bundle's signed documents show: read the page "
        "`tinyrustlm-verify report` writes, and fetch or rebuild the bundle"
    )


# -- reading the bundle -------------------------------------------------------------------
class LimitExceeded(BundleRejected):
    """A bundle bigger than anything a release makes: refused at the first byte over."""

    error_id = "bundle.limit"
    default_hint = "the bundle is larger than any release: it is not a tinyrustlm bundle"


class GzipInvalid(BundleRejected):
    """The tarball's gzip framing: header, deflate data, CRC-32, ISIZE, nothing after it."""

    error_id = "tarball.gzip"
    default_hint = "the tarball's gzip framing was changed or damaged: download it again"


class TarballNotRebuilt(BundleRejected):
    """The tarball is not byte for byte the deterministic tarball of the verified files."""

    error_id = "tarball.not-reproducible"
    default_hint = (
        "the tarball is not the deterministic tarball of its files: download it again, or verify "
        "the bundle folder"
    )


class SignersDiffer(BundleRejected):
    error_id = "signature.signers-differ"
    default_hint = (
        "the trust policy wants one key to sign manifest and provenance: use a bundle signed that "
        "way, or a trusted-keys file whose signers is any-trusted-key"
    )


class VersionBelowFloor(BundleRejected):
    error_id = "manifest.version-floor"
    default_hint = (
        "this release is older than the floor you gave (--not-before-version): a rollback? fetch "
        "the current release"
    )


class ResourceLimit(VerifyError):
    """Last line of defence: the verifier ran out of memory or stack on some input. Every
    bound above should refuse first; this turns a traceback into an id and exit 3."""

    error_id = "verify.resource-limit"
    default_hint = (
        "the input is built to exhaust memory or stack: refuse it (and report it: a bound should "
        "have caught it first)"
    )


# -- conformance --------------------------------------------------------------------------
class ConformanceInvalid(BundleRejected):
    error_id = "conformance.invalid"
    default_hint = (
        "the conformance report is not a valid tinyrustlm.conformance-report.v3 (or v2, v1), "
        "or lacks a model tier: rerun release --conformance"
    )


class ConformanceDowngrade(BundleRejected):
    error_id = "conformance.downgrade"
    default_hint = (
        "required engines are judged on verdicts the verifier recomputes from a v3 report's "
        "token ids, on every tier: rerun release --conformance with this version, or drop "
        "--require-engines"
    )


class ConformanceVerdictWrong(BundleRejected):
    error_id = "conformance.verdict"
    default_hint = (
        "a row's verdict does not follow from the token ids it records against the oracle's: "
        "the report was edited or its writer is broken; rerun release --conformance"
    )


class MemoryPlanInvalid(BundleRejected):
    error_id = "memory-plan.invalid"
    default_hint = (
        "memory-plan.json is not a valid tinyrustlm.memory-plan.v1 (or its plans do not add "
        "up): release again"
    )


class MemoryPlanMismatch(BundleRejected):
    error_id = "memory-plan.mismatch"
    default_hint = (
        "memory-plan.json is of another release or other artifacts, or leaves out a wasm "
        "lane: release again"
    )


class ConformanceMismatch(BundleRejected):
    error_id = "conformance.mismatch"
    default_hint = (
        "the conformance report is of other artifacts or another manifest: rerun release "
        "--conformance"
    )


class ConformanceMissing(BundleRejected):
    error_id = "conformance.missing"
    default_hint = (
        "this check needs a conformance report: release with --conformance, or drop "
        "--require-engines"
    )


class ConformanceEngineMissing(BundleRejected):
    error_id = "conformance.engine-missing"
    default_hint = (
        "the conformance report lacks an engine you required: rerun the matrix on it, or change "
        "--require-engines"
    )


class ConformanceRowFailed(BundleRejected):
    error_id = "conformance.row-failed"
    default_hint = (
        "a lane failed on an engine in the conformance matrix: do not ship it; see the row's detail"
    )


# -- builder paths and rebuilds -----------------------------------------------------------
class BuilderPathLeaked(BundleRejected):
    error_id = "paths.builder-path"
    default_hint = (
        "a signed document holds a builder's absolute path: rebuild with the release tool's path "
        "remapping"
    )


class RebuildsInsufficient(BundleRejected):
    error_id = "rebuilds.insufficient"
    default_hint = (
        "fewer independent rebuilders attested these bytes than --require-rebuilds asks: collect "
        "more `reproduce --attest` results"
    )
