"""Operator input to the native CLI (issue 15, item 8): a huge or non-regular model file, a
context of 0 or beyond the model, a billion tokens, and a closed stdout each give a typed
error id and an exit code — never SIGABRT, a panic, or a blocked read. Integration: builds
the CLI with the pinned toolchain."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline.modelpack import PRESETS, pack

pytestmark = pytest.mark.integration
EXIT_USAGE, EXIT_INPUT_ERROR = 2, 3


def _tiny(folder: Path) -> Path:
    path = folder / "tiny.trlm"
    path.write_bytes(pack(PRESETS["tiny"], 7))
    return path


def _sparse_2tib(folder: Path) -> Path:
    path = folder / "huge.trlm"
    with path.open("wb") as f:
        f.truncate(2 << 40)  # sparse: no disk used, but a 2 TiB read would be attempted
    return path


def _fifo(folder: Path) -> Path:
    path = folder / "model.fifo"
    os.mkfifo(path)
    return path


def _run(model: Callable[[Path], Path], *flags: str) -> Callable[[Path], list[str]]:
    return lambda folder: ["run", "--model", str(model(folder)), "--prompt", "hi", *flags]


def _inspect(model: Callable[[Path], Path]) -> Callable[[Path], list[str]]:
    return lambda folder: ["inspect-model", str(model(folder))]


# (case, argv made in a temporary folder, exit code, error id printed on stderr)
CASES = [
    ("context-zero", _run(_tiny, "--context", "0"), EXIT_USAGE, "usage.context"),
    ("context-beyond-model", _run(_tiny, "--context", "99999"), EXIT_USAGE, "usage.context"),
    ("max-tokens-1e9", _run(_tiny, "--max-tokens", "1000000000"), EXIT_USAGE,
     "usage.max-tokens"),
    ("huge-model-inspect", _inspect(_sparse_2tib), EXIT_INPUT_ERROR, "input.too-large"),
    ("huge-model-run", _run(_sparse_2tib), EXIT_INPUT_ERROR, "input.too-large"),
    ("fifo-model", _inspect(_fifo), EXIT_INPUT_ERROR, "input.not-regular"),
    ("dev-zero-model", _inspect(lambda _: Path("/dev/zero")), EXIT_INPUT_ERROR,
     "input.not-regular"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "code", "error_id"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_operator_input_is_a_typed_error(
    cli: Path, tmp_path: Path, argv: Callable[[Path], list[str]], code: int, error_id: str
) -> None:
    done = subprocess.run([str(cli), *argv(tmp_path)], capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    assert (done.returncode, f"error[{error_id}]" in done.stderr) == (code, True), done.stderr
    assert "panicked" not in done.stderr


@pytest.mark.parametrize(
    "argv",
    [["inspect-model"], ["run", "--prompt", "hi", "--model"], ["self-test"]],
    ids=["inspect-model", "run", "self-test"],
)
def test_closed_stdout_is_a_typed_error(cli: Path, tmp_path: Path, argv: list[str]) -> None:
    model = [] if argv == ["self-test"] else [str(_tiny(tmp_path))]
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line: every write fails (EPIPE)
    try:
        done = subprocess.run([str(cli), *argv, *model], stdout=write_end, stderr=subprocess.PIPE,
                              text=True, timeout=60, check=False)  # fmt: skip
    finally:
        os.close(write_end)
    assert done.returncode == EXIT_INPUT_ERROR, done.stderr
    assert "error[output.closed]" in done.stderr and "panicked" not in done.stderr
