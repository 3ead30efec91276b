"""One class per way `repo`, `publish` or `fetch` can fail, each with a stable id.

The id is what scripts match on (printed as `error[<id>]:`); the class lets tests and callers
tell the failures apart. `fetch` turns every python-tuf exception into one of these, so a
hostile mirror always ends in a typed error, never a traceback.
"""

from __future__ import annotations

from pipeline.errors import EXIT_CHECK_FAILED, PipelineError


class PublishError(PipelineError):
    """Root of this package's errors (exit 3: bad input or environment)."""

    error_id = "publish.error"
    default_hint = "see the message; rerun with the paths it names corrected"


class Refused(PublishError):
    """A check ran and the answer is no (exit 1)."""

    exit_code = EXIT_CHECK_FAILED
    error_id = "publish.refused"
    default_hint = "see the message: the check that refused names what to change"


# -- repository side ----------------------------------------------------------------------
class RepositoryExists(Refused):
    error_id = "repo.exists"
    default_hint = "publish into it, or init a repository in another folder"


class RepositoryNotFolder(PublishError):
    """--repo or a key folder is a file (or cannot be made a folder)."""

    error_id = "repo.not-a-folder"
    default_hint = "give --repo and --keys folders (new or existing), not files"


class RepositoryMissing(PublishError):
    error_id = "repo.missing"
    default_hint = "create it first: tinyrustlm-release repo init --repo DIR --keys DIR"


class RepositoryCorrupt(PublishError):
    """The repository's own metadata does not load or verify: never publish on top of it."""

    error_id = "repo.corrupt"
    default_hint = "restore the repository's metadata from a backup; never publish on top of it"


class RepositoryLocked(PublishError):
    error_id = "repo.locked"
    default_hint = "wait for the other repo/publish command to finish; the lock goes away with it"


class KeyMissing(PublishError):
    error_id = "repo.key-missing"
    default_hint = "give --keys (and --root-keys) the folders that hold the role's private key"


class PolicyInvalid(PublishError):
    error_id = "repo.policy-invalid"
    default_hint = "fix pipeline/publish/repository.toml or the --expiry ROLE=DAYS override"


class BundleNotVerified(Refused):
    """`publish` ran `verify bundle` on the bundle and it failed."""

    error_id = "publish.bundle-rejected"
    default_hint = (
        "publish only bundles that pass `tinyrustlm-verify bundle` with the repository's trusted "
        "keys"
    )


class VersionNotNewer(Refused):
    error_id = "publish.version-not-newer"
    default_hint = "bump [project].version and release again: a published version never changes"


class VersionUnorderable(PublishError):
    error_id = "publish.version-invalid"
    default_hint = (
        "use a release version (MAJOR.MINOR.PATCH, optionally aN, bN or rcN) in pyproject's "
        "[project].version"
    )


# -- client side --------------------------------------------------------------------------
class FetchError(Refused):
    """The repository or the bundle it served was refused (exit 1)."""

    error_id = "fetch.refused"
    default_hint = (
        "the repository or mirror served something that is not what its signed metadata says: try "
        "another mirror"
    )


class RootUnreadable(PublishError):
    """The trusted root given with --root cannot be read or is not TUF root metadata."""

    error_id = "fetch.root-invalid"
    default_hint = (
        "give --root the repository's trusted root metadata (metadata/1.root.json from its "
        "publisher)"
    )


class MetadataRollback(FetchError):
    """A metadata version older than one already trusted, or not the one referenced."""

    error_id = "fetch.rollback"
    default_hint = (
        "the mirror serves older metadata than already trusted (a rollback attack?): use another "
        "mirror"
    )


class MetadataExpired(FetchError):
    """Expired metadata: the mirror is replaying an old state (freeze attack)."""

    error_id = "fetch.expired"
    default_hint = (
        "the mirror serves expired metadata (a freeze attack, or the repository needs "
        "refresh-timestamp): try later or another mirror"
    )


class MetadataSignatureInvalid(FetchError):
    """Metadata not signed by a threshold of the keys the trusted root names."""

    error_id = "fetch.bad-signature"
    default_hint = (
        "metadata is not signed by the keys the trusted root names: use another mirror, or check "
        "--root"
    )


class MetadataInvalid(FetchError):
    error_id = "fetch.metadata-invalid"
    default_hint = (
        "the repository's metadata is malformed or inconsistent: use another mirror or tell the "
        "publisher"
    )


class TargetHashMismatch(FetchError):
    """A target (or metadata) whose length or SHA-256 differs from the signed one."""

    error_id = "fetch.hash-mismatch"
    default_hint = (
        "a download differs from its signed hash: the mirror is serving altered files; use "
        "another mirror"
    )


class DownloadTooLong(FetchError):
    """The server sent more bytes than the signed length (endless or oversized data)."""

    error_id = "fetch.too-long"
    default_hint = (
        "the server sent more than the signed length (an endless-data attack?): use another mirror"
    )


class DownloadFailed(FetchError):
    error_id = "fetch.download"
    default_hint = "check the URL and that the repository's server is up and reachable"


class ReleaseNotFound(FetchError):
    error_id = "fetch.release-not-found"
    default_hint = "pick one of the published versions, or --latest"


class DowngradeRefused(FetchError):
    error_id = "fetch.downgrade"
    default_hint = "pass --allow-downgrade if you really want the older release"


class TargetPathInvalid(FetchError):
    error_id = "fetch.target-path"
    default_hint = (
        "the repository names a file outside the bundle: do not use this repository; tell its "
        "publisher"
    )


class FetchedBundleRejected(FetchError):
    """The downloaded bundle failed `verify bundle` (the verifier's id is in the message)."""

    error_id = "fetch.bundle-rejected"
    default_hint = (
        "the downloaded bundle fails `verify bundle`: do not use it; tell the publisher (the "
        "verifier's id is in the message)"
    )


class TrustedKeysUnreadable(PublishError):
    error_id = "fetch.trusted-keys-invalid"
    default_hint = (
        "give --trusted-keys a tinyrustlm.trusted-keys.v1 JSON file (NAME.trusted-keys.json)"
    )


class OutputExists(Refused):
    error_id = "fetch.output-exists"
    default_hint = "remove it, or pass --force to replace it"


class OutputInvalid(PublishError):
    """--out is not a folder we can write into, or the bundle's place holds a link or a file."""

    error_id = "fetch.output-invalid"
    default_hint = (
        "give --out a folder you can write to; remove links or files at tinyrustlm-<version>"
    )


class StateInvalid(PublishError):
    """--state is not a folder we can write into, or its fetch state does not load."""

    error_id = "fetch.state-invalid"
    default_hint = (
        "give --state a folder you can write to (or delete a damaged state folder to start over)"
    )


class StateLocked(PublishError):
    error_id = "fetch.state-locked"
    default_hint = "wait for the other fetch with this state folder to finish"
