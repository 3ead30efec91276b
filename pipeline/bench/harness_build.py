"""Build the kernel harness (pipeline/bench/harness, a crate of its own workspace) with a lane's
target features: the lane's kernels and the scalar oracle side by side, for the bench's q8
matvec figures and for tests/crates/lanes. Never shipped, so no --remap-path-prefix: its bytes
are not a release artifact.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.bench.errors import BenchError
from pipeline.io import process
from pipeline.lanebuild.stdbuild import ensure_sysroot
from pipeline.toolchain.lockfile import load_lock
from pipeline.tree.lanes import Lane

HARNESS_DIR = Path("pipeline/bench/harness")  # relative to the repository root


def build_kernel_harness(repo_root: Path, lane: Lane) -> Path:
    """The kernel harness compiled with `lane`'s target features (kernels only, never shipped)."""
    scratch = repo_root / "build" / ".scratch" / "harness"
    # the lane's own rebuilt std (the release's content cache), where the target has none
    sysroot = (
        ["--sysroot", str(ensure_sysroot(lane, load_lock(repo_root / "toolchain.lock")).root)]
        if lane.build_std
        else []
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(scratch / "home"),
        "CARGO_HOME": str(scratch / "cargo-home"),
        "CARGO_TARGET_DIR": str(scratch / lane.id),
        "RUSTC": "/usr/bin/rustc",
        "CARGO_ENCODED_RUSTFLAGS": "\x1f".join(
            [*lane.rustflags, "-C", f"linker={lane.linker}", *sysroot]
        ),
        "CARGO_NET_OFFLINE": "true",
    }
    argv = [
        "/usr/bin/cargo",
        "build",
        "--release",
        "--locked",
        "--offline",
        "--target",
        lane.target,
    ]
    done = process.run(argv, cwd=repo_root / HARNESS_DIR, env=env, timeout=1800)
    if done.returncode != 0:
        raise BenchError(
            f"kernel harness build for {lane.id} failed:\n{done.stderr[-3000:]}",
            where=str(HARNESS_DIR),
        )
    return scratch / lane.id / lane.target / "release" / "tinyrustlm_kernel_harness.wasm"
