"""Atomic, durable file writes: temp file in the same folder, fsync, rename, fsync folder."""

from __future__ import annotations

import os
from pathlib import Path


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_durable(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write `data` to a new file `path` (no rename): flushed to disk before returning."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        view = memoryview(data)
        while view:  # os.write may write less than asked
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    path.chmod(mode)  # the umask must not change what the bytes' owner can do


def write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Replace `path` with `data`: readers see the old file or the new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        write_durable(tmp, data, mode)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # never leave a half-written temp file behind
        raise
    fsync_dir(path.parent)
