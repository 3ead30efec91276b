"""What is actually on this machine: dpkg versions, rustc -vV, sysroot digests, tool versions.

Every function here reads the machine and returns plain facts; comparing them with the
lock is `check.py`'s job.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pipeline.io import process
from pipeline.io.digest import sha256_file
from pipeline.io.process import CommandTimedOut, CommandUnstartable
from pipeline.toolchain import nodejs, wasmtools
from pipeline.toolchain.lockfile import PackageSeed, StdSourceSeed, SysrootSeed, ToolSeed

MISSING = "<missing>"
# Tools shipped in a hash-pinned wheel of requirements.lock: argv[0] in the seed names the
# tool, resolved to the binary inside the running Python's environment.
WHEEL_TOOLS: dict[str, Callable[[], Path]] = {
    "wasm-tools": wasmtools.executable,
    "node": nodejs.executable,
}


def run_text(argv: list[str]) -> str | None:
    """stdout+stderr of a command, or None if it cannot run."""
    try:
        done = process.run(argv, timeout=60, env={**os.environ, "LC_ALL": "C"})
    except (CommandUnstartable, CommandTimedOut):
        return None
    return done.stdout + done.stderr if done.returncode == 0 else None


def installed_versions(packages: list[PackageSeed]) -> dict[str, str]:
    """`NAME:ARCH` -> installed version (MISSING when not installed), one dpkg-query call."""
    specs = [p.spec for p in packages]
    found: dict[str, str] = dict.fromkeys(specs, MISSING)
    if shutil.which("dpkg-query") is None:
        return found
    done = process.run(
        [
            "dpkg-query",
            "-W",
            "-f",
            "${Package}:${Architecture}\t${Version}\t${db:Status-Abbrev}\n",
            *specs,
        ],
        env={**os.environ, "LC_ALL": "C"},
    )
    for line in done.stdout.splitlines():
        spec, version, status = ([*line.split("\t"), "", ""])[:3]
        if spec in found and status.startswith("ii"):
            found[spec] = version
    return found


def rustc_facts(rustc: str) -> dict[str, str]:
    """Fields of `rustc -vV` (release, LLVM version, host), empty when rustc does not run."""
    out = run_text([rustc, "-vV"]) or ""
    facts = {}
    for line in out.splitlines():
        key, sep, value = line.partition(": ")
        if sep:
            facts[key.strip()] = value.strip()
    return facts


def cargo_version(cargo: str) -> str:
    out = run_text([cargo, "-V"]) or ""
    match = re.search(r"cargo ([0-9][0-9.]*)", out)
    return match.group(1) if match else MISSING


def tool_version(tool: ToolSeed) -> str:
    argv = list(tool.argv)
    wheel_binary = WHEEL_TOOLS.get(argv[0])
    if wheel_binary is not None:  # the wheel's real binary, never a PATH lookup or a wrapper
        try:
            argv[0] = str(wheel_binary())
        except (wasmtools.WasmToolsMissing, nodejs.NodeMissing):
            return MISSING
    out = run_text(argv)
    if out is None:
        return MISSING
    match = re.search(tool.pattern, out, re.MULTILINE)
    return match.group(1) if match else f"<unparsed: {out.strip()[:60]}>"


@dataclass(frozen=True)
class SysrootFacts:
    files: int
    sha256: str


# A file's stat signature: size, mtime, ctime (no user can set it back) and inode.
Signature = tuple[int, int, int, int]


def sysroot_digest(
    sysroot: SysrootSeed | StdSourceSeed, known: dict[str, tuple[Signature, str]] | None = None
) -> SysrootFacts:
    """SHA-256 over sorted `relative-path  sha256` lines of every file in the folder.

    `known` (path -> (stat signature, sha256)) lets an unchanged file skip re-hashing; it is
    updated in place. Without it every byte is read.
    """
    root = Path(sysroot.path)
    if not root.is_dir():
        return SysrootFacts(0, MISSING)
    lines = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        st = path.stat()
        signature = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        cached = known.get(str(path)) if known is not None else None
        if cached is not None and tuple(cached[0]) == signature:
            digest = cached[1]
        else:
            digest = sha256_file(path)
            if known is not None:
                known[str(path)] = (signature, digest)
        lines.append(f"{path.relative_to(root).as_posix()}  {digest}\n")
    return SysrootFacts(len(lines), hashlib.sha256("".join(lines).encode()).hexdigest())


def path_shadows(pinned: dict[str, str]) -> dict[str, str]:
    """Commands whose PATH lookup is not the pinned binary (e.g. rustup's `cargo`)."""
    shadows = {}
    for name, binary in pinned.items():
        found = shutil.which(name)
        if found is None or Path(found).resolve() != Path(binary).resolve():
            shadows[name] = found or MISSING
    return shadows


def foreign_architectures() -> list[str]:
    out = run_text(["dpkg", "--print-foreign-architectures"]) or ""
    return sorted(out.split())


def os_release() -> dict[str, str]:
    try:
        text = Path("/etc/os-release").read_text(encoding="utf-8")
    except OSError:
        return {}
    pairs = (line.partition("=") for line in text.splitlines())
    return {k: v.strip('"') for k, _, v in pairs if k}
