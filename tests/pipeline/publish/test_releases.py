"""Release versions are ordered by the project's one grammar (verify/formats/release_version.py),
never as strings; tests/test_release_versions.py runs the whole table."""

from __future__ import annotations

import pytest

from pipeline.tuf.errors import VersionUnorderable
from pipeline.tuf.releases import newest, version_key


@pytest.mark.parametrize(
    ("versions", "expected"),
    [
        (["9.9.8", "9.9.10"], "9.9.10"),
        (["1.0.0rc1", "1.0.0"], "1.0.0"),
        (["0.2.0", "0.10.0", "0.9.9"], "0.10.0"),
        ([], None),
    ],
    ids=["two-digit-patch", "pre-release-before-final", "two-digit-minor", "none"],
)
def test_newest_is_the_release_version_maximum(versions: list[str], expected: str | None) -> None:
    assert newest(versions) == expected


@pytest.mark.parametrize(
    "bad",
    ["", "latest", "1.0/../x", "1.0.0-rc1", "v1.0.0"],
    ids=["empty", "word", "path", "semver-pre-release", "leading-v"],
)
def test_a_version_that_cannot_be_ordered_is_a_typed_error(bad: str) -> None:
    with pytest.raises(VersionUnorderable):
        version_key(bad)
