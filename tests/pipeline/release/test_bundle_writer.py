"""dist/ never holds a partial bundle; one release at a time; existing versions are kept."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pipeline.release import bundle as bundle_mod
from pipeline.release.bundle import (
    BundleExists,
    ReleaseLocked,
    bundle_contents,
)
from pipeline.release.bundle import (
    write_bundle as write_contents,
)
from verify.bundle.tarball import deterministic_tarball

FILES = {"manifest.json": b"{}", "artifacts/a.wasm": b"\0asm\1\0\0\0", "js/host.js": b"x"}


def write_bundle(
    dist: Path, version: str, files: dict[str, bytes], mtime: int, *, force: bool = False
) -> Path:
    """The writer over `files` plus their SHA256SUMS and tarball (what step 8 makes)."""
    return write_contents(dist, version, bundle_contents(version, files, mtime), force=force)[0]


def _bundles(dist: Path) -> list[str]:
    return sorted(p.name for p in dist.iterdir() if not p.name.startswith("."))


def test_writes_files_checksums_and_tarball(tmp_path: Path) -> None:
    final = write_bundle(tmp_path / "dist", "1.0.0", FILES, 1_700_000_000)
    written = {p.relative_to(final).as_posix() for p in final.rglob("*") if p.is_file()}
    assert written == {*FILES, "SHA256SUMS", "tinyrustlm-1.0.0.tar.gz"}
    assert (final / "artifacts/a.wasm").read_bytes() == FILES["artifacts/a.wasm"]
    assert oct((final / "manifest.json").stat().st_mode & 0o777) == oct(0o644)
    assert not (tmp_path / "dist/.staging").exists()


def test_existing_version_is_refused_unless_force(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    write_bundle(dist, "1.0.0", FILES, 1)
    with pytest.raises(BundleExists):
        write_bundle(dist, "1.0.0", {**FILES, "js/host.js": b"y"}, 1)
    assert (dist / "tinyrustlm-1.0.0/js/host.js").read_bytes() == b"x"
    write_bundle(dist, "1.0.0", {**FILES, "js/host.js": b"y"}, 1, force=True)
    assert (dist / "tinyrustlm-1.0.0/js/host.js").read_bytes() == b"y"
    assert _bundles(dist) == ["tinyrustlm-1.0.0"]


def test_the_same_bytes_again_are_up_to_date_and_not_rewritten(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    contents = bundle_contents("1.0.0", FILES, 1)
    final, written = write_contents(dist, "1.0.0", contents)
    assert written
    before = {p: p.stat().st_mtime_ns for p in final.rglob("*")}
    again, written = write_contents(dist, "1.0.0", contents)
    assert (again, written) == (final, False)
    assert {p: p.stat().st_mtime_ns for p in final.rglob("*")} == before
    extra = final / "stray.txt"  # one more file is another bundle, not the same one
    extra.write_bytes(b"")
    with pytest.raises(BundleExists, match="different bundle"):
        write_contents(dist, "1.0.0", contents)


def test_lock_stops_a_second_release(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    dist.mkdir()
    fd = os.open(dist / ".release.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(ReleaseLocked):
            write_bundle(dist, "1.0.0", FILES, 1)
    finally:
        os.close(fd)
    assert _bundles(dist) == []
    write_bundle(dist, "1.0.0", FILES, 1)  # the lock is free again


def test_failure_while_staging_publishes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def failing(path: Path, data: bytes, mode: int = 0o644) -> None:
        calls.append(path)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        path.write_bytes(data)

    monkeypatch.setattr(bundle_mod, "write_durable", failing)
    dist = tmp_path / "dist"
    with pytest.raises(OSError):
        write_bundle(dist, "1.0.0", FILES, 1)
    assert _bundles(dist) == []


def test_kill_9_mid_write_leaves_no_bundle(tmp_path: Path) -> None:
    """A real SIGKILL while staging: no bundle appears, and the next release succeeds."""
    dist = tmp_path / "dist"
    script = textwrap.dedent(f"""
        import time
        from pathlib import Path
        import pipeline.release.bundle as b
        real = b.write_durable
        def slow(path, data, mode=0o644):
            real(path, data, mode)
            Path({str(tmp_path / "started")!r}).touch()
            time.sleep(30)
        b.write_durable = slow
        files = b.bundle_contents("1.0.0", {{"a.txt": b"a", "b.txt": b"b"}}, 1)
        b.write_bundle(Path({str(dist)!r}), "1.0.0", files)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=Path(__file__).parents[3])
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "started").exists():
            assert proc.poll() is None, "writer exited early"
            assert time.monotonic() < deadline, "writer never started"
            time.sleep(0.02)
        assert (dist / ".staging").exists()
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert _bundles(dist) == []
    final = write_bundle(dist, "1.0.0", {"a.txt": b"a"}, 1)
    assert _bundles(dist) == ["tinyrustlm-1.0.0"]
    assert not (dist / ".staging").exists()
    assert (final / "a.txt").read_bytes() == b"a"


def test_tarball_bytes_depend_only_on_inputs() -> None:
    one = deterministic_tarball("root", {"b": b"2", "a/x": b"1"}, 5)
    two = deterministic_tarball("root", {"a/x": b"1", "b": b"2"}, 5)
    assert one == two
    assert one != deterministic_tarball("root", {"a/x": b"1", "b": b"2"}, 6)


def test_checksums_cover_every_file_but_themselves_and_the_tarball() -> None:
    contents = bundle_contents("1.0.0", FILES, 1)
    lines = contents["SHA256SUMS"].decode().splitlines()
    assert [line.split("  ", 1)[1] for line in lines] == sorted(FILES)


OLD = {"a.txt": b"old", "b.txt": b"old b"}
NEW = {"a.txt": b"new", "b.txt": b"new b"}


@pytest.mark.parametrize(
    ("point", "expected"),
    [("bundle.staged", OLD), ("bundle.exchanged", NEW)],
    ids=["killed-before-exchange", "killed-after-exchange"],
)
def test_force_kill_9_always_leaves_a_complete_bundle(
    tmp_path: Path, point: str, expected: dict[str, bytes]
) -> None:
    """kill -9 injected at the exact point of `--force` replacement (no race): dist/ holds
    one complete bundle, old or new, and the next release cleans up and succeeds."""
    dist = tmp_path / "dist"
    write_bundle(dist, "1.0.0", OLD, 1)
    script = textwrap.dedent(f"""
        from pathlib import Path
        import pipeline.release.bundle as b
        files = b.bundle_contents("1.0.0", {NEW!r}, 1)
        b.write_bundle(Path({str(dist)!r}), "1.0.0", files, force=True)
    """)
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=Path(__file__).parents[3],
        env={**os.environ, "TINYRUSTLM_TEST_KILL_AT": point},
        timeout=60,
    )
    assert done.returncode == -signal.SIGKILL, "the fault point was never reached"
    assert _bundles(dist) == ["tinyrustlm-1.0.0"]
    final = dist / "tinyrustlm-1.0.0"
    assert {n: (final / n).read_bytes() for n in expected} == expected
    assert bundle_contents("1.0.0", expected, 1) == {
        p.relative_to(final).as_posix(): p.read_bytes() for p in final.rglob("*") if p.is_file()
    }
    write_bundle(dist, "1.0.0", NEW, 1, force=True)
    assert not (dist / ".staging").exists()
    assert (final / "a.txt").read_bytes() == b"new"
