"""An exclusive, non-blocking lock on a file (flock); it dies with the process that holds it."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pipeline.errors import PipelineError


@contextmanager
def hold_lock(path: Path, busy: type[PipelineError], what: str) -> Iterator[None]:
    """Hold `path` or raise `busy` naming the holder's pid (`what`: "release", "build")."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
            raise busy(
                f"another {what} is running (pid {holder})",
                where=str(path),
                hint="wait for it to finish; the lock goes away when that process ends",
            ) from exc
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing drops the flock
