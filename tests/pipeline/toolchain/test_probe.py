"""Sysroot digests: the stat-keyed cache never hides a changed file."""

from __future__ import annotations

from pathlib import Path

from pipeline.toolchain.lockfile import SysrootSeed
from pipeline.toolchain.probe import Signature, sysroot_digest


def test_a_changed_file_changes_the_digest_even_with_a_cache(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    rlib = tmp_path / "lib" / "libcore.rlib"
    rlib.write_bytes(b"A" * 64)
    seed = SysrootSeed(target="t", path=str(tmp_path / "lib"))
    known: dict[str, tuple[Signature, str]] = {}
    first = sysroot_digest(seed, known)
    assert first == sysroot_digest(seed, known) == sysroot_digest(seed)
    rlib.write_bytes(b"B" * 64)  # same size: only the stat times and the bytes differ
    changed = sysroot_digest(seed, known)
    assert changed.sha256 != first.sha256
    assert changed == sysroot_digest(seed)


def test_a_matching_signature_is_not_read_again(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "a.rlib").write_bytes(b"x")
    seed = SysrootSeed(target="t", path=str(tmp_path / "lib"))
    known: dict[str, tuple[Signature, str]] = {}
    sysroot_digest(seed, known)
    path = str(tmp_path / "lib" / "a.rlib")
    known[path] = (known[path][0], "f" * 64)  # what the cache says is what is used
    assert sysroot_digest(seed, known) != sysroot_digest(seed)
