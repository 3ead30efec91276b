"""The project's one release-version grammar, and its order (issue 36).

A release version is `MAJOR.MINOR.PATCH`, optionally followed by a pre-release `aN`, `bN` or
`rcN`: PEP 440's normal form of those, so `packaging` orders them the same way. Each number has
no leading zero and at most 9 digits (exact as a JavaScript Number). Order: numerically by
major, minor, patch; then `a` < `b` < `rc` < the final release (`0.2.0rc1` < `0.2.0`).

Anything else is not a release version, and is refused everywhere alike: at release (the
pyproject [project].version), by verify (the manifest's `version`, `--not-before-version`),
by publish and fetch, and by the loader (crates/wasm/js/trust.js keeps the same pattern and
order; tests/release_versions.json is the one table of cases both sides are tested on). So
`0.2.0-rc1`, `v0.2.0`, `0.2`, `0.2.0.post1` and `0.2.0+local` (which PEP 440 would normalise or
accept, and a semver reader would order otherwise) are refused instead of ordered two ways.
"""

from __future__ import annotations

import re
from typing import Annotated, NamedTuple

from pydantic import AfterValidator, WithJsonSchema

_NUMBER = "(0|[1-9][0-9]{0,8})"
RELEASE_VERSION_PATTERN = rf"^{_NUMBER}\.{_NUMBER}\.{_NUMBER}(?:(a|b|rc){_NUMBER})?$"
RELEASE_VERSION_TEXT = "MAJOR.MINOR.PATCH, optionally followed by aN, bN or rcN"
PRE_RELEASES = ("a", "b", "rc")  # in order; a final release sorts after all of them
_GRAMMAR = re.compile(RELEASE_VERSION_PATTERN)


class ReleaseVersionKey(NamedTuple):
    major: int
    minor: int
    patch: int
    stage: int  # index in PRE_RELEASES; len(PRE_RELEASES) for a final release
    number: int  # the pre-release's number; 0 for a final release


def release_version_key(text: object) -> ReleaseVersionKey | None:
    """The comparable form of a release version, or None when `text` is not one."""
    if not isinstance(text, str) or len(text) > 64:
        return None
    found = _GRAMMAR.fullmatch(text)
    if found is None:
        return None
    major, minor, patch, stage, number = found.groups()
    return ReleaseVersionKey(
        int(major),
        int(minor),
        int(patch),
        PRE_RELEASES.index(stage) if stage else len(PRE_RELEASES),
        int(number) if number else 0,
    )


def _release_version(text: str) -> str:
    if release_version_key(text) is None:
        raise ValueError(f"{text[:64]!r} is not a release version ({RELEASE_VERSION_TEXT})")
    return text


# A pydantic field holding one (its JSON Schema carries the pattern).
ReleaseVersion = Annotated[
    str,
    AfterValidator(_release_version),
    WithJsonSchema({"type": "string", "pattern": RELEASE_VERSION_PATTERN, "maxLength": 64}),
]
