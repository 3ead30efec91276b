"""`python -m tests.rustlint`: Rust held to Python's gates, with the pinned toolchain.

`nox -s lint` runs it. `cargo fmt --check` over both workspaces (crates/ and the bench
harness), `cargo clippy -D warnings` for the host over every target of both, and for every Wasm
lane of manifests/lanes.toml the wasm crate with that lane's own flags and its rebuilt std (so
the simd128 and atomics code paths are linted too, not only what the host compiles). Tools are
the lock's (`/usr/bin/cargo` with rustfmt-web and rust-web-clippy), never rustup's; the run is
offline and writes only under build/.scratch/rustlint/.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pipeline.lanebuild.stdbuild import ensure_sysroot
from pipeline.toolchain.lockfile import load_lock
from pipeline.tree.lanes import load_lanes

REPO = Path(__file__).resolve().parent.parent
WORKSPACES = {"crates": REPO / "crates", "harness": REPO / "pipeline" / "bench" / "harness"}
SCRATCH = REPO / "build" / ".scratch" / "rustlint"
DENY = ["--", "-D", "warnings"]


def _env(name: str, extra: dict[str, str]) -> dict[str, str]:
    lock = load_lock(REPO / "toolchain.lock")
    return {
        "PATH": "/usr/bin:/bin",  # cargo finds rustfmt and cargo-clippy beside it, never rustup's
        "HOME": str(SCRATCH / "home"),
        "CARGO_HOME": str(SCRATCH / "cargo-home"),
        "CARGO_TARGET_DIR": str(SCRATCH / f"target-{name}"),
        "RUSTC": lock.rustc.binary,
        "CARGO_NET_OFFLINE": "true",
        "CARGO_INCREMENTAL": "0",
        "CARGO_TERM_COLOR": "never",
        "LC_ALL": "C",
        **extra,
    }


def gates() -> list[tuple[str, list[str], Path, dict[str, str]]]:
    """(name, argv, folder, environment) of every gate, in the order they run."""
    lock = load_lock(REPO / "toolchain.lock")
    cargo = lock.rustc.cargo
    runs: list[tuple[str, list[str], Path, dict[str, str]]] = []
    for name, folder in WORKSPACES.items():
        runs.append((f"fmt {name}", [cargo, "fmt", "--check"], folder, _env(name, {})))
    for name, folder in WORKSPACES.items():
        argv = [cargo, "clippy", "--offline", "--locked", "--all-targets", *DENY]
        if name == "crates":
            argv.insert(2, "--workspace")
        runs.append((f"clippy {name} (host)", argv, folder, _env(name, {})))
    for lane in load_lanes(REPO / "manifests" / "lanes.toml").of_kind("wasm"):
        flags = [*lane.rustflags]
        if lane.build_std:
            flags += ["--sysroot", str(ensure_sysroot(lane, lock).root)]
        env = _env(lane.id, {"CARGO_ENCODED_RUSTFLAGS": "\x1f".join(flags), **lane.env})
        argv = [cargo, "clippy", "--offline", "--locked", "-p", lane.package]
        argv += ["--target", lane.target, *DENY]
        runs.append((f"clippy {lane.id}", argv, WORKSPACES["crates"], env))
    return runs


def main() -> int:
    failed = []
    for name, argv, folder, env in gates():
        for key in ("HOME", "CARGO_HOME"):
            Path(env[key]).mkdir(parents=True, exist_ok=True)
        done = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True)
        verdict = "ok" if done.returncode == 0 else f"FAILED (exit {done.returncode})"
        print(f"rustlint: {name}: {verdict}", flush=True)
        if done.returncode != 0:
            print((done.stdout + done.stderr)[-6000:], flush=True)
            failed.append(name)
    if failed:
        print(f"rustlint: {len(failed)} gate(s) failed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
