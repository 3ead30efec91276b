"""`toolchain lock`: turn the seed plus this machine and the archive index into toolchain.lock."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from pipeline.errors import TabledError
from pipeline.io.atomic import write_atomic
from pipeline.toolchain import archive, probe
from pipeline.toolchain.lockfile import (
    LOCK_SCHEMA,
    LockedPackage,
    LockedRustc,
    LockedStdSource,
    LockedSysroot,
    LockedTool,
    ToolchainLock,
    ToolchainSeed,
    render_lock,
)


class RelockError(TabledError):
    """`toolchain lock` cannot read what is installed."""

    table: ClassVar[Mapping[str, str]] = {
        "toolchain.lock-not-installed": (
            "install them first (apt-get install ...), then run `toolchain lock` again"
        ),
        "toolchain.rustc": (
            "install the seed's rustc (toolchain.seed.toml) and run `toolchain lock` again"
        ),
        "toolchain.version-unknown": (
            "install the tools the seed names, then run `toolchain lock` again"
        ),
    }


def build_lock(seed: ToolchainSeed) -> ToolchainLock:
    """Every pinned fact, read from what is installed; fails if anything is missing."""
    versions = probe.installed_versions(seed.packages)
    missing = [spec for spec, v in versions.items() if v == probe.MISSING]
    if missing:
        raise RelockError(
            f"cannot lock packages that are not installed: {', '.join(missing)}",
            hint="install them first (apt-get install ...), then run `toolchain lock` again",
            error_id="toolchain.lock-not-installed",
        )
    packages = []
    for pkg in seed.packages:
        deb = archive.published(pkg.spec, versions[pkg.spec])
        packages.append(
            LockedPackage(
                name=pkg.name,
                architecture=pkg.architecture,
                role=pkg.role,
                version=versions[pkg.spec],
                filename=deb.filename,
                size=deb.size,
                sha256=deb.sha256,
            )
        )
    facts = probe.rustc_facts(seed.rustc.binary)
    if "release" not in facts:
        raise RelockError(
            f"{seed.rustc.binary} -vV did not run",
            where=seed.rustc.binary,
            error_id="toolchain.rustc",
        )
    rustc = LockedRustc(
        binary=seed.rustc.binary,
        cargo=seed.rustc.cargo,
        rustfmt=seed.rustc.rustfmt,
        clippy=seed.rustc.clippy,
        release=facts["release"],
        commit_hash=facts.get("commit-hash", ""),
        llvm_version=facts.get("LLVM version", probe.MISSING),
        host=facts.get("host", ""),
        cargo_version=probe.cargo_version(seed.rustc.cargo),
    )
    sysroots = []
    for root in seed.sysroots:
        digest = probe.sysroot_digest(root)
        sysroots.append(
            LockedSysroot(
                target=root.target, path=root.path, files=digest.files, sha256=digest.sha256
            )
        )
    source = probe.sysroot_digest(seed.std_source)
    if source.files == 0:
        raise RelockError(
            f"the std sources are not installed at {seed.std_source.path}",
            where=seed.std_source.path,
            error_id="toolchain.lock-not-installed",
        )
    std_source = LockedStdSource(
        path=seed.std_source.path,
        vendor=seed.std_source.vendor,
        files=source.files,
        sha256=source.sha256,
    )
    tools = [
        LockedTool(name=t.name, argv=t.argv, pattern=t.pattern, version=probe.tool_version(t))
        for t in seed.tools
    ]
    unknown = [t.name for t in tools if t.version.startswith("<")]
    if unknown:
        raise RelockError(
            f"cannot read the version of: {', '.join(unknown)}",
            error_id="toolchain.version-unknown",
        )
    return ToolchainLock.model_validate(
        {
            "schema": LOCK_SCHEMA,
            "distribution": seed.distribution,
            "codename": seed.codename,
            "foreign_architectures": seed.foreign_architectures,
            "rustc": rustc,
            "std_source": std_source,
            "package": packages,
            "sysroot": sysroots,
            "tool": tools,
        }
    )


def relock(seed: ToolchainSeed, lock_path: Path) -> bool:
    """Write the lock; returns True if the file changed."""
    text = render_lock(build_lock(seed))
    old = lock_path.read_text(encoding="utf-8") if lock_path.exists() else None
    if old != text:
        write_atomic(lock_path, text.encode("utf-8"))
    return old != text
