"""`release --from-records DIR...`: lanes handed over from other machines, each checked
against this tree before anything is signed.

The fake repository gets the real lanes.toml and a Cargo.lock, so each record's input
digests are computed by the real `tree_inputs`; records folders are written in the exact
layout `build --records-out` writes (tests/build_lanes covers that writer on a real build).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pipeline.lanebuild.handoff import RecordRefused, tree_inputs
from pipeline.release.steps import build_from_records
from pipeline.tree.snapshot import read_tree
from tests.harness.release import LANES, REPO_ROOT, Harness, tiny_wasm

Doc = dict[str, Any]


def _commit(repo: Path, commit_time: int) -> None:
    stamp = f"@{commit_time} +0000"
    env = {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp, "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.invalid",
            "commit",
            "-qm",
            "lanes",
        ],
        check=True,
        env=env,
    )


def _prepare(harness: Harness) -> None:
    (harness.repo / "manifests").mkdir(exist_ok=True)
    shutil.copy(REPO_ROOT / "manifests/lanes.toml", harness.repo / "manifests/lanes.toml")
    (harness.repo / "crates/Cargo.lock").write_text("# fake lock\nversion = 3\n")
    _commit(harness.repo, harness.commit_time)


def _write_folder(
    harness: Harness,
    folder: Path,
    lanes: list[str],
    edit: Callable[[Doc, Doc], None] = lambda index, record: None,
) -> Path:
    repo = harness.repo
    revision = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    lock_sha = hashlib.sha256((repo / "toolchain.lock").read_bytes()).hexdigest()
    inputs = tree_inputs(read_tree(repo))
    index: Doc = {
        "schema": "tinyrustlm.build-index.v1",
        "source_revision": revision,
        "source_date_epoch": harness.commit_time,
        "toolchain_lock_sha256": lock_sha,
        "lanes": [],
    }
    records: list[tuple[Path, Doc]] = []
    for lane, kind, target in LANES:
        if lane not in lanes:
            continue
        data = tiny_wasm(lane) if kind == "wasm" else b"\x7fELF fake native " + lane.encode()
        sha = hashlib.sha256(data).hexdigest()
        name = f"{'runtime' if kind == 'wasm' else 'tinyrustlm'}.{lane}.{sha[:16]}"
        name += ".wasm" if kind == "wasm" else ""
        (folder / lane).mkdir(parents=True)
        (folder / lane / name).write_bytes(data)
        smoke = {"status": "pass", "engine": "fake-engine 1.0", "detail": ""}
        record: Doc = {
            "schema": "tinyrustlm.build-record.v1",
            "lane": lane,
            "target": target,
            "kind": kind,
            "argv": ["/usr/bin/cargo", "build", "--target", target],
            "env": {"HOME": "$WORKSPACE/build/.scratch/home"},
            "source_date_epoch": harness.commit_time,
            "inputs": inputs[lane].model_dump(mode="json"),
            "output": {"path": f"build/{lane}/{name}", "sha256": sha, "size": len(data)},
            "smoke": smoke,
        }
        records.append((folder / lane / "build-record.json", record))
        index["lanes"].append(
            {
                "lane": lane,
                "target": target,
                "kind": kind,
                "artifact": f"{lane}/{name}",
                "sha256": sha,
                "size": len(data),
                "record": f"{lane}/build-record.json",
                "smoke": smoke,
            }
        )
    for path, record in records:
        edit(index, record)
        path.write_text(json.dumps(record))
    (folder / "index.json").write_text(json.dumps(index))
    return folder


WASM = [lane for lane, kind, _ in LANES if kind == "wasm"]
NATIVE = [lane for lane, kind, _ in LANES if kind == "native"]


def _set(*path: str, value: Any) -> Callable[[Doc, Doc], None]:
    def edit(index: Doc, record: Doc) -> None:
        target = index if path[0] == "index" else record
        for key in path[1:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


# name -> (edit of the second folder, expected message)
REFUSALS: dict[str, tuple[Callable[[Doc, Doc], None], str]] = {
    "another commit": (_set("index", "source_revision", value="0" * 40), "built from revision"),
    "another commit time": (_set("index", "source_date_epoch", value=1), "SOURCE_DATE_EPOCH"),
    "another toolchain.lock (index)": (
        _set("index", "toolchain_lock_sha256", value="9" * 64),
        "another toolchain.lock",
    ),
    "another toolchain.lock (record)": (
        _set("record", "inputs", "toolchain_lock_sha256", value="9" * 64),
        "another toolchain.lock",
    ),
    "another Cargo.lock": (
        _set("record", "inputs", "cargo_lock_sha256", value="8" * 64),
        "another Cargo.lock",
    ),
    "another lane entry": (
        _set("record", "inputs", "lane_entry_sha256", value="7" * 64),
        "another lanes.toml",
    ),
    "another source tree": (
        _set("record", "inputs", "sources_sha256", value="6" * 64),
        "another sources",
    ),
    "record of another lane": (_set("record", "lane", value=WASM[0]), "record is of lane"),
}


def _release_from(harness: Harness, *folders: Path) -> Path:
    harness.steps = replace(harness.steps, build=build_from_records(folders))
    return harness.release().bundle


def test_two_folders_assemble_a_bundle_that_verifies(harness: Harness) -> None:
    _prepare(harness)
    one = _write_folder(harness, harness.tmp / "wasm-machine", WASM)
    two = _write_folder(harness, harness.tmp / "native-machine", NATIVE)
    bundle = _release_from(harness, one, two)
    verdict = harness.verify(bundle)
    assert verdict.files > len(LANES)
    assert any("lane(s) from records" in line for line in harness.log)


@pytest.mark.parametrize(("edit", "message"), REFUSALS.values(), ids=REFUSALS.keys())
def test_a_record_not_of_this_tree_is_refused(
    harness: Harness, edit: Callable[[Doc, Doc], None], message: str
) -> None:
    _prepare(harness)
    one = _write_folder(harness, harness.tmp / "wasm-machine", WASM)
    two = _write_folder(harness, harness.tmp / "native-machine", NATIVE, edit)
    with pytest.raises(RecordRefused, match=message):
        _release_from(harness, one, two)
    assert not (harness.tmp / "dist").exists() or not list((harness.tmp / "dist").glob("t*"))


def test_changed_artifact_bytes_are_refused(harness: Harness) -> None:
    _prepare(harness)
    one = _write_folder(harness, harness.tmp / "wasm-machine", WASM)
    artifact = next((one / WASM[0]).glob("runtime.*"))
    artifact.write_bytes(artifact.read_bytes() + b"\0")
    with pytest.raises(RecordRefused, match="is not the recorded"):
        _release_from(harness, one)


def test_a_lane_from_two_folders_is_refused(harness: Harness) -> None:
    _prepare(harness)
    one = _write_folder(harness, harness.tmp / "a", WASM)
    two = _write_folder(harness, harness.tmp / "b", WASM[:1])
    with pytest.raises(RecordRefused, match="in two records folders"):
        _release_from(harness, one, two)
