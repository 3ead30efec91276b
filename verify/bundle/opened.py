"""Step 1, read the bundle: a directory, or a tarball unpacked into a temporary folder, read
within the limits (`tarball.HARD_LIMITS`) into an `Opened` bundle that later steps only read.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from verify.bundle import errors as e
from verify.bundle.tarball import HARD_LIMITS, ReadLimits, member_limit, read_tarball
from verify.inputs import InputError, InputTooLarge, kind_of, read_regular_file


@dataclass(frozen=True)
class Opened:
    """The bundle's files (path -> bytes), and where they came from."""

    root: Path  # a folder holding the files (the input, or the unpacked tarball)
    files: Mapping[str, bytes]
    is_directory: bool
    top_folder: str = ""  # the tarball's single top folder (tarball input only)
    tarball: bytes = b""  # the input tarball's own bytes (tarball input only)
    source: str = ""  # the input tarball's path, as given (tarball input only)

    @property
    def detail(self) -> str:
        return f"{len(self.files)} files ({'directory' if self.is_directory else 'tarball'})"


def _read_bounded(path: Path, rel: str, limit: int) -> bytes:
    try:
        return read_regular_file(path, "bundle", limit)
    except InputTooLarge as exc:
        raise e.LimitExceeded(exc.message, where=rel) from None
    except InputError as exc:
        raise e.BundleUnreadable(exc.message, where=exc.where) from None


def read_bundle_file(path: Path, rel: str, limits: ReadLimits = HARD_LIMITS) -> bytes:
    """File `rel` of a bundle folder, bounded as `verify bundle` bounds it: a FIFO, a device or
    a file over its member limit is refused. For every tool that reads a bundle's files."""
    # the in-folder tarball is compressed: it gets the compressed-size cap
    gz = rel.endswith(".tar.gz") and "/" not in rel
    return _read_bounded(path, rel, limits.compressed_bytes if gz else member_limit(rel, limits))


def read_bundle_folder(root: Path, limits: ReadLimits = HARD_LIMITS) -> dict[str, bytes]:
    """Every file of bundle folder `root`, read as `verify bundle` reads them (no links, no
    FIFOs or devices, every file and the whole within `limits`)."""
    return _read_tree(root, limits)


def _read_tree(root: Path, limits: ReadLimits) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    total = entries = 0
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        entries += 1
        if entries > limits.entries:
            raise e.LimitExceeded(f"more than {limits.entries} entries", where=rel)
        if path.is_symlink():
            raise e.ExtraFile("symbolic links are not allowed in a bundle", where=rel)
        if path.is_dir():
            continue
        if not path.is_file():
            raise e.ExtraFile("not a regular file", where=rel)
        data = read_bundle_file(path, rel, limits)
        total += 0 if rel.endswith(".tar.gz") and "/" not in rel else len(data)
        if total > limits.total_bytes:
            raise e.LimitExceeded(
                f"files add up to more than {limits.total_bytes} bytes", where=rel
            )
        files[rel] = data
    return files


@contextmanager
def open_bundle(path: Path, limits: ReadLimits) -> Iterator[Opened]:
    """The bundle at `path`; a tarball's files stay unpacked until the `with` ends."""
    if path.is_dir():
        yield Opened(path, _read_tree(path, limits), is_directory=True)
        return
    if not path.is_file():
        what = "no such bundle directory or tarball"
        if path.exists():
            what = f"{kind_of(path.stat().st_mode)}, not a bundle directory or tarball"
        raise e.BundleUnreadable(what, where=str(path))
    data = _read_bounded(path, str(path), limits.compressed_bytes)
    top, members = read_tarball(data, str(path), limits)
    with tempfile.TemporaryDirectory(prefix="tinyrustlm-verify-") as tmp:
        root = Path(tmp)
        for rel, content in members.items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        yield Opened(
            root, members, is_directory=False, top_folder=top, tarball=data, source=str(path)
        )
