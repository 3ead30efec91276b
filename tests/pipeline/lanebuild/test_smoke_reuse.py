"""A smoke verdict is reused only for the same artifact bytes and the same runner (issue 36):
a changed artifact, a changed runner (its pinned version, its harness files), a verdict that
was not `pass` or a damaged verdict file runs the self-test again."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import shutil
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from pipeline import paths
from pipeline.lanebuild import driver, smoke, smoke_reuse
from pipeline.lanebuild.inputs import tree_inputs
from pipeline.lanebuild.records import SmokeResult
from pipeline.lanebuild.smoke_reuse import VERDICT_FILE, runner_identity, smoke_once
from pipeline.toolchain.lockfile import ToolchainLock, load_lock
from pipeline.tree.snapshot import read_tree

REPO_ROOT = Path(__file__).resolve().parents[3]
SHA_A = "a" * 64
SHA_B = "b" * 64
PASS = SmokeResult(status="pass", engine="wine64", detail="self-test ok")


class Runs:
    """A runner that counts its runs and answers `result`."""

    def __init__(self, result: SmokeResult = PASS) -> None:
        self.count = 0
        self.result = result

    def __call__(self) -> SmokeResult:
        self.count += 1
        return self.result


def _twice(
    tmp_path: Path,
    second: dict[str, str],
    first_result: SmokeResult = PASS,
    between: Callable[[Path], None] | None = None,
) -> tuple[int, bool]:
    """Smoke once with (SHA_A, wine64, "id-1"), then with `second`'s changes: (runs, reused)."""
    runs = Runs(first_result)
    result, reused = smoke_once(tmp_path, SHA_A, "wine64", "id-1", runs)
    assert (result, reused, runs.count) == (first_result, False, 1)
    if between is not None:
        between(tmp_path / VERDICT_FILE)
    runs.result = PASS
    given = {"sha": SHA_A, "runner": "wine64", "identity": "id-1", **second}
    result, reused = smoke_once(
        tmp_path,
        given["sha"],
        given["runner"],  # type: ignore[arg-type]
        given["identity"],
        runs,
    )
    assert result == PASS
    return runs.count, reused


def test_an_unchanged_artifact_and_runner_reuse_the_verdict(tmp_path: Path) -> None:
    assert _twice(tmp_path, {}) == (1, True)


@pytest.mark.parametrize(
    "second",
    [{"sha": SHA_B}, {"identity": "id-2"}, {"runner": "qemu-aarch64"}],
    ids=["changed artifact", "changed runner identity", "another runner"],
)
def test_a_changed_artifact_or_runner_runs_the_smoke_again(
    tmp_path: Path, second: dict[str, str]
) -> None:
    assert _twice(tmp_path, second) == (2, False)


@pytest.mark.parametrize(
    "first",
    [
        SmokeResult(status="fail", engine="wine64", detail="exit 3"),
        SmokeResult(status="not-run", engine="wine64", detail="wine64 is not installed"),
    ],
    ids=["fail", "not-run"],
)
def test_only_a_pass_is_reused(tmp_path: Path, first: SmokeResult) -> None:
    assert _twice(tmp_path, {}, first_result=first) == (2, False)


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_text("{not json"),
        lambda p: p.write_text('{"artifact_sha256": "a"}'),
        lambda p: (p.unlink(), p.mkdir()),
        lambda p: p.write_bytes(b" " * (smoke_reuse.VERDICT_LIMIT_BYTES + 1)),
    ],
    ids=["not json", "not its format", "a folder", "too large"],
)
def test_a_damaged_verdict_file_runs_the_smoke_again(
    tmp_path: Path, damage: Callable[[Path], object]
) -> None:
    def hurt(path: Path) -> None:
        damage(path)

    runs = Runs()
    smoke_once(tmp_path, SHA_A, "wine64", "id-1", runs)
    hurt(tmp_path / VERDICT_FILE)
    if (tmp_path / VERDICT_FILE).is_dir():  # cannot be replaced: the run still happens
        with pytest.raises(OSError):
            smoke_once(tmp_path, SHA_A, "wine64", "id-1", runs)
    else:
        assert smoke_once(tmp_path, SHA_A, "wine64", "id-1", runs) == (PASS, False)
    assert runs.count == 2


@pytest.fixture
def lock() -> ToolchainLock:
    return load_lock(REPO_ROOT / paths.LOCK_FILE)


def _repinned(lock: ToolchainLock, tool: str, version: str) -> ToolchainLock:
    tools = [t.model_copy(update={"version": version}) if t.name == tool else t for t in lock.tool]
    return lock.model_copy(update={"tool": tools})


@pytest.mark.parametrize(
    ("runner", "tool"),
    [("wine64", "wine64"), ("qemu-aarch64", "qemu-aarch64-static"), ("node-workers", "node")],
)
def test_a_runner_pinned_at_another_version_is_another_runner(
    lock: ToolchainLock, runner: str, tool: str
) -> None:
    before = runner_identity(runner, lock, REPO_ROOT)  # type: ignore[arg-type]
    after = runner_identity(runner, _repinned(lock, tool, "999.0"), REPO_ROOT)  # type: ignore[arg-type]
    assert before != after and "999.0" in after
    other = runner_identity(runner, _repinned(lock, "rustfmt", "999.0"), REPO_ROOT)  # type: ignore[arg-type]
    assert other == before  # a tool it does not run changes nothing


def test_the_node_runners_harness_files_are_part_of_it(lock: ToolchainLock, tmp_path: Path) -> None:
    for rel in (smoke_reuse.RUNNER_CODE, *smoke_reuse.HARNESS["node-workers"]):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO_ROOT / rel, tmp_path / rel)
    before = runner_identity("node-workers", lock, tmp_path)
    assert before == runner_identity("node-workers", lock, REPO_ROOT)
    with (tmp_path / "crates/wasm/js/host.js").open("a") as f:
        f.write("// changed\n")
    assert runner_identity("node-workers", lock, tmp_path) != before


def test_the_wasmtime_runner_is_its_installed_wheel(
    lock: ToolchainLock, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = runner_identity("wasmtime-simd128", lock, REPO_ROOT)
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "0.0.1")
    assert runner_identity("wasmtime-simd128", lock, REPO_ROOT) != before


@pytest.mark.parametrize("runner", ["wine64", "native", "wasmtime-mvp"])
def test_the_smoke_code_itself_is_part_of_every_runner(
    lock: ToolchainLock, tmp_path: Path, runner: str
) -> None:
    files = (smoke_reuse.RUNNER_CODE, *smoke_reuse.HARNESS[runner])  # type: ignore[index]
    for rel in files:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO_ROOT / rel, tmp_path / rel)
    before = runner_identity(runner, lock, tmp_path)  # type: ignore[arg-type]
    with (tmp_path / smoke_reuse.RUNNER_CODE).open("a") as f:
        f.write("# changed\n")
    assert runner_identity(runner, lock, tmp_path) != before  # type: ignore[arg-type]


def test_an_unchanged_rebuild_says_the_smoke_verdict_was_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`build --force` twice over the same bytes: the second build's line says the verdict was
    reused (naming the artifact and the runner) and runs no smoke; new bytes are smoke-tested.
    The driver itself, with cargo, std and the runner replaced (this tree, built in tmp_path)."""
    real = read_tree(REPO_ROOT)
    inputs = tree_inputs(real.lanes, real.workspace, real.lock_sha256)
    tree = dataclasses.replace(real, root=tmp_path)
    lane = real.lanes.lane[0]
    produced = tmp_path / "cargo-output"
    runs = Runs()
    monkeypatch.setattr("pipeline.lanebuild.driver.tree_inputs", lambda *_: inputs)
    monkeypatch.setattr(driver, "_prepare_std", lambda *_: None)
    monkeypatch.setattr(
        driver, "ensure_sysroot", lambda *_: SimpleNamespace(root=None, built=False, key="k" * 16)
    )
    monkeypatch.setattr(driver, "lane_run", lambda *_: SimpleNamespace(final=produced))
    monkeypatch.setattr(driver, "run_cargo", lambda *_: None)
    monkeypatch.setattr(driver, "_check_claimed_features", lambda *_: None)
    monkeypatch.setattr(driver, "runner_identity", lambda *_: "id-1")
    monkeypatch.setattr(
        driver, "as_recorded", lambda *_: SimpleNamespace(argv=["cargo"], post_link=[], env={})
    )
    monkeypatch.setattr(smoke, "smoke", lambda *_: runs())

    def build(data: bytes) -> list[str]:
        produced.write_bytes(data)
        lines: list[str] = []
        driver.build_lanes(tree, lanes=[lane.id], force=True, say=lines.append)
        return [line for line in lines if "compiled in" in line]

    first = build(b"the artifact")
    assert len(first) == 1 and first[0].endswith("; smoke-tested"), first
    again = build(b"the artifact")
    sha = hashlib.sha256(b"the artifact").hexdigest()
    assert (
        len(again) == 1
        and (f"; smoke verdict reused: artifact {sha[:16]} and runner {lane.smoke} (") in again[0]
    ), again
    assert again[0].endswith(") unchanged since it passed"), again
    assert runs.count == 1
    changed = build(b"another artifact")
    assert changed[0].endswith("; smoke-tested") and runs.count == 2, changed
