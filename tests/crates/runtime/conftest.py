"""Fixtures for runtime integration tests: the native CLI and the scalar wasm built once per
session with the pinned toolchain, and the `small` model packed once."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pipeline.lanebuild.stdbuild import ensure_sysroot
from pipeline.modelpack import PRESETS, pack
from pipeline.toolchain.lockfile import load_lock
from pipeline.tree.lanes import load_lanes

REPO = Path(__file__).resolve().parents[3]
CRATES = REPO / "crates"
TARGET = CRATES / "target"
CARGO = Path("/usr/bin/cargo")
RUSTC = Path("/usr/bin/rustc")


def cargo_build(
    args: list[str], rustflags: str = "", extra_env: dict[str, str] | None = None
) -> None:
    if not (CARGO.exists() and RUSTC.exists()):
        pytest.skip("pinned toolchain (/usr/bin/cargo, /usr/bin/rustc) not installed")
    env = {
        **os.environ,
        "RUSTC": str(RUSTC),
        "CARGO_TARGET_DIR": str(TARGET),
        "PATH": "/usr/bin:/bin",
        "RUSTFLAGS": rustflags,
        **(extra_env or {}),
    }
    done = subprocess.run(
        [str(CARGO), "build", "--release", "--locked", *args],
        cwd=CRATES,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"cargo build {' '.join(args)} failed:\n{done.stderr[-4000:]}")


@pytest.fixture(scope="session")
def cli() -> Path:
    """The native `tinyrustlm` binary (release profile)."""
    cargo_build(["-p", "tinyrustlm"])
    return TARGET / "release" / "tinyrustlm"


def build_scalar_wasm() -> Path:
    """The scalar lane: wasm32-unknown-unknown, -C target-cpu=mvp, linked with the std the
    release rebuilds for that lane (Debian ships no wasm32 std for rustc-web)."""
    if not (CARGO.exists() and RUSTC.exists()):
        pytest.skip("pinned toolchain (/usr/bin/cargo, /usr/bin/rustc) not installed")
    lanes = load_lanes(REPO / "manifests" / "lanes.toml").lane
    lane = next(x for x in lanes if x.id == "scalar-wasm32")
    sysroot = ensure_sysroot(lane, load_lock(REPO / "toolchain.lock")).root
    cargo_build(
        ["-p", "tinyrustlm-wasm", "--target", "wasm32-unknown-unknown"],
        # the lane's pinned wasm-ld: rustc's default, rust-lld, is not part of Debian's rustc
        f"-C target-cpu=mvp -C linker={lane.linker} --sysroot {sysroot}",
    )
    return TARGET / "wasm32-unknown-unknown" / "release" / "tinyrustlm_wasm.wasm"


@pytest.fixture(scope="session")
def scalar_wasm() -> Path:
    return build_scalar_wasm()


@pytest.fixture(scope="session")
def aarch64_cli() -> list[str]:
    """The aarch64-linux CLI, run under qemu-aarch64-static (argv prefix)."""
    qemu, linker = shutil.which("qemu-aarch64-static"), shutil.which("aarch64-linux-gnu-gcc")
    if not (qemu and linker):
        pytest.skip("qemu-aarch64-static or aarch64-linux-gnu-gcc not installed")
    target = "aarch64-unknown-linux-gnu"
    cargo_build(
        ["-p", "tinyrustlm", "--target", target],
        extra_env={"CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER": linker},
    )
    return [qemu, "-L", "/usr/aarch64-linux-gnu", str(TARGET / target / "release" / "tinyrustlm")]


@pytest.fixture(scope="session")
def small_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("models") / "small.trlm"
    path.write_bytes(pack(PRESETS["small"], 7))
    return path


@pytest.fixture(scope="session")
def int8_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The integer-tier twin of `small` (pack-model --preset small-int8 --seed 7)."""
    path = tmp_path_factory.mktemp("models") / "small-int8.trlm"
    path.write_bytes(pack(PRESETS["small-int8"], 7))
    return path


@pytest.fixture(scope="session")
def tiny_bytes() -> bytes:
    return pack(PRESETS["tiny"], 7)
