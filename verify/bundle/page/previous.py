"""The previous release a page diffs against: its signed documents, read from its bundle and
checked to belong together and to come before this release.

    previous_files(bundle_dir)        -> previous/<name> -> bytes (what the release carries)
    check_previous(previous, current) -> PreviousInvalid unless it is an earlier release whose
                                         report and SBOM are about its manifest's artifacts
"""

from __future__ import annotations

from pathlib import Path

from verify.bundle.errors import BundleRejected
from verify.bundle.layout import MANIFEST, REPORT, SBOM
from verify.bundle.opened import read_bundle_file
from verify.bundle.page.inputs import PREVIOUS_DIR, Release, release_of
from verify.bundle.versions import version_key


class PreviousInvalid(BundleRejected):
    """The previous release given for the diff is not an earlier, self-consistent release."""

    error_id = "page.previous-invalid"
    default_hint = (
        "give the bundle folder of an earlier release (dist/tinyrustlm-<older version>/), as "
        "it was published"
    )


def previous_files(bundle_dir: Path) -> dict[str, bytes]:
    """The previous release's manifest, report and SBOM as its bundle holds them (bounded
    reads), under the names a bundle carries them (previous/...)."""
    if not (bundle_dir / MANIFEST).is_file():
        raise PreviousInvalid("not a bundle folder: no manifest.json", where=str(bundle_dir))
    return {
        f"{PREVIOUS_DIR}/{name}": read_bundle_file(bundle_dir / name, name)
        for name in (MANIFEST, REPORT, SBOM)
    }


def check_previous(previous: Release, current: Release, where: str = PREVIOUS_DIR) -> None:
    """`previous` comes strictly before `current`, and its report and SBOM are about the
    artifacts its manifest lists (so no document of another release slips into the diff)."""
    old, new = previous.manifest.version, current.manifest.version
    old_key, new_key = version_key(old), version_key(new)
    if old_key is None or new_key is None or not old_key < new_key:
        raise PreviousInvalid(
            f"version {old} does not come before {new}", where=f"{where}/{MANIFEST}: version"
        )
    listed = {a.id: a.sha256 for a in previous.manifest.artifacts}
    listed |= {a.id: a.sha256 for a in previous.manifest.native_artifacts}
    reported = {a.lane: a.sha256 for a in previous.report.artifacts}
    if reported != listed:
        lane = sorted(set(reported.items()) ^ set(listed.items()))[0][0]
        raise PreviousInvalid(
            f"its report is not about its manifest's artifacts (lane {lane})",
            where=f"{where}/{REPORT}: {lane}",
        )
    if previous.sbom_build_id() != previous.manifest.build_id:
        raise PreviousInvalid(
            "its SBOM is not about its manifest's build", where=f"{where}/{SBOM}: metadata"
        )


def read_previous(bundle_dir: Path, current: Release) -> tuple[dict[str, bytes], Release]:
    """The previous release's files and documents, checked against the current release."""
    files = previous_files(bundle_dir)
    release = release_of(files, f"{PREVIOUS_DIR}/")
    check_previous(release, current, str(bundle_dir))
    return files, release
