"""Careless operator input (issue 15, item 8): FIFOs and devices where a file is expected,
key names that are paths, and a bad `--key` that must stop the release at step 1."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline.documents.keys import SigningKeyError, generate_key_files
from pipeline.release.steps import STEP_TITLES
from tests.harness.release import Harness
from verify.errors import VerifyError
from verify.inputs import read_regular_file

REPO = Path(__file__).resolve().parents[3]


def _fifo(tmp: Path) -> Path:
    path = tmp / "input.fifo"
    os.mkfifo(path)
    return path


def _huge(tmp: Path) -> Path:
    path = tmp / "huge.bin"
    with path.open("wb") as f:
        f.truncate(2 * 1024 * 1024 * 1024)  # sparse 2 GiB
    return path


# name -> (make the path, error id)
NOT_FILES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "fifo": (_fifo, "input.not-regular-file"),
    "dev-zero": (lambda tmp: Path("/dev/zero"), "input.not-regular-file"),
    "directory": (lambda tmp: tmp, "input.not-regular-file"),
    "missing": (lambda tmp: tmp / "nope", "input.unreadable"),
    "over-the-limit": (_huge, "input.too-large"),
}


@pytest.mark.parametrize("kind", ["trusted-keys", "artifact", "model", "signing-key"])
@pytest.mark.parametrize("case", list(NOT_FILES), ids=list(NOT_FILES))
def test_only_bounded_regular_files_are_read(tmp_path: Path, case: str, kind: str) -> None:
    make, error_id = NOT_FILES[case]
    with pytest.raises(VerifyError) as caught:
        read_regular_file(make(tmp_path), kind)
    assert caught.value.error_id == error_id


@pytest.mark.parametrize(
    ("command", "error_id"),
    [(["artifact", "{fifo}", "--lane", "scalar-wasm32"], "input.not-regular-file"),
     (["bundle", "{bundle}", "--trusted-keys", "{fifo}", "--json"], "input.not-regular-file")],
    ids=["artifact", "trusted-keys"],
)  # fmt: skip
def test_fifo_never_blocks_the_cli(tmp_path: Path, command: list[str], error_id: str) -> None:
    fifo = _fifo(tmp_path)
    argv = [a.format(fifo=fifo, bundle=tmp_path) for a in command]
    done = subprocess.run([sys.executable, "-m", "verify.cli", *argv], cwd=REPO,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 3 and f"[{error_id}]" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "name",
    ["../../x", "../x", "a/b", "/abs", ".hidden", "..", "", "a\0b", "x" * 65],
    ids=["up-two", "up-one", "subfolder", "absolute", "dot-start", "dotdot", "empty", "nul",
         "too-long"],
)  # fmt: skip
def test_keygen_name_cannot_leave_out(tmp_path: Path, name: str) -> None:
    out = tmp_path / "a" / "b" / "keys"
    with pytest.raises(SigningKeyError):
        generate_key_files(out, name, "release")
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


@pytest.mark.parametrize("name", ["release", "release-2026.1", "K_1"])
def test_keygen_plain_names_work(tmp_path: Path, name: str) -> None:
    files = generate_key_files(tmp_path, name, "release")
    assert files.private_pem == tmp_path / f"{name}.key.pem"


def _garbage_key(h: Harness) -> Path:
    path = h.tmp / "bad.pem"
    path.write_bytes(b"not a key")
    return path


def _fifo_key(h: Harness) -> Path:
    return _fifo(h.tmp)


BAD_KEYS: dict[str, Callable[[Harness], Path]] = {
    "missing": lambda h: h.tmp / "missing.pem",
    "garbage": _garbage_key,
    "fifo": _fifo_key,
}


@pytest.mark.parametrize("case", list(BAD_KEYS), ids=list(BAD_KEYS))
def test_bad_key_stops_release_at_step_1(harness: Harness, case: str) -> None:
    with pytest.raises(SigningKeyError):
        harness.release(key_path=BAD_KEYS[case](harness))
    assert harness.log == [f"[1/{len(STEP_TITLES)}] toolchain check ..."]
    assert not (harness.tmp / "dist").exists()
