"""Write a release bundle into dist/: stage, fsync, rename; one release at a time.

dist/ never holds a partial bundle, even after kill -9: files are written into
dist/.staging/ (hidden, cleared by the next release), fsynced with their folders, and the
finished folder is renamed into place in one step; with `force`, it is exchanged with the
old bundle in one step (renameat2 RENAME_EXCHANGE), so a bundle is in place at every instant.
A lock (flock on dist/.release.lock, released by the kernel when the process dies) stops two
releases at once. An existing bundle of the same version is refused unless `force`.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Mapping
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from pathlib import Path

from pipeline.errors import CheckFailed, PipelineError
from pipeline.io.atomic import fsync_dir, write_durable
from pipeline.io.lock import hold_lock
from pipeline.io.swap import exchange, fault_point
from verify.bundle.layout import CHECKSUMS, MANIFEST, bundle_name, checksums_text, tarball_name
from verify.bundle.tarball import deterministic_tarball
from verify.formats.manifest import ModuleManifest

LOCK_FILE = ".release.lock"
STAGING_DIR = ".staging"


class ReleaseLocked(PipelineError):
    """Another release holds dist/.release.lock."""

    error_id = "release.locked"
    default_hint = (
        "wait for the other release or sign to finish; the lock goes away when that process ends"
    )


class BundleExists(CheckFailed):
    """dist/ already holds a bundle of this version."""

    error_id = "release.bundle-exists"
    default_hint = "bump [project].version, or replace it with `./nox -s release -- --force`"


@contextmanager
def release_lock(folder: Path) -> Iterator[None]:
    """Hold folder/.release.lock (flock) or raise ReleaseLocked naming the holder's pid."""
    with hold_lock(folder / LOCK_FILE, ReleaseLocked, "release"):
        yield


def bundle_contents(
    version: str, files: Mapping[str, bytes], mtime: int, executable: AbstractSet[str] = frozenset()
) -> dict[str, bytes]:
    """Every file of the bundle: `files`, SHA256SUMS over them, and the tarball of both."""
    assert CHECKSUMS not in files, "SHA256SUMS is computed here, not passed in"
    listed = dict(files)
    listed[CHECKSUMS] = checksums_text(listed)
    listed[tarball_name(version)] = deterministic_tarball(
        bundle_name(version), listed, mtime, executable
    )
    return listed


def _write_tree(folder: Path, contents: Mapping[str, bytes], executable: AbstractSet[str]) -> None:
    folder.mkdir(parents=True)
    made: set[Path] = {folder}
    for rel in sorted(contents):
        path = folder / rel
        if path.parent not in made:
            path.parent.mkdir(parents=True, exist_ok=True)
            made.add(path.parent)
        write_durable(path, contents[rel], 0o755 if rel in executable else 0o644)
    for sub in sorted(made, key=lambda p: len(p.parts), reverse=True):
        sub.chmod(0o755)
        fsync_dir(sub)


def existing_bundle(final: Path) -> ModuleManifest | None:
    """The manifest of the bundle already at `final`, or None when there is none."""
    if not final.exists() and not final.is_symlink():
        return None
    try:
        return ModuleManifest.model_validate_json((final / MANIFEST).read_bytes(), strict=True)
    except (OSError, ValueError) as exc:
        raise BundleExists(
            "dist/ holds something of this version that is not a readable bundle",
            where=str(final),
            hint="move it away, or pass --force to replace it",
        ) from exc


def _same_bundle(final: Path, contents: Mapping[str, bytes]) -> bool:
    """`final` holds exactly `contents`: the same files, byte for byte, and no other."""
    if final.is_symlink() or not final.is_dir():
        return False
    found = {p.relative_to(final).as_posix() for p in final.rglob("*") if not p.is_dir()}
    if found != set(contents):
        return False
    return all((final / rel).read_bytes() == data for rel, data in contents.items())


def write_bundle(
    dist: Path,
    version: str,
    contents: Mapping[str, bytes],
    *,
    force: bool = False,
    executable: AbstractSet[str] = frozenset(),
    hint: str = "bump [project].version, or pass --force to replace it",
) -> tuple[Path, bool]:
    """Publish the bundle (every file, `bundle_contents`) atomically; returns
    (dist/tinyrustlm-<version>, whether it was written). A bundle already there with exactly
    these bytes is left alone (up to date); another one is refused unless `force`.

    `executable` names the files (native binaries) that get mode 0755.
    """
    with release_lock(dist):
        return write_bundle_locked(
            dist, version, contents, force=force, executable=executable, hint=hint
        )


def write_bundle_locked(
    dist: Path,
    version: str,
    contents: Mapping[str, bytes],
    *,
    force: bool,
    executable: AbstractSet[str],
    hint: str,
) -> tuple[Path, bool]:
    """`write_bundle` for a caller that already holds `release_lock(dist)` (co-signing reads
    the bundle and rewrites it under one lock)."""
    final = dist / bundle_name(version)
    if (final.exists() or final.is_symlink()) and not force:
        if _same_bundle(final, contents):
            return final, False
        raise BundleExists(
            f"a different bundle of version {version} already exists",
            where=str(final),
            hint=hint,
        )
    staging_root = dist / STAGING_DIR
    if staging_root.exists():
        shutil.rmtree(staging_root)  # left by a killed release: never published
    staging = staging_root / bundle_name(version)
    _write_tree(staging, contents, executable)
    fsync_dir(staging_root)
    fault_point("bundle.staged")
    if final.exists():
        # one step: final becomes the new bundle, staging the old one (never a gap)
        exchange(staging, final)
        fault_point("bundle.exchanged")
    else:
        staging.rename(final)
    fsync_dir(dist)
    fsync_dir(staging_root)
    shutil.rmtree(staging_root)
    fsync_dir(dist)
    return final, True
