"""Release versions as comparable values, for `verify bundle --not-before-version V`: the
project's one grammar and order (verify/formats/release_version.py)."""

from __future__ import annotations

from verify.formats.release_version import ReleaseVersionKey, release_version_key


def version_key(text: str) -> ReleaseVersionKey | None:
    """Comparable form of `text`, or None when it is not a release version."""
    return release_version_key(text)
