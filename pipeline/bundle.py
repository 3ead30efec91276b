"""Write a release bundle into dist/: stage, fsync, rename; one release at a time.

dist/ never holds a partial bundle, even after kill -9: files are written into
dist/.staging/ (hidden, cleared by the next release), fsynced with their folders, and the
finished folder is renamed into place in one step. A lock (flock on dist/.release.lock,
released by the kernel when the process dies) stops two releases at once. An existing
bundle of the same version is refused unless `force`.
"""

from __future__ import annotations

import gzip
import io
import shutil
import tarfile
from collections.abc import Iterator, Mapping
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from pipeline.atomicio import fsync_dir, write_durable
from pipeline.errors import CheckFailed, PipelineError
from pipeline.filelock import hold_lock
from verify.bundle.layout import CHECKSUMS, bundle_name, checksums_text, tarball_name

LOCK_FILE = ".release.lock"
STAGING_DIR = ".staging"


class ReleaseLocked(PipelineError):
    """Another release holds dist/.release.lock."""


class BundleExists(CheckFailed):
    """dist/ already holds a bundle of this version."""


@contextmanager
def release_lock(folder: Path) -> Iterator[None]:
    """Hold folder/.release.lock (flock) or raise ReleaseLocked naming the holder's pid."""
    with hold_lock(folder / LOCK_FILE, ReleaseLocked, "release"):
        yield


def deterministic_tarball(
    root_name: str,
    files: Mapping[str, bytes],
    mtime: int,
    executable: AbstractSet[str] = frozenset(),
) -> bytes:
    """tar.gz of `files` under `root_name/`: sorted entries, fixed mtime, owner 0, gzip -n.

    Modes are fixed too: folders and `executable` files 0755, other files 0644.
    """
    entries: dict[str, bytes | None] = {root_name: None}
    modes = {f"{root_name}/{rel}": 0o755 for rel in executable}
    for rel in files:
        parts = PurePosixPath(rel).parts
        for depth in range(1, len(parts)):
            entries[f"{root_name}/{'/'.join(parts[:depth])}"] = None
        entries[f"{root_name}/{rel}"] = files[rel]
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(entries):
            data = entries[name]
            info = tarfile.TarInfo(name)
            info.mtime = mtime
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if data is None:
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tar.addfile(info)
            else:
                info.mode = modes.get(name, 0o644)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    packed = io.BytesIO()
    # filename="" and mtime=0: no name, no time in the gzip header (like gzip -n).
    with gzip.GzipFile(filename="", mode="wb", fileobj=packed, compresslevel=9, mtime=0) as gz:
        gz.write(raw.getvalue())
    return packed.getvalue()


def bundle_contents(
    version: str, files: Mapping[str, bytes], mtime: int, executable: AbstractSet[str] = frozenset()
) -> dict[str, bytes]:
    """Every file of the bundle: `files`, SHA256SUMS over them, and the tarball of both."""
    if CHECKSUMS in files:
        raise PipelineError("SHA256SUMS is computed here, not passed in", where="bundle")
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


def write_bundle(
    dist: Path,
    version: str,
    files: Mapping[str, bytes],
    mtime: int,
    *,
    force: bool = False,
    executable: AbstractSet[str] = frozenset(),
) -> Path:
    """Publish the bundle atomically; returns dist/tinyrustlm-<version>.

    `executable` names the files (native binaries) that get mode 0755.
    """
    contents = bundle_contents(version, files, mtime, executable)
    with release_lock(dist):
        final = dist / bundle_name(version)
        if final.exists() and not force:
            raise BundleExists(
                f"a bundle of version {version} already exists",
                where=str(final),
                hint="bump [project].version, or pass --force to replace it",
            )
        staging_root = dist / STAGING_DIR
        if staging_root.exists():
            shutil.rmtree(staging_root)  # left by a killed release: never published
        staging = staging_root / bundle_name(version)
        _write_tree(staging, contents, executable)
        fsync_dir(staging_root)
        if final.exists():
            retired = staging_root / f"{bundle_name(version)}.replaced"
            final.rename(retired)
        staging.rename(final)
        fsync_dir(dist)
        shutil.rmtree(staging_root)
        fsync_dir(dist)
    return final
