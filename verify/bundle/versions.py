"""Release versions as comparable values, for `verify bundle --not-before-version V`.

A release version is the pyproject [project].version, which PEP 621 requires to be a PEP 440
version; `fetch` orders releases the same way (pipeline/tuf/releases.py). So `0.1.0rc1`
sorts before `0.1.0`, `v0.1.0` is `0.1.0`, 2.10 > 2.9, and 1.2 == 1.2.0.
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version


def version_key(text: str) -> Version | None:
    """Comparable form of `text`, or None when it is not a PEP 440 version."""
    if len(text) > 128:  # PEP 440 sets no bound; a version is never this long
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None
