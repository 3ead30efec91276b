"""Durability of pipeline/io/atomic.py, seen through a spy on os.fsync: the file's bytes are
fsynced before the rename makes them visible, and the folder is fsynced after the rename
(else a crash can lose the rename even though the data reached the disk)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipeline.io import atomic as atomicio


@dataclass(frozen=True)
class Synced:
    path: Path  # what the descriptor refers to
    is_dir: bool
    size: int
    target_bytes: bytes | None  # the destination's contents at that moment


def spy(monkeypatch: pytest.MonkeyPatch, target: Path) -> list[Synced]:
    calls: list[Synced] = []
    real: Callable[[int], None] = os.fsync

    def fsync(fd: int) -> None:
        st = os.fstat(fd)
        calls.append(
            Synced(
                path=Path(f"/proc/self/fd/{fd}").readlink(),
                is_dir=stat.S_ISDIR(st.st_mode),
                size=st.st_size,
                target_bytes=target.read_bytes() if target.exists() else None,
            )
        )
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return calls


@pytest.mark.parametrize("existing", [None, b"old contents"], ids=["new-file", "replace"])
def test_write_atomic_fsyncs_the_data_then_the_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, existing: bytes | None
) -> None:
    target = tmp_path / "out" / "doc.json"
    if existing is not None:
        target.parent.mkdir()
        target.write_bytes(existing)
    data = b"new contents, long enough to be more than nothing\n"
    calls = spy(monkeypatch, target)
    atomicio.write_atomic(target, data)
    assert target.read_bytes() == data
    files = [c for c in calls if not c.is_dir]
    folders = [c for c in calls if c.is_dir]
    # the data: a temp file beside the target, complete, synced while the target was old
    assert files, "the file's bytes were never fsynced"
    assert files[0].path.parent == target.parent and files[0].path != target
    assert files[0].size == len(data)
    assert files[0].target_bytes == existing
    # the rename: the folder synced after the target holds the new bytes
    assert folders, "the folder was never fsynced after the rename"
    assert folders[-1].path == target.parent
    assert folders[-1].target_bytes == data
    assert calls.index(folders[-1]) > calls.index(files[0])


def test_write_durable_fsyncs_the_complete_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    target = tmp_path / "blob.bin"
    data = bytes(range(256)) * 64
    calls = spy(monkeypatch, target)
    atomicio.write_durable(target, data)
    assert [(c.path, c.size) for c in calls if not c.is_dir] == [(target, len(data))]
