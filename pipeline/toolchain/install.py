"""`toolchain install`: fetch exactly the pinned .debs, check each SHA-256, then install them.

Nothing is installed unless every downloaded file matches the lock; a file that does not
match is deleted on the spot.
"""

from __future__ import annotations

import os
import shlex
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import ClassVar

from pipeline.errors import PipelineError, TabledError
from pipeline.io import process
from pipeline.io.digest import sha256_file
from pipeline.toolchain import probe
from pipeline.toolchain.check import compare, drifted
from pipeline.toolchain.lockfile import LockedPackage, ToolchainLock


class InstallFailed(TabledError):
    """apt could not bring the machine to the lock."""

    table: ClassVar[Mapping[str, str]] = {
        "toolchain.apt-failed": (
            "read apt's last lines in the message (network, disk space, a held package), then "
            "rerun `toolchain install`"
        ),
        "toolchain.still-differs": (
            "the archive installed other versions than the lock pins: `toolchain check` shows which"
        ),
    }


Say = Callable[[str], None]


class DebHashMismatch(PipelineError):
    """A downloaded .deb is not the file the lock pinned: refused and deleted."""

    error_id = "toolchain.deb-hash"
    default_hint = (
        "the mirror served another file than the lock pins: retry, or use another Debian mirror"
    )


class NotInstallable(PipelineError):
    """This machine cannot be provisioned automatically (not root, or not the pinned Debian)."""

    error_id = "toolchain.not-installable"
    default_hint = (
        "run `tinyrustlm-release toolchain install` as root on the pinned Debian, or "
        "install the packages the lock names by hand"
    )


def deb_filename(pkg: LockedPackage) -> str:
    """The name `apt-get download` gives the file (an epoch's ':' is written '%3a')."""
    return f"{pkg.name}_{pkg.version.replace(':', '%3a')}_{pkg.architecture}.deb"


def verify_debs(folder: Path, packages: list[LockedPackage]) -> list[Path]:
    """Check every .deb against the lock BEFORE anything is installed; delete all on a mismatch."""
    paths = [folder / deb_filename(p) for p in packages]
    for pkg, path in zip(packages, paths, strict=True):
        if not path.is_file():
            raise DebHashMismatch(f"{pkg.spec}={pkg.version} was not downloaded", where=str(path))
        digest = sha256_file(path)
        if digest != pkg.sha256:
            for other in paths:
                other.unlink(missing_ok=True)
            raise DebHashMismatch(
                f"{path.name}: SHA-256 {digest} differs from the lock's {pkg.sha256}; "
                "the file was deleted and nothing was installed",
                where=str(path),
                hint="the mirror served a different file: re-run after `apt-get update`, or "
                "re-lock if the archive really changed",
            )
    return paths


def prepare_commands(lock: ToolchainLock) -> list[list[str]]:
    """Make the pinned versions visible to apt: foreign architectures, fresh index."""
    commands = [
        ["dpkg", "--add-architecture", arch]
        for arch in lock.foreign_architectures
        if arch not in probe.foreign_architectures()
    ]
    commands.append(["apt-get", "update"])
    return commands


def plan(lock: ToolchainLock, todo: list[LockedPackage]) -> list[list[str]]:
    """The commands install runs, in order (also what is printed when it cannot run them)."""
    commands = prepare_commands(lock)
    if todo:
        commands.append(["apt-get", "download", *(f"{p.spec}={p.version}" for p in todo)])
        commands.append(["sha256sum", "--check", "# against toolchain.lock, before installing"])
        commands.append(
            [
                "apt-get",
                "install",
                "-y",
                "--no-install-recommends",
                "--allow-downgrades",
                *(f"./{deb_filename(p)}" for p in todo),
            ]
        )
    return commands


def run_apt(argv: list[str], cwd: Path | None, say: Say) -> None:
    """Run one apt/dpkg command; a failure is `toolchain.apt-failed` with apt's last lines."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive", "LC_ALL": "C"}
    done = process.run(argv, cwd=cwd, env=env, echo=say)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-12:])
        raise InstallFailed(
            f"`{shlex.join(argv)}` failed (exit {done.returncode}):\n{tail}",
            error_id="toolchain.apt-failed",
        )


def pending(lock: ToolchainLock, *, reinstall: bool = False) -> list[LockedPackage]:
    """The pinned packages not installed at their locked version (all of them: reinstall)."""
    if reinstall:
        return list(lock.package)
    versions = probe.installed_versions(list(lock.package))
    return [p for p in lock.package if versions[p.spec] != p.version]


def missing_architectures(lock: ToolchainLock) -> list[str]:
    return [a for a in lock.foreign_architectures if a not in probe.foreign_architectures()]


def require_installable(lock: ToolchainLock, todo: list[LockedPackage]) -> None:
    """Root on the pinned Debian, or NotInstallable with the commands that would run."""
    release = probe.os_release()
    problems = []
    if release.get("ID") != lock.distribution or release.get("VERSION_CODENAME") != lock.codename:
        problems.append(
            f"this is not Debian {lock.codename} (os-release: "
            f"{release.get('ID', '?')} {release.get('VERSION_CODENAME', '?')})"
        )
    if os.geteuid() != 0:
        problems.append("installing packages needs root")
    if problems:
        commands = "\n".join("  " + shlex.join(c) for c in plan(lock, todo))
        raise NotInstallable(
            "; ".join(problems) + f". {len(todo)} package(s) need installing. "
            f"On Debian {lock.codename} as root these commands would run:\n{commands}",
        )


def require_locked(lock: ToolchainLock) -> None:
    """After an install: every pinned package at its version, or `toolchain.still-differs`."""
    left = drifted(compare(lock))
    if any(d.field.startswith("package.") for d in left):
        raise InstallFailed(
            "packages still differ from the lock after install: "
            + ", ".join(d.field for d in left if d.field.startswith("package.")),
            error_id="toolchain.still-differs",
        )


def install(lock: ToolchainLock, say: Say) -> int:
    """Bring the machine to the lock; returns the number of packages installed."""
    todo = pending(lock)
    if not todo and not missing_architectures(lock):
        say(f"all {len(lock.package)} pinned packages are installed at their locked versions")
        return 0
    require_installable(lock, todo)
    for argv in prepare_commands(lock):
        run_apt(argv, None, say)
    with tempfile.TemporaryDirectory(prefix="tinyrustlm-debs-") as tmp:
        folder = Path(tmp)
        folder.chmod(0o755)  # apt's download sandbox user must be able to write here
        run_apt(["apt-get", "download", *(f"{p.spec}={p.version}" for p in todo)], folder, say)
        debs = verify_debs(folder, todo)
        say(f"verified {len(debs)} .deb file(s) against toolchain.lock")
        run_apt(
            [
                "apt-get",
                "install",
                "-y",
                "--no-install-recommends",
                "--allow-downgrades",
                *(str(d) for d in debs),
            ],
            folder,
            say,
        )
    require_locked(lock)
    return len(todo)
