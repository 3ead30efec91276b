"""build/index.json keeps a lane from an earlier run only while it is still true."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.lanebuild.driver import RECORD, _previous_entries
from pipeline.lanebuild.records import (
    BuildIndex,
    BuildInputs,
    BuildOutput,
    BuildRecord,
    IndexEntry,
    SmokeResult,
)

SMOKE = SmokeResult(status="pass", engine="test")


def _lane(root: Path, lane: str, digest: str, data: bytes = b"\0asm") -> IndexEntry:
    folder = root / "build" / lane
    folder.mkdir(parents=True)
    (folder / "runtime.wasm").write_bytes(data)
    inputs = BuildInputs(
        sources_sha256="s",
        cargo_lock_sha256="c",
        lane_entry_sha256="l",
        toolchain_lock_sha256="t",
        input_digest=digest,
    )
    output = BuildOutput(path=f"build/{lane}/runtime.wasm", sha256="0" * 64, size=len(data))
    record = BuildRecord(
        lane=lane,
        target="wasm32-unknown-unknown",
        kind="wasm",
        argv=[],
        env={},
        source_date_epoch=1,
        inputs=inputs,
        output=output,
        smoke=SMOKE,
    )
    (folder / RECORD).write_text(record.model_dump_json(by_alias=True), encoding="utf-8")
    return IndexEntry(
        lane=lane,
        target=record.target,
        kind="wasm",
        artifact=output.path,
        sha256=output.sha256,
        size=output.size,
        record=f"build/{lane}/{RECORD}",
        smoke=SMOKE,
    )


CASES = {
    "unchanged-inputs-kept": ({"a": "d1"}, ["a"]),
    "changed-sources-dropped": ({"a": "d2"}, []),
    "lane-gone-from-lanes-toml-dropped": ({}, []),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_previous_entries(case: tuple[dict[str, str], list[str]], tmp_path: Path) -> None:
    current, kept = case
    entry = _lane(tmp_path, "a", "d1")
    index = BuildIndex(
        source_revision="r", source_date_epoch=1, toolchain_lock_sha256="t", lanes=[entry]
    )
    path = tmp_path / "build" / "index.json"
    path.write_text(index.model_dump_json(by_alias=True), encoding="utf-8")
    assert sorted(_previous_entries(path, tmp_path / "build", current)) == kept


def test_a_missing_artifact_is_dropped(tmp_path: Path) -> None:
    entry = _lane(tmp_path, "a", "d1")
    (tmp_path / entry.artifact).unlink()
    index = BuildIndex(
        source_revision="r", source_date_epoch=1, toolchain_lock_sha256="t", lanes=[entry]
    )
    path = tmp_path / "build" / "index.json"
    path.write_text(index.model_dump_json(by_alias=True), encoding="utf-8")
    assert _previous_entries(path, tmp_path / "build", {"a": "d1"}) == {}
