"""One cargo run per lane: the exact argv and the complete, controlled environment."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.io import process
from pipeline.io.process import CommandUnstartable, Finished
from pipeline.lanebuild.stdbuild import cargo_env, source_remap, std_source_roots
from pipeline.toolchain import wasmtools
from pipeline.toolchain.lockfile import ToolchainLock
from pipeline.tree.lanes import Lane, LanesFile
from verify.placeholders import CARGO_HOME, STD_SYSROOT, WORKSPACE, to_placeholders

Say = Callable[[str], None]
HEARTBEAT_SECONDS = 15.0
SYSROOT_REMAP = "/rustc-sysroot"


class CompileError(PipelineError):
    """cargo/rustc failed for a lane; the message carries argv and the compiler's last lines."""

    error_id = "build.compile"
    default_hint = (
        "read the compiler's last lines in the message; `tinyrustlm-release toolchain "
        "check` shows a drifted toolchain"
    )


@dataclass(frozen=True)
class CargoRun:
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    output: Path  # what cargo writes for this lane
    post_link: list[list[str]]  # run in order after cargo; each rewrites `final` in place
    final: Path  # the lane's finished artifact (== output when there is no post-link step)
    sysroot: Path | None = None  # the rebuilt std's sysroot (build_std lanes)


def plan_run(
    lane: Lane,
    lanes: LanesFile,
    lock: ToolchainLock,
    workspace: Path,
    scratch: Path,
    source_date_epoch: int,
    sysroot: Path | None = None,
) -> CargoRun:
    """The one cargo command for `lane`. Nothing from the caller's environment leaks in.

    `sysroot`: the std rebuilt for a `build_std` lane (stdbuild.py), read through --sysroot;
    None for a lane linked with its target's prebuilt Debian std."""
    if bool(lane.build_std) != (sysroot is not None):
        raise CompileError(
            f"lane {lane.id}: build_std={lane.build_std} needs its rebuilt std sysroot",
            where=f"lane {lane.id}",
        )
    std_flags = (
        []
        if sysroot is None
        else ["--sysroot", str(sysroot), "--remap-path-prefix", f"{sysroot}={SYSROOT_REMAP}"]
    )
    cargo_home = scratch / "cargo-home"
    target_dir = scratch / "target" / lane.id
    link_args = list(lane.link_args)
    if lane.shared_memory is not None:  # the import's limits; the host sizes the memory itself
        limits = lane.shared_memory
        link_args += [f"--initial-memory={limits.min_bytes}", f"--max-memory={limits.max_bytes}"]
    std_sources, std_target = std_source_roots(lock), source_remap(lock)
    # Each flag beside its value.
    # fmt: off
    rustflags = [
        *lane.rustflags,
        "-C", f"linker={lane.linker}",
        *(arg for link_arg in link_args for arg in ("-C", f"link-arg={link_arg}")),
        "--remap-path-prefix", f"{workspace}={lanes.remap_workspace}",
        "--remap-path-prefix", f"{cargo_home}={lanes.remap_cargo_home}",
        *(arg for root in std_sources for arg in ("--remap-path-prefix", f"{root}={std_target}")),
        *std_flags,
    ]
    # fmt: on
    env = {
        **cargo_env(scratch / "home", cargo_home, target_dir, lock, rustflags),
        "SOURCE_DATE_EPOCH": str(source_date_epoch),
        **lane.env,
    }
    argv = [
        lock.rustc.cargo,
        "build",
        "--release",
        "--locked",
        "--offline",
        "-p",
        lane.package,
        "--target",
        lane.target,
    ]
    output = target_dir / lane.target / "release" / lane.cargo_output
    post_link: list[list[str]] = []
    final = output
    if lane.strip_custom_sections:
        final = output.with_name(f"stripped-{output.name}")
        deletes = [arg for name in lane.strip_custom_sections for arg in ("-d", f"^{name}$")]
        post_link.append(
            [str(wasmtools.executable()), "strip", *deletes, str(output), "-o", str(final)]
        )
    return CargoRun(argv, env, workspace, output, post_link, final, sysroot)


def as_recorded(run: CargoRun, repo_root: Path) -> CargoRun:
    """`run` as a build record states it: the checkout is `$WORKSPACE`, cargo's home
    `$CARGO_HOME`, and the post-link tool its toolchain.lock name (its folder is the Python
    environment's), so records, SBOM and provenance are the same on every machine."""
    places = [
        (str(repo_root), WORKSPACE),
        (run.env["CARGO_HOME"], CARGO_HOME),
        *([(str(run.sysroot), STD_SYSROOT)] if run.sysroot is not None else []),
        *((argv[0], Path(argv[0]).name) for argv in run.post_link),
    ]

    def fix(text: str) -> str:
        return to_placeholders(text, places)

    return CargoRun(
        argv=[fix(a) for a in run.argv],
        env={k: fix(v) for k, v in run.env.items()},
        cwd=Path(fix(str(run.cwd))),
        output=Path(fix(str(run.output))),
        post_link=[[fix(a) for a in argv] for argv in run.post_link],
        final=Path(fix(str(run.final))),
        sysroot=None if run.sysroot is None else Path(STD_SYSROOT),
    )


def run_cargo(lane: Lane, cargo: CargoRun, say: Say) -> None:
    """Run cargo with umask 022, printing a heartbeat while it works."""
    for folder in (Path(cargo.env["HOME"]), Path(cargo.env["CARGO_HOME"])):
        folder.mkdir(parents=True, exist_ok=True)
    cargo.output.unlink(missing_ok=True)  # a stale output must never pass for a new one
    started = time.monotonic()
    done_flag = threading.Event()

    def heartbeat() -> None:
        while not done_flag.wait(HEARTBEAT_SECONDS):
            say(f"    ... {lane.id}: cargo still running ({time.monotonic() - started:.0f}s)")

    ticker = threading.Thread(target=heartbeat, daemon=True)
    ticker.start()
    try:
        done = process.run(cargo.argv, cwd=cargo.cwd, env=cargo.env, umask=0o022)
    except CommandUnstartable as exc:
        raise CompileError(
            f"{lane.id}: cannot run {cargo.argv[0]}: {exc.strerror}",
            hint="run `tinyrustlm-release toolchain install`",
        ) from exc
    finally:
        done_flag.set()
    _require(lane, cargo.argv, done, cargo.output, "cargo")
    if cargo.final != cargo.output:
        cargo.final.unlink(missing_ok=True)
    for argv in cargo.post_link:
        step = process.run(argv, env=cargo.env, umask=0o022)
        _require(lane, argv, step, cargo.final, Path(argv[0]).name)


def _require(lane: Lane, argv: list[str], done: Finished[str], output: Path, what: str) -> None:
    if done.returncode != 0 or not output.is_file():
        tail = "\n".join(("    " + ln) for ln in done.stderr.strip().splitlines()[-25:])
        raise CompileError(
            f"lane {lane.id}: {what} failed (exit {done.returncode})\n"
            f"  argv: {' '.join(argv)}\n  last lines:\n{tail}",
            where=f"lane {lane.id}",
        )
