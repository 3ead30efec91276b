"""How releases appear as TUF targets: one table read by the repository and by `fetch`.

Every bundle file is the target `<prefix>/<version>/<bundle-relative path>` (prefix from
pipeline/publish/repository.toml), with length and SHA-256, and a `custom` object holding the
release's version and build id. Versions are ordered by the project's one release-version
grammar and order (verify/formats/release_version.py), as verify and the loader order them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tuf.api.metadata import TargetFile

from pipeline.tuf.errors import VersionUnorderable
from verify.formats.release_version import (
    RELEASE_VERSION_TEXT,
    ReleaseVersionKey,
    release_version_key,
)

# The custom fields each target carries (TargetFile.custom).
CUSTOM_VERSION = "version"
CUSTOM_BUILD_ID = "build_id"


@dataclass(frozen=True)
class PublishedRelease:
    version: str
    build_id: str
    files: tuple[str, ...]  # bundle-relative paths, sorted


def version_key(version: str, where: str = "version") -> ReleaseVersionKey:
    key = release_version_key(version)
    if key is None:
        raise VersionUnorderable(
            f"{version!r} is not a release version ({RELEASE_VERSION_TEXT}), so it cannot be "
            "ordered",
            where=where,
        )
    return key


def target_path(prefix: str, version: str, rel: str) -> str:
    return f"{prefix}/{version}/{rel}"


def release_target(prefix: str, version: str, build_id: str, rel: str, data: bytes) -> TargetFile:
    path = target_path(prefix, version, rel)
    target = TargetFile.from_data(path, data, ["sha256"])
    target.unrecognized_fields["custom"] = {CUSTOM_VERSION: version, CUSTOM_BUILD_ID: build_id}
    return target


def releases_of(prefix: str, targets: Mapping[str, TargetFile]) -> dict[str, PublishedRelease]:
    """version -> release, from signed targets; targets outside `prefix/` are ignored."""
    grouped: dict[str, tuple[str, list[str]]] = {}
    for path, target in targets.items():
        custom = target.custom if isinstance(target.custom, dict) else {}
        version = custom.get(CUSTOM_VERSION)
        build_id = custom.get(CUSTOM_BUILD_ID)
        if not isinstance(version, str) or not isinstance(build_id, str):
            continue
        head = f"{prefix}/{version}/"
        if not path.startswith(head):
            continue
        _, files = grouped.setdefault(version, (build_id, []))
        files.append(path[len(head) :])
    return {
        v: PublishedRelease(v, build_id, tuple(sorted(files)))
        for v, (build_id, files) in grouped.items()
    }


def newest(versions: Iterable[str]) -> str | None:
    ordered = sorted(versions, key=version_key)
    return ordered[-1] if ordered else None
