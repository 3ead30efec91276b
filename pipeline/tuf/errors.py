"""One class per way `repo`, `publish` or `fetch` can fail, each with a stable id.

The id is what scripts match on (printed as `error[<id>]:`); the class lets tests and callers
tell the failures apart. `fetch` turns every python-tuf exception into one of these, so a
hostile mirror always ends in a typed error, never a traceback.
"""

from __future__ import annotations

from typing import ClassVar

from pipeline.errors import EXIT_CHECK_FAILED, PipelineError


class PublishError(PipelineError):
    """Root of this package's errors (exit 3: bad input or environment)."""

    error_id: ClassVar[str] = "publish.error"

    def diagnostics(self) -> str:
        return super().diagnostics().replace("error:", f"error[{self.error_id}]:", 1)


class Refused(PublishError):
    """A check ran and the answer is no (exit 1)."""

    exit_code = EXIT_CHECK_FAILED
    error_id = "publish.refused"


# -- repository side ----------------------------------------------------------------------
class RepositoryExists(Refused):
    error_id = "repo.exists"


class RepositoryMissing(PublishError):
    error_id = "repo.missing"


class RepositoryCorrupt(PublishError):
    """The repository's own metadata does not load or verify: never publish on top of it."""

    error_id = "repo.corrupt"


class RepositoryLocked(PublishError):
    error_id = "repo.locked"


class KeyMissing(PublishError):
    error_id = "repo.key-missing"


class PolicyInvalid(PublishError):
    error_id = "repo.policy-invalid"


class BundleNotVerified(Refused):
    """`publish` ran `verify bundle` on the bundle and it failed."""

    error_id = "publish.bundle-rejected"


class VersionNotNewer(Refused):
    error_id = "publish.version-not-newer"


class VersionUnorderable(PublishError):
    error_id = "publish.version-invalid"


# -- client side --------------------------------------------------------------------------
class FetchError(Refused):
    """The repository or the bundle it served was refused (exit 1)."""

    error_id = "fetch.refused"


class RootUnreadable(PublishError):
    """The trusted root given with --root cannot be read or is not TUF root metadata."""

    error_id = "fetch.root-invalid"


class MetadataRollback(FetchError):
    """A metadata version older than one already trusted, or not the one referenced."""

    error_id = "fetch.rollback"


class MetadataExpired(FetchError):
    """Expired metadata: the mirror is replaying an old state (freeze attack)."""

    error_id = "fetch.expired"


class MetadataSignatureInvalid(FetchError):
    """Metadata not signed by a threshold of the keys the trusted root names."""

    error_id = "fetch.bad-signature"


class MetadataInvalid(FetchError):
    error_id = "fetch.metadata-invalid"


class TargetHashMismatch(FetchError):
    """A target (or metadata) whose length or SHA-256 differs from the signed one."""

    error_id = "fetch.hash-mismatch"


class DownloadTooLong(FetchError):
    """The server sent more bytes than the signed length (endless or oversized data)."""

    error_id = "fetch.too-long"


class DownloadFailed(FetchError):
    error_id = "fetch.download"


class ReleaseNotFound(FetchError):
    error_id = "fetch.release-not-found"


class DowngradeRefused(FetchError):
    error_id = "fetch.downgrade"


class TargetPathInvalid(FetchError):
    error_id = "fetch.target-path"


class FetchedBundleRejected(FetchError):
    """The downloaded bundle failed `verify bundle` (the verifier's id is in the message)."""

    error_id = "fetch.bundle-rejected"


class TrustedKeysUnreadable(PublishError):
    error_id = "fetch.trusted-keys-invalid"


class OutputExists(Refused):
    error_id = "fetch.output-exists"


class StateLocked(PublishError):
    error_id = "fetch.state-locked"
