"""Each lane's cargo command as planned by the driver (pipeline/lanebuild/cargo.py): the exact argv
and the complete environment, the remap prefixes included. Dropping a flag that changes no
byte today (e.g. --remap-path-prefix) must still fail here. Fast: nothing is built."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.lanebuild.cargo import CargoRun, CompileError, plan_run
from pipeline.toolchain.lockfile import load_lock
from pipeline.tree.lanes import Lane, load_lanes

REPO_ROOT = Path(__file__).resolve().parents[3]
LANES = load_lanes(REPO_ROOT / "manifests" / "lanes.toml")
LOCK = load_lock(REPO_ROOT / "toolchain.lock")
WORKSPACE = Path("/checkout/of/tinyrustlm/crates")
SCRATCH = Path("/checkout/of/tinyrustlm/build/.scratch")
EPOCH = 1_700_000_000
STD_SYSROOT = Path("/home/someone/.cache/tinyrustlm/std/0123abcd")


def _plan(lane: Lane) -> CargoRun:
    """The lane's run, with a rebuilt-std sysroot exactly when the lane names build_std."""
    sysroot = STD_SYSROOT if lane.build_std else None
    return plan_run(lane, LANES, LOCK, WORKSPACE, SCRATCH, EPOCH, sysroot)


IDS = [lane.id for lane in LANES.lane]
ENV_KEYS = {
    "PATH",
    "HOME",
    "CARGO_HOME",
    "CARGO_TARGET_DIR",
    "RUSTC",
    "CARGO_ENCODED_RUSTFLAGS",
    "CARGO_INCREMENTAL",
    "CARGO_NET_OFFLINE",
    "CARGO_TERM_COLOR",
    "SOURCE_DATE_EPOCH",
    "TZ",
    "LC_ALL",
}


def _pairs(flags: list[str], flag: str) -> list[str]:
    return [flags[i + 1] for i, f in enumerate(flags[:-1]) if f == flag]


@pytest.mark.parametrize("lane_id", IDS, ids=IDS)
def test_argv_is_exact(lane_id: str) -> None:
    lane = next(lane for lane in LANES.lane if lane.id == lane_id)
    run = _plan(lane)
    assert run.argv == [
        "/usr/bin/cargo",
        "build",
        "--release",
        "--locked",
        "--offline",
        "-p",
        lane.package,
        "--target",
        lane.target,
    ]
    assert run.argv[0] == LOCK.rustc.cargo and run.cwd == WORKSPACE


@pytest.mark.parametrize("lane_id", IDS, ids=IDS)
def test_environment_is_complete_and_controlled(lane_id: str) -> None:
    lane = next(lane for lane in LANES.lane if lane.id == lane_id)
    env = _plan(lane).env
    assert set(env) == ENV_KEYS | set(lane.env)
    assert env["PATH"] == "/usr/bin:/bin"
    assert env["RUSTC"] == "/usr/bin/rustc" == LOCK.rustc.binary
    assert env["CARGO_HOME"] == str(SCRATCH / "cargo-home")
    assert env["CARGO_TARGET_DIR"] == str(SCRATCH / "target" / lane.id)
    assert env["HOME"] == str(SCRATCH / "home")
    assert (env["SOURCE_DATE_EPOCH"], env["TZ"], env["LC_ALL"]) == (str(EPOCH), "UTC", "C")
    assert (env["CARGO_INCREMENTAL"], env["CARGO_NET_OFFLINE"]) == ("0", "true")
    assert {k: env[k] for k in lane.env} == dict(lane.env)


@pytest.mark.parametrize("lane_id", IDS, ids=IDS)
def test_rustflags_carry_the_lane_flags_linker_and_remap_prefixes(lane_id: str) -> None:
    lane = next(lane for lane in LANES.lane if lane.id == lane_id)
    flags = _plan(lane).env["CARGO_ENCODED_RUSTFLAGS"].split("\x1f")
    assert flags[: len(lane.rustflags)] == list(lane.rustflags)
    std_source = f"/rustc/{LOCK.rustc.commit_hash}"
    assert _pairs(flags, "--remap-path-prefix") == [
        f"{WORKSPACE}=/src/tinyrustlm",
        f"{SCRATCH / 'cargo-home'}=/cargo",
        f"/usr/src/rustc-1.96.0={std_source}",
        f"/usr/lib/rustlib/src/rust={std_source}",
        *([f"{STD_SYSROOT}=/rustc-sysroot"] if lane.build_std else []),
    ]
    assert _pairs(flags, "--sysroot") == ([str(STD_SYSROOT)] if lane.build_std else [])
    codegen = _pairs(flags, "-C")
    assert f"linker={lane.linker}" in codegen
    link_args = [c.removeprefix("link-arg=") for c in codegen if c.startswith("link-arg=")]
    assert link_args[: len(lane.link_args)] == list(lane.link_args)
    if lane.shared_memory is not None:  # the import's limits, as lanes.toml declares them
        limits = lane.shared_memory
        assert link_args[len(lane.link_args) :] == [
            f"--initial-memory={limits.min_bytes}",
            f"--max-memory={limits.max_bytes}",
        ]
    else:
        assert link_args == list(lane.link_args)


def test_every_wasm_lane_starts_from_the_mvp_cpu_and_rebuilds_std() -> None:
    """No Wasm lane leans on the target's defaults (which grow with every compiler)."""
    for lane in LANES.of_kind("wasm"):
        assert _pairs(list(lane.rustflags), "-C")[0] == "target-cpu=mvp", lane.id
        assert lane.build_std == ["std", "panic_abort"], lane.id


def test_a_build_std_lane_without_its_sysroot_is_refused() -> None:
    lane = next(lane for lane in LANES.lane if lane.build_std)
    with pytest.raises(CompileError, match="needs its rebuilt std sysroot"):
        plan_run(lane, LANES, LOCK, WORKSPACE, SCRATCH, EPOCH, None)
