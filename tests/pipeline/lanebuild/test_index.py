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
D1, D2 = "d1" * 32, "d2" * 32  # two input digests


def _lane(root: Path, lane: str, digest: str, data: bytes = b"\0asm") -> IndexEntry:
    folder = root / "build" / lane
    folder.mkdir(parents=True)
    (folder / "runtime.wasm").write_bytes(data)
    inputs = BuildInputs(
        sources_sha256="5" * 64,
        cargo_lock_sha256="c" * 64,
        lane_entry_sha256="1" * 64,
        toolchain_lock_sha256="7" * 64,
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
    "unchanged-inputs-kept": ({"a": D1}, ["a"]),
    "changed-sources-dropped": ({"a": D2}, []),
    "lane-gone-from-lanes-toml-dropped": ({}, []),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_previous_entries(case: tuple[dict[str, str], list[str]], tmp_path: Path) -> None:
    current, kept = case
    entry = _lane(tmp_path, "a", D1)
    index = BuildIndex(
        source_revision="e" * 40, source_date_epoch=1, toolchain_lock_sha256="7" * 64, lanes=[entry]
    )
    path = tmp_path / "build" / "index.json"
    path.write_text(index.model_dump_json(by_alias=True), encoding="utf-8")
    assert sorted(_previous_entries(path, tmp_path / "build", current)) == kept


def test_a_missing_artifact_is_dropped(tmp_path: Path) -> None:
    entry = _lane(tmp_path, "a", D1)
    (tmp_path / entry.artifact).unlink()
    index = BuildIndex(
        source_revision="e" * 40, source_date_epoch=1, toolchain_lock_sha256="7" * 64, lanes=[entry]
    )
    path = tmp_path / "build" / "index.json"
    path.write_text(index.model_dump_json(by_alias=True), encoding="utf-8")
    assert _previous_entries(path, tmp_path / "build", {"a": D1}) == {}
