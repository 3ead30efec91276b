"""Swap two paths in one step (Linux renameat2 with RENAME_EXCHANGE), and fault points.

`exchange(a, b)`: after it returns, `a` holds what `b` held and vice versa; at no instant is
either name missing. That is how `release --force` replaces a bundle: the new one is staged
beside, then exchanged with the old one, so `dist/` always holds a complete bundle.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
from pathlib import Path

from pipeline.errors import PipelineError

AT_FDCWD = -100
RENAME_EXCHANGE = 1 << 1  # linux/fs.h
# Test hook: a kill -9 at the named point (e.g. `bundle.exchanged`), never a race.
FAULT_ENV = "TINYRUSTLM_TEST_KILL_AT"


class ExchangeUnsupported(PipelineError):
    """This kernel or filesystem cannot swap two paths atomically."""

    error_id = "io.exchange-unsupported"
    default_hint = (
        "put --out (or dist/) on a local Linux filesystem that supports "
        "renameat2(RENAME_EXCHANGE), such as ext4, xfs or tmpfs"
    )


def exchange(a: Path, b: Path) -> None:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        raise ExchangeUnsupported(
            "renameat2 is not available: cannot replace the bundle atomically",
            where=str(b),
            hint="remove the old bundle by hand, then release without --force",
        )
    renameat2.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    if renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise ExchangeUnsupported(
            f"cannot exchange {a.name} and {b.name} atomically: {os.strerror(err)}",
            where=str(b),
            hint="remove the old bundle by hand, then release without --force",
        )


def fault_point(name: str) -> None:
    """Die here (SIGKILL, as a power cut would) when the test hook names this point."""
    if os.environ.get(FAULT_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
