"""std rebuilt from the pinned sources, for targets Debian ships no prebuilt std for.

Debian's rustc-web 1.96 has a prebuilt std for x86_64 and aarch64 Linux only. A lane that
names `build_std` in lanes.toml gets a sysroot of its own: cargo's `-Zbuild-std` compiles the
crates it names from `toolchain.lock`'s `std_source` (offline: crates-io is replaced by the
vendored folder), with the lane's own codegen flags — so a Wasm 1.0 lane's std holds no
bulk-memory or sign-ext instruction, and a threads lane's std is built with atomics — and the
rlibs become `<cache>/<key>/lib/rustlib/<target>/lib/`, which the lane's rustc reads through
`--sysroot`.

The key is a digest of everything that decides those bytes: the compiler (release, commit,
LLVM), the std sources' digest, the target, the lane's rustflags, the crates and the profile.
An unchanged re-release finds its sysroot and compiles no std; two lanes with equal flags share
one. The cache is shared by every checkout of the user (`TINYRUSTLM_STD_CACHE`, else the
per-user cache folder): a key names its content, and each use re-hashes every file against the
stamp written last, so a damaged or planted entry is rebuilt, never used.

Paths: the std sources are remapped to `/rustc/<commit>` (where rustup's own std points), the
build's scratch folder to `/rustc-std`; the sysroot folder is remapped by the lane's build.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from pipeline.errors import PipelineError
from pipeline.io import process
from pipeline.io.digest import sha256_file
from pipeline.io.process import CommandUnstartable
from pipeline.toolchain.lockfile import ToolchainLock
from pipeline.tree.lanes import Lane
from verify.canonical import canonical_json

CACHE_ENV = "TINYRUSTLM_STD_CACHE"
STAMP = "stamp.json"
STAMP_SCHEMA = "tinyrustlm.std-sysroot.v1"
SCRATCH_REMAP = "/rustc-std"
# The profile std is compiled with: crates/Cargo.toml's release profile, less LTO (the lane's
# fat LTO reads the embedded bitcode).
PROFILE = {"opt-level": 3, "codegen-units": 1, "panic": "abort", "debug": 0}
SEED_CRATE = "tinyrustlm-std-seed"


class StdBuildError(PipelineError):
    """std could not be rebuilt from the pinned sources for a lane."""

    error_id = "build.std"
    default_hint = (
        "read cargo's last lines in the message; `tinyrustlm-release toolchain check` shows "
        "drifted std sources (rust-web-src)"
    )


@dataclass(frozen=True)
class StdSysroot:
    root: Path  # passed to rustc as --sysroot
    key: str
    built: bool  # False: taken from the cache


def cache_root() -> Path:
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured)
    return Path(platformdirs.user_cache_dir("tinyrustlm")) / "std"


def source_remap(lock: ToolchainLock) -> str:
    """Where the std sources' paths go in every artifact: rustup's own convention."""
    return f"/rustc/{lock.rustc.commit_hash}"


def std_source_roots(lock: ToolchainLock) -> list[str]:
    """Every real path under which rustc and cargo see the std sources: the installed tree
    and the sysroot's `lib/rustlib/src/rust` link to it (cargo -Zbuild-std reads that one)."""
    tree = str(Path(lock.std_source.path).parent)
    link = str(Path(lock.rustc.binary).parent.parent / "lib" / "rustlib" / "src" / "rust")
    return [tree, link]


def key_of(lane: Lane, lock: ToolchainLock) -> str:
    """Everything that decides the rebuilt std's bytes; the build's own argv and environment
    (with a fixed work folder) included, so a change to how std is built misses the cache."""
    argv, env = std_command(lane, lock, Path(SCRATCH_REMAP))
    facts = {
        "schema": STAMP_SCHEMA,
        "rustc": [lock.rustc.release, lock.rustc.commit_hash, lock.rustc.llvm_version],
        "cargo": lock.rustc.cargo_version,
        "std_source": lock.std_source.sha256,
        "target": lane.target,
        "rustflags": list(lane.rustflags),
        "crates": list(lane.build_std),
        "profile": PROFILE,
        "command": [argv, env],
    }
    return hashlib.sha256(canonical_json(facts)).hexdigest()


def _libdir(root: Path, target: str) -> Path:
    return root / "lib" / "rustlib" / target / "lib"


def _digests(libdir: Path) -> dict[str, str]:
    return {p.name: sha256_file(p) for p in sorted(libdir.iterdir()) if p.is_file()}


def _intact(root: Path, key: str, target: str) -> bool:
    """The entry's stamp names this key and every file still has its stamped digest."""
    try:
        stamp = json.loads((root / STAMP).read_text(encoding="utf-8"))
        libdir = _libdir(root, target)
        return bool(
            stamp.get("schema") == STAMP_SCHEMA
            and stamp.get("key") == key
            and stamp.get("files")
            and stamp["files"] == _digests(libdir)
        )
    except (OSError, ValueError, AttributeError):
        return False


def _seed(folder: Path) -> None:
    """An empty library crate whose only purpose is to make cargo build std."""
    (folder / "src").mkdir(parents=True, exist_ok=True)
    (folder / "src" / "lib.rs").write_text("#![no_std]\n", encoding="utf-8")
    profile = "\n".join(
        f"{k} = {json.dumps(v)}" for k, v in PROFILE.items()
    )  # TOML and JSON agree on ints and strings
    (folder / "Cargo.toml").write_text(
        f'[package]\nname = "{SEED_CRATE}"\nversion = "0.0.0"\nedition = "2021"\n'
        f'[lib]\npath = "src/lib.rs"\n[workspace]\n[profile.release]\n{profile}\n',
        encoding="utf-8",
    )


def cargo_env(
    home: Path, cargo_home: Path, target_dir: Path, lock: ToolchainLock, rustflags: list[str]
) -> dict[str, str]:
    """The complete environment of one pinned cargo run: nothing of the caller's leaks in."""
    return {
        "PATH": "/usr/bin:/bin",  # never rustup's shims: rustc/cargo by absolute path only
        "HOME": str(home),
        "CARGO_HOME": str(cargo_home),
        "CARGO_TARGET_DIR": str(target_dir),
        "RUSTC": lock.rustc.binary,
        "CARGO_ENCODED_RUSTFLAGS": "\x1f".join(rustflags),
        "CARGO_INCREMENTAL": "0",
        "CARGO_NET_OFFLINE": "true",
        "CARGO_TERM_COLOR": "never",
        "TZ": "UTC",
        "LC_ALL": "C",
    }


def std_command(lane: Lane, lock: ToolchainLock, work: Path) -> tuple[list[str], dict[str, str]]:
    """cargo's argv and complete environment for building `lane`'s std in `work`."""
    remap = source_remap(lock)
    sources = [f"{root}={remap}" for root in std_source_roots(lock)]
    # fmt: off
    rustflags = [
        *lane.rustflags,
        "-C", "embed-bitcode=yes",  # the lane links with fat LTO: it needs std's bitcode
        *(arg for pair in sources for arg in ("--remap-path-prefix", pair)),
        "--remap-path-prefix", f"{work}={SCRATCH_REMAP}",
    ]
    # fmt: on
    env = {
        **cargo_env(work / "home", work / "cargo-home", work / "target", lock, rustflags),
        # -Zbuild-std is unstable in cargo and std's crates use unstable features: the
        # pinned stable compiler builds its own std the way its release process does.
        "RUSTC_BOOTSTRAP": "1",
    }
    argv = [
        lock.rustc.cargo,
        "build",
        "--release",
        "--offline",
        f"-Zbuild-std={','.join(lane.build_std)}",
        "--target",
        lane.target,
    ]
    return argv, env


def sysroot_folder(lane: Lane, lock: ToolchainLock, cache: Path | None = None) -> Path:
    """Where the lane's rebuilt std lives in the cache (named by its key; nothing is built)."""
    return (cache or cache_root()) / key_of(lane, lock)[:32]


def ensure_sysroot(lane: Lane, lock: ToolchainLock, cache: Path | None = None) -> StdSysroot:
    """The lane's std sysroot: from the cache if intact, else built now and cached."""
    cache = cache or cache_root()
    key = key_of(lane, lock)
    root = sysroot_folder(lane, lock, cache)
    if _intact(root, key, lane.target):
        return StdSysroot(root, key, built=False)
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"std-{key[:12]}-", dir=cache) as tmp:
        work = Path(tmp) / "work"
        _seed(work)
        argv, env = std_command(lane, lock, work)
        (work / "cargo-home").mkdir(parents=True)
        (work / "home").mkdir()
        (work / "cargo-home" / "config.toml").write_text(
            '[source.crates-io]\nreplace-with = "std-vendor"\n'
            f'[source.std-vendor]\ndirectory = "{lock.std_source.vendor}"\n',
            encoding="utf-8",
        )
        try:
            done = process.run(argv, cwd=work, env=env, umask=0o022)
        except CommandUnstartable as exc:
            raise StdBuildError(
                f"{lane.id}: cannot run {argv[0]}: {exc.strerror}",
                hint="run `tinyrustlm-release toolchain install`",
            ) from exc
        deps = work / "target" / lane.target / "release" / "deps"
        if done.returncode != 0 or not deps.is_dir():
            tail = "\n".join("    " + ln for ln in done.stderr.strip().splitlines()[-20:])
            raise StdBuildError(
                f"lane {lane.id}: building std for {lane.target} failed "
                f"(exit {done.returncode})\n  argv: {' '.join(argv)}\n  last lines:\n{tail}",
                where=f"lane {lane.id}",
            )
        staged = Path(tmp) / "sysroot"
        libdir = _libdir(staged, lane.target)
        libdir.mkdir(parents=True)
        seed_prefix = "lib" + SEED_CRATE.replace("-", "_") + "-"
        for rlib in sorted(deps.glob("lib*.rlib")):
            if not rlib.name.startswith(seed_prefix):
                shutil.copyfile(rlib, libdir / rlib.name)
        stamp = {"schema": STAMP_SCHEMA, "key": key, "files": _digests(libdir)}
        (staged / STAMP).write_text(json.dumps(stamp, indent=2, sort_keys=True) + "\n")
        shutil.rmtree(root, ignore_errors=True)  # a damaged entry of the same key
        try:
            staged.rename(root)  # atomic: the entry appears whole or not at all
        except OSError:
            if not _intact(root, key, lane.target):  # another build may have won the race
                raise
    return StdSysroot(root, key, built=True)
