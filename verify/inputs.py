"""Reading an operator's input files: regular files only, never more than a fixed size.

A FIFO, a terminal or `/dev/zero` given where a file is expected would block forever or
grow without end; a huge file would be read into memory whole. So every input file is opened
without blocking, must be a regular file, and is read up to its limit and no further: the
first byte over the limit refuses it. Limits are one table (`LIMITS`), by kind of input.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, ClassVar

from verify.canonical import MAX_JSON_BYTES, parse_json
from verify.errors import VerifyError

MiB = 1024 * 1024
# kind of input -> the most bytes read from it
LIMITS: dict[str, int] = {
    "trusted-keys": 1 * MiB,
    "tuf-root": 1 * MiB,  # TUF root metadata (`fetch --root`): a few KiB
    "signing-key": 64 * 1024,
    "public-key": 64 * 1024,  # a maintainer's PEM public key: a few hundred bytes
    "tuf-metadata": 32 * MiB,  # a repository's or fetch's cached metadata (targets grow)
    "toml": 1 * MiB,  # lanes.toml, toolchain.lock, the toolchain seed, repository policy
    "policy": 4 * MiB,
    "build-index": 4 * MiB,
    "build-record": 4 * MiB,
    "rebuild-attestation": 1 * MiB,  # a real one is ~5 KiB
    "json": MAX_JSON_BYTES,
    "artifact": 256 * MiB,
    "model": 1024 * MiB,
    "served-file": 1024 * MiB,  # a file `serve` answers a request with (the model is the largest)
}
_CHUNK = 1 * MiB


class InputError(VerifyError):
    """An input file that cannot be used as given; `error_id` says why."""

    error_id: ClassVar[str] = "input.unreadable"
    default_hint = "check the path exists and this user may read it"


class InputNotRegular(InputError):
    error_id = "input.not-regular-file"
    default_hint = "give a regular file: FIFOs, devices and folders are never read"


class InputTooLarge(InputError):
    error_id = "input.too-large"
    default_hint = "no input of this kind is that large: check you gave the right file"


def kind_of(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def read_regular_file(path: Path, what: str, limit: int | None = None) -> bytes:
    """The bytes of regular file `path` (a `what` input), at most `limit` (default LIMITS)."""
    cap = LIMITS[what] if limit is None else limit
    where = str(path)
    try:
        # O_NONBLOCK: opening a FIFO with no writer must not wait for one.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"cannot read {what} file: {exc.strerror}", where=where) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputNotRegular(
                f"{what} input is {kind_of(info.st_mode)}; only regular files are read",
                where=where,
            )
        if info.st_size > cap:
            raise InputTooLarge(
                f"{what} file is {info.st_size} bytes, more than the limit of {cap}", where=where
            )
        chunks: list[bytes] = []
        total = 0
        while True:  # the file may grow after fstat: stop at the first byte over the limit
            chunk = os.read(fd, min(_CHUNK, cap + 1 - total))
            if not chunk:
                break
            total += len(chunk)
            if total > cap:
                raise InputTooLarge(
                    f"{what} file grew past the limit of {cap} bytes while read", where=where
                )
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise InputError(f"cannot read {what} file: {exc.strerror}", where=where) from None
    finally:
        os.close(fd)


def read_json_file(path: Path, what: str, limit: int | None = None) -> Any:
    """A bounded regular file holding one strict, bounded JSON document."""
    return parse_json(read_regular_file(path, what, limit), str(path))
