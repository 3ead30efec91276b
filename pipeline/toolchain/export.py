"""`toolchain export DIR` and `toolchain install --from DIR`: the pinned .debs kept by digest.

Debian replaces security packages: the day rustc-web 1.96.0+dfsg1-1~deb12u2 is superseded, the
archive stops serving it and `apt-get download NAME=VERSION` fails. A release that must stay
reproducible keeps its own copy: `export` writes every .deb of the lock as `<sha256>.deb`
(checked against the lock before it is written, atomically) plus `debs.json`, the table of
what each file is; `install --from` installs from that folder alone, with apt's sources
pointing nowhere, after checking every file against the lock. Dependencies that the lock does
not pin (libc, zlib, ...) come from the machine: a bare bookworm has them, or bookworm main
(which point releases keep) provides them.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import ClassVar

from pipeline.errors import TabledError
from pipeline.io.atomic import write_atomic
from pipeline.io.digest import sha256_file
from pipeline.toolchain import install
from pipeline.toolchain.lockfile import LockedPackage, ToolchainLock

Say = Callable[[str], None]
INDEX = "debs.json"
INDEX_SCHEMA = "tinyrustlm.toolchain-debs.v1"
APT_ARCHIVES = Path("/var/cache/apt/archives")
# apt with no source at all: nothing can come from the network or a stale index. One option
# and its value to a row (fmt: skip: one string a line would split each pair).
OFFLINE_APT = [
    "-o", "Dir::Etc::SourceList=/dev/null",
    "-o", "Dir::Etc::SourceParts=/nonexistent",
    "-o", "APT::Get::List-Cleanup=false",
]  # fmt: skip


class ExportError(TabledError):
    """The pinned .debs cannot be exported, or an export cannot be installed from."""

    table: ClassVar[Mapping[str, str]] = {
        "toolchain.export-unavailable": (
            "the archive no longer serves that version and apt's cache has no copy: install "
            "from an export made while it was served (`toolchain install --from DIR`)"
        ),
        "toolchain.export-missing": (
            "the folder lacks a pinned .deb: export again from a machine or a release that "
            "has it (`toolchain export DIR`)"
        ),
        "toolchain.export-mismatch": (
            "a file in the folder is not the .deb the lock pins: do not install from it; "
            "export again"
        ),
    }


def file_name(pkg: LockedPackage) -> str:
    return f"{pkg.sha256}.deb"


def _fetch(pkg: LockedPackage, work: Path, say: Say) -> Path:
    """The pinned .deb: from apt's own cache when it holds the very file, else downloaded."""
    cached = APT_ARCHIVES / install.deb_filename(pkg)
    if cached.is_file() and sha256_file(cached) == pkg.sha256:
        return cached
    try:
        install.run_apt(["apt-get", "download", f"{pkg.spec}={pkg.version}"], work, say)
    except install.InstallFailed as exc:
        raise ExportError(
            f"{pkg.spec}={pkg.version} is neither served by the archive nor in apt's cache",
            error_id="toolchain.export-unavailable",
            where=str(exc),
        ) from exc
    return work / install.deb_filename(pkg)


def export(lock: ToolchainLock, folder: Path, say: Say) -> list[Path]:
    """Write every pinned .deb into `folder` as `<sha256>.deb`, each checked against the
    lock first; then the index. Files already there and intact are kept."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory(prefix="tinyrustlm-export-") as tmp:
        work = Path(tmp)
        work.chmod(0o755)  # apt's download sandbox user writes here
        for pkg in lock.package:
            target = folder / file_name(pkg)
            if target.is_file() and sha256_file(target) == pkg.sha256:
                written.append(target)
                continue
            source = _require_pinned(_fetch(pkg, work, say), pkg)
            write_atomic(target, source.read_bytes())
            written.append(target)
    rows = [
        {
            "name": p.name,
            "architecture": p.architecture,
            "version": p.version,
            "role": p.role,
            "size": p.size,
            "sha256": p.sha256,
            "file": file_name(p),
        }
        for p in lock.package
    ]
    index = {"schema": INDEX_SCHEMA, "packages": rows}
    write_atomic(folder / INDEX, (json.dumps(index, indent=2) + "\n").encode())
    return written


def _require_pinned(path: Path, pkg: LockedPackage) -> Path:
    """`path` if it is the very .deb the lock pins, else `toolchain.export-mismatch`."""
    digest = sha256_file(path)
    if digest != pkg.sha256:
        raise ExportError(
            f"{path.name} has SHA-256 {digest}, not the pinned {pkg.spec}={pkg.version} "
            f"({pkg.sha256})",
            error_id="toolchain.export-mismatch",
            where=str(path),
        )
    return path


def checked_debs(lock: ToolchainLock, folder: Path, todo: list[LockedPackage]) -> list[Path]:
    """Every pinned file of `todo` in `folder`, each checked against the lock; a missing or
    different file refuses the whole install before anything is installed."""
    debs = []
    for pkg in todo:
        path = folder / file_name(pkg)
        if not path.is_file():
            raise ExportError(
                f"{pkg.spec}={pkg.version} ({file_name(pkg)}) is not in the folder",
                error_id="toolchain.export-missing",
                where=str(folder),
            )
        debs.append(_require_pinned(path, pkg))
    return debs


def install_from(lock: ToolchainLock, folder: Path, say: Say, *, reinstall: bool = False) -> int:
    """Install the lock's packages from an export, with no network: returns how many."""
    todo = install.pending(lock, reinstall=reinstall)
    if not todo and not install.missing_architectures(lock):
        say(f"all {len(lock.package)} pinned packages are installed at their locked versions")
        return 0
    install.require_installable(lock, todo)
    debs = checked_debs(lock, folder, todo)
    say(f"verified {len(debs)} .deb file(s) in {folder} against toolchain.lock")
    for arch in install.missing_architectures(lock):
        install.run_apt(["dpkg", "--add-architecture", arch], None, say)
    with tempfile.TemporaryDirectory(prefix="tinyrustlm-debs-") as tmp:
        # apt names a local package by its path; give each its archive name (the digest
        # names are what the folder keeps), so apt's messages name packages, not digests
        staged = []
        for pkg, deb in zip(todo, debs, strict=True):
            link = Path(tmp) / install.deb_filename(pkg)
            shutil.copyfile(deb, link)
            staged.append(link)
        Path(tmp).chmod(0o755)
        install.run_apt(
            [
                "apt-get",
                *OFFLINE_APT,
                "install",
                "-y",
                "--no-install-recommends",
                "--allow-downgrades",
                *(["--reinstall"] if reinstall else []),
                *(str(d) for d in staged),
            ],
            Path(tmp),
            say,
        )
    install.require_locked(lock)
    return len(todo)
