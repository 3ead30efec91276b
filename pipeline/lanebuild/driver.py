"""Build lanes: plan, skip what is cached, run cargo, content-address, smoke, record, index.

Layout under build/:
  <lane>/runtime.<lane>.<sha256[:16]>.wasm (native: tinyrustlm.<lane>.<sha16>[.exe])
  <lane>/build-record.json   the BuildRecord of that artifact
  index.json                 the BuildIndex of every lane built successfully
  .scratch/                  cargo home, target dirs, wine prefix (never read by later steps)
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

from pipeline import paths
from pipeline.errors import CheckFailed, PipelineError
from pipeline.io.atomic import write_atomic
from pipeline.io.digest import sha256_file
from pipeline.io.inputs import load_model
from pipeline.io.lock import hold_lock
from pipeline.lanebuild import smoke
from pipeline.lanebuild.cargo import CargoRun, CompileError, as_recorded, plan_run, run_cargo
from pipeline.lanebuild.inputs import LaneBuildError, tree_inputs
from pipeline.lanebuild.records import BuildIndex, BuildOutput, BuildRecord, IndexEntry
from pipeline.lanebuild.smoke_reuse import (
    VERDICT_FILE,
    identity_digest,
    runner_identity,
    smoke_once,
)
from pipeline.lanebuild.stdbuild import ensure_sysroot, key_of
from pipeline.toolchain.lockfile import ToolchainLock
from pipeline.tree.lanes import Lane
from pipeline.tree.snapshot import Tree
from verify.wasm.sections import parse_module


class SmokeFailed(CheckFailed):
    """A lane's smoke test ran and failed."""

    error_id = "build.smoke-failed"
    default_hint = (
        "fix the failing lanes (they were left out of build/index.json), or leave them out with "
        "--lane"
    )


Say = Callable[[str], None]
RECORD = "build-record.json"
SCRATCH = ".scratch"


def artifact_name(lane: Lane, sha256: str) -> str:
    stem = "runtime" if lane.kind == "wasm" else "tinyrustlm"
    return f"{stem}.{lane.id}.{sha256[:16]}{lane.extension}"


def _cached(lane_dir: Path, input_digest: str) -> BuildRecord | None:
    """The lane's record if its inputs are unchanged and its artifact is intact."""
    try:
        record = load_model(BuildRecord, lane_dir / RECORD, "build-record")
    except PipelineError:
        return None
    artifact = lane_dir.parent.parent / record.output.path
    if (
        record.inputs.input_digest != input_digest
        or record.smoke.status == "fail"
        or not artifact.is_file()
        or artifact.stat().st_size != record.output.size
    ):
        return None
    return record


def _check_linkers(lanes: list[Lane], lock: ToolchainLock) -> None:
    locked = {tool.argv[0] for tool in lock.tool}
    for lane in lanes:
        if lane.linker not in locked:
            raise LaneBuildError(
                f"lane {lane.id}: linker {lane.linker} is not pinned in {paths.LOCK_FILE}",
                where=str(paths.LANES_FILE),
                error_id="build.linker-not-pinned",
            )


def _check_claimed_features(lane: Lane, produced: Path) -> None:
    """The linked module's target_features must say what lanes.toml expects (a cheap guard;
    verify/ then checks the claim against every instruction)."""
    if lane.kind != "wasm":
        return
    claimed = parse_module(produced.read_bytes()).target_features or ()
    used = sorted(f.name for f in claimed if f.prefix == "+")
    if used != sorted(lane.expected_features):
        raise CompileError(
            f"lane {lane.id}: the linked module claims target features {used}, "
            f"lanes.toml expects {sorted(lane.expected_features)}",
            where=str(paths.LANES_FILE),
        )


def _publish(lane: Lane, produced: Path, lane_dir: Path) -> tuple[Path, str, int]:
    """Copy cargo's output to its content-addressed name atomically; drop stale artifacts (the
    record and the smoke verdict stay: a verdict for the same bytes is reused)."""
    data = produced.read_bytes()
    sha = sha256_file(produced)
    final = lane_dir / artifact_name(lane, sha)
    write_atomic(final, data, mode=0o755 if lane.kind == "native" else 0o644)
    for old in lane_dir.iterdir():
        if old != final and old.name not in (RECORD, VERDICT_FILE):
            old.unlink()
    return final, sha, len(data)


def lane_run(tree: Tree, lane: Lane, sysroot: Path | None) -> CargoRun:
    """The lane's one cargo run on this tree (the build runs it; a handed-over record must
    state exactly it: pipeline.lanebuild.agreement)."""
    scratch = tree.build_dir / SCRATCH
    return plan_run(
        lane, tree.lanes, tree.lock, tree.workspace, scratch, tree.git.commit_time, sysroot
    )


class BuildLocked(PipelineError):
    """Another build is writing into the same build/ folder."""

    error_id = "build.locked"
    default_hint = "wait for the other build to finish; the lock goes away when that process ends"


def build_lanes(
    tree: Tree, lanes: list[str] | None = None, force: bool = False, say: Say = print
) -> BuildIndex:
    """Build the selected lanes (all by default); returns the updated build index."""
    with hold_lock(tree.build_dir / ".build.lock", BuildLocked, "build"):
        return _build_locked(tree, lanes, force, say)


def _build_locked(tree: Tree, lanes: list[str] | None, force: bool, say: Say) -> BuildIndex:
    repo_root, lanes_file = tree.root, tree.lanes
    selected = lanes_file.select(lanes)
    lock = tree.lock
    _check_linkers(selected, lock)
    workspace = tree.workspace
    revision, epoch = tree.git.revision, tree.git.commit_time
    build_dir = tree.build_dir
    scratch = build_dir / SCRATCH
    index_path = repo_root / paths.BUILD_INDEX
    inputs_of = tree_inputs(lanes_file, workspace, tree.lock_sha256)
    current = {lane_id: inputs.input_digest for lane_id, inputs in inputs_of.items()}
    entries = _previous_entries(index_path, build_dir, current)
    failures: list[str] = []
    order = [lane.id for lane in lanes_file.lane]

    def save() -> BuildIndex:
        return _write_index(index_path, revision, epoch, tree.lock_sha256, entries, order)

    cached = {
        lane.id: None if force else _cached(build_dir / lane.id, inputs_of[lane.id].input_digest)
        for lane in selected
    }
    _prepare_std([lane for lane in selected if cached[lane.id] is None], lock, say)
    for number, lane in enumerate(selected, 1):
        lane_dir = build_dir / lane.id
        lane_dir.mkdir(parents=True, exist_ok=True)
        record = cached[lane.id]
        inputs = inputs_of[lane.id]
        started = time.monotonic()
        if record is not None:
            say(f"[{number}/{len(selected)}] {lane.id}: cached (inputs unchanged)")
        else:
            say(f"[{number}/{len(selected)}] {lane.id}: building for {lane.target}")
            entries.pop(lane.id, None)  # until this lane succeeds, nothing may pick it up
            save()
            sysroot = None
            if lane.build_std:
                std = ensure_sysroot(lane, lock)
                sysroot = std.root
                say(
                    f"    std for {lane.target} "
                    + ("rebuilt" if std.built else "from the cache")
                    + f" (key {std.key[:16]}, {time.monotonic() - started:.1f}s)"
                )
            run = lane_run(tree, lane, sysroot)
            run_cargo(lane, run, say)
            _check_claimed_features(lane, run.final)
            artifact, sha, size = _publish(lane, run.final, lane_dir)
            identity = runner_identity(lane.smoke, lock, repo_root)
            result, reused = smoke_once(
                lane_dir,
                sha,
                lane.smoke,
                identity,
                partial(smoke.smoke, lane.smoke, artifact, repo_root, scratch),
            )
            say(
                f"    compiled in {time.monotonic() - started:.1f}s; "
                + (
                    f"smoke verdict reused: artifact {sha[:16]} and runner {lane.smoke} "
                    f"({identity_digest(identity)}) unchanged since it passed"
                    if reused
                    else "smoke-tested"
                )
            )
            stated = as_recorded(run, repo_root)
            record = BuildRecord(
                lane=lane.id,
                target=lane.target,
                kind=lane.kind,
                argv=stated.argv,
                post_link_argv=stated.post_link,
                env=stated.env,
                source_date_epoch=epoch,
                inputs=inputs,
                output=BuildOutput(
                    path=artifact.relative_to(repo_root).as_posix(), sha256=sha, size=size
                ),
                smoke=result,
            )
            write_atomic(
                lane_dir / RECORD, record.model_dump_json(by_alias=True, indent=2).encode() + b"\n"
            )
            say(
                f"    smoke {result.status} ({result.engine}) {result.detail[:80]}"
                f" — {time.monotonic() - started:.1f}s total"
            )
        if record.smoke.status == "fail":
            failures.append(f"{lane.id}: {record.smoke.detail}")
            continue
        entries[lane.id] = IndexEntry(
            lane=lane.id,
            target=lane.target,
            kind=lane.kind,
            artifact=record.output.path,
            sha256=record.output.sha256,
            size=record.output.size,
            record=(lane_dir / RECORD).relative_to(repo_root).as_posix(),
            smoke=record.smoke,
        )
        save()
    index = save()
    if failures:
        raise SmokeFailed(
            "smoke test failed: " + "; ".join(failures),
            hint="the failing lanes were left out of build/index.json",
        )
    return index


# std builds run two at a time before the lanes: each is a chain of crates (core, alloc, std)
# that keeps one core busy for long stretches; measured on 2 cores, the four std builds take
# 128 s two at a time against 167 s one after another.
STD_JOBS = 2


def _prepare_std(to_build: list[Lane], lock: ToolchainLock, say: Say) -> None:
    """Every rebuilt std the lanes about to build need, one per key, `STD_JOBS` at a time."""
    by_key = {key_of(lane, lock): lane for lane in to_build if lane.build_std}
    if not by_key:
        return
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=STD_JOBS) as pool:
        done = list(pool.map(lambda lane: ensure_sysroot(lane, lock), by_key.values()))
    built = [lane.id for lane, std in zip(by_key.values(), done, strict=True) if std.built]
    if built:
        say(
            f"std rebuilt from the pinned sources for {', '.join(built)} "
            f"({time.monotonic() - started:.1f}s, {STD_JOBS} at a time)"
        )


def _previous_entries(
    index_path: Path, build_dir: Path, current: dict[str, str]
) -> dict[str, IndexEntry]:
    """Entries of the last index that are still true: lanes not built in this run keep their
    entry only if it was built from exactly today's inputs (same sources, lock, lane entry)."""
    try:
        index = load_model(BuildIndex, index_path, "build-index")
    except PipelineError:
        return {}
    return {
        entry.lane: entry
        for entry in index.lanes
        if _cached(build_dir / entry.lane, current.get(entry.lane, "")) is not None
    }


def _write_index(
    path: Path,
    revision: str,
    epoch: int,
    lock_sha256: str,
    entries: dict[str, IndexEntry],
    order: list[str],
) -> BuildIndex:
    """Entries in lanes.toml order (lanes no longer in lanes.toml last, by name)."""
    rank = {lane_id: i for i, lane_id in enumerate(order)}
    lanes = sorted(entries.values(), key=lambda e: (rank.get(e.lane, len(rank)), e.lane))
    index = BuildIndex(
        source_revision=revision,
        source_date_epoch=epoch,
        toolchain_lock_sha256=lock_sha256,
        lanes=lanes,
    )
    write_atomic(path, index.model_dump_json(by_alias=True, indent=2).encode() + b"\n")
    return index


def clean(repo_root: Path) -> None:
    shutil.rmtree(repo_root / paths.BUILD_DIR, ignore_errors=True)
