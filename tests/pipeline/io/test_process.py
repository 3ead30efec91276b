"""pipeline/io/process.py: the one runner of programs; what it hands back and what it raises."""

from __future__ import annotations

import ast
import shlex
import sys
from pathlib import Path

import pytest

from pipeline.io import process
from pipeline.io.process import (
    CommandFailed,
    CommandTimedOut,
    CommandUnstartable,
    GitFailed,
    GitUnavailable,
)

PY = sys.executable


def _py(code: str) -> list[str]:
    return [PY, "-c", code]


# (argv, run's keywords, what the Finished holds: returncode, stdout, stderr)
FINISHED = [
    pytest.param(
        _py("import sys; print('out'); print('err', file=sys.stderr)"),
        {},
        (0, "out\n", "err\n"),
        id="text-by-default",
    ),
    pytest.param(
        _py("import sys; sys.stdout.buffer.write(bytes([255, 0]))"),
        {"text": False},
        (0, b"\xff\x00", b""),
        id="bytes-when-asked",
    ),
    pytest.param(
        _py("import sys; print('no'); sys.exit(5)"),
        {},
        (5, "no\n", ""),
        id="a-failure-without-check-is-returned",
    ),
    pytest.param(
        _py("import os; print(os.getcwd())"),
        {"cwd": "/"},
        (0, "/\n", ""),
        id="cwd",
    ),
    pytest.param(
        _py("import os; print(sorted(k for k in os.environ if k.startswith('TRX_')))"),
        {"env": {"TRX_ONLY": "1"}},
        (0, "['TRX_ONLY']\n", ""),
        id="env-replaces-the-environment",
    ),
    pytest.param(
        _py("import os; print(oct(os.umask(0)))"),
        {"umask": 0o027},
        (0, "0o27\n", ""),
        id="umask",
    ),
    pytest.param(
        _py("print('shown')"),
        {"capture": False},
        (0, "", ""),
        id="not-captured-is-empty",
    ),
]


@pytest.mark.parametrize(("argv", "kwargs", "expected"), FINISHED)
def test_finished(argv: list[str], kwargs: dict[str, object], expected: tuple[object, ...]) -> None:
    done = process.run(argv, **kwargs)  # type: ignore[call-overload]
    assert (done.returncode, done.stdout, done.stderr) == expected
    assert done.argv == tuple(argv)
    assert done.ok is (expected[0] == 0)


def test_echo_sees_the_command_before_it_runs(tmp_path: Path) -> None:
    said: list[str] = []
    marker = tmp_path / "ran"

    def echo(line: str) -> None:
        said.append(line)
        assert not marker.exists()  # called first

    argv = [*_py("import pathlib, sys; pathlib.Path(sys.argv[1]).touch()"), str(marker)]
    process.run(argv, echo=echo)
    assert said == ["$ " + shlex.join(argv)]  # as toolchain install prints each apt command
    assert marker.exists()


def test_check_names_the_command_its_exit_and_the_stderr_tail() -> None:
    code = "import sys; [print(f'line {i}', file=sys.stderr) for i in range(30)]; sys.exit(7)"
    with pytest.raises(CommandFailed) as caught:
        process.run(_py(code), check=True)
    err = caught.value
    assert (err.returncode, err.error_id, err.argv) == (7, "process.failed", (PY, "-c", code))
    assert f"{PY} failed (exit 7)" in err.message
    assert "line 29" in err.message and "line 9\n" not in err.message  # the last 20 lines
    assert err.where.startswith(PY) and "-c" in err.where


def test_check_passes_a_success_through() -> None:
    assert process.run(_py("print(1)"), check=True).stdout == "1\n"


@pytest.mark.parametrize(
    ("program", "missing"),
    [pytest.param("no-such-program", True, id="missing"), pytest.param(".", False, id="a-folder")],
)
def test_a_program_that_cannot_start(tmp_path: Path, program: str, missing: bool) -> None:
    target = tmp_path / program
    with pytest.raises(CommandUnstartable) as caught:
        process.run([str(target)])
    assert caught.value.missing is missing
    assert caught.value.argv == (str(target),)
    if missing:
        assert caught.value.strerror == "No such file or directory"
        assert caught.value.caught == f"[Errno 2] No such file or directory: '{target}'"
    assert caught.value.message.startswith(f"cannot run {target}: ")


def test_a_timeout_is_typed_and_keeps_what_was_caught() -> None:
    with pytest.raises(CommandTimedOut) as caught:
        process.run(_py("import time; time.sleep(30)"), timeout=0.2)
    assert caught.value.timeout == 0.2
    assert caught.value.caught.endswith("timed out after 0.2 seconds")  # TimeoutExpired's words
    assert "no answer within 0.2s" in caught.value.message


def test_git_returns_stdout_and_refuses_with_git_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = Path(__file__).resolve().parents[3]
    assert len(process.git(repo, "rev-parse", "HEAD").strip()) == 40
    with pytest.raises(GitFailed) as failed:
        process.git(tmp_path, "rev-parse", "HEAD")
    assert failed.value.message.startswith("git rev-parse HEAD failed: ")
    assert "not a git repository" in failed.value.stderr
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(GitUnavailable):
        process.git(repo, "rev-parse", "HEAD")


# Modules of pipeline/ that may import subprocess, and why (everything else calls process.run).
SUBPROCESS_ALLOWED = {
    "pipeline/io/process.py": "the runner itself",
    "pipeline/conformance/harness.py": "a long-lived server in its own process group (Popen)",
    "pipeline/bench/wasm_parser.py": "streams `wasm-tools print` of a 12 MB module (Popen)",
}


def _imports_subprocess(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "subprocess" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module == "subprocess":
            return True
    return False


def test_only_the_runner_and_two_popen_users_import_subprocess() -> None:
    repo = Path(__file__).resolve().parents[3]
    found = {
        p.relative_to(repo).as_posix()
        for p in sorted((repo / "pipeline").rglob("*.py"))
        if _imports_subprocess(p)
    }
    assert found == set(SUBPROCESS_ALLOWED)
