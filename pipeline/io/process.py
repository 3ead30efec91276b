"""Running a program to its end: the one place `pipeline` calls `subprocess.run`.

`run(argv, ...)` is `subprocess.run` with this project's choices spelled once: no shell, the
output captured (text, or bytes with `text=False`; `capture=False` leaves it on the terminal),
and every way a run can go wrong as a typed error that names the command:

- the program cannot start (not installed, not executable): `CommandUnstartable`;
- it gives no answer within `timeout` seconds: `CommandTimedOut` (the child is killed);
- with `check=True`, it exits other than 0: `CommandFailed`, with the exit code and the last
  lines of its stderr. Without `check` the caller reads `Finished.returncode` and raises its
  own error, with its own id.

`CommandUnstartable` and `CommandTimedOut` keep what the caught exception said (`caught`,
`strerror`), so a caller that records it (a conformance row's engine version) writes what it
always wrote.
`echo` is the caller's `say`: it is handed `$ argv` before the program starts.

`git(repo, *args)` is `git -C repo ARGS` and its stdout; a failure is `git.failed`, a
missing git `git.unavailable`.

Standard library and `pipeline.errors` only: the native smoke executor
(pipeline/lanebuild/native_smoke.py) runs it on runners where nothing is installed.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import AnyStr, Generic, Literal, overload

from pipeline.errors import PipelineError

STDERR_TAIL_LINES = 20


class CommandUnstartable(PipelineError):
    """The program could not be started: missing, not executable, a bad working folder."""

    error_id = "process.unstartable"
    default_hint = (
        "install the program named (the pinned tools: `tinyrustlm-release toolchain install` "
        "and the locked requirements) or fix its path"
    )
    argv: tuple[str, ...] = ()
    missing = False  # the program (or its interpreter) does not exist
    strerror: str | None = None  # the OSError's reason ("No such file or directory")
    caught = ""  # str() of the OSError, as callers recorded it before this module

    @classmethod
    def of(cls, argv: Sequence[str], exc: OSError) -> CommandUnstartable:
        err = cls(f"cannot run {argv[0]}: {exc.strerror or exc}", where=shlex.join(argv))
        err.argv = tuple(argv)
        err.missing = isinstance(exc, FileNotFoundError)
        err.strerror = exc.strerror
        err.caught = str(exc)
        return err


class CommandTimedOut(PipelineError):
    """The program gave no answer in time; it was killed."""

    error_id = "process.timeout"
    default_hint = "run the command named by hand to see where it hangs"
    argv: tuple[str, ...] = ()
    timeout = 0.0
    caught = ""  # str() of subprocess.TimeoutExpired, as callers recorded it

    @classmethod
    def of(cls, argv: Sequence[str], exc: subprocess.TimeoutExpired) -> CommandTimedOut:
        err = cls(f"{argv[0]}: no answer within {exc.timeout:g}s", where=shlex.join(argv))
        err.argv = tuple(argv)
        err.timeout = exc.timeout
        err.caught = str(exc)
        return err


class CommandFailed(PipelineError):
    """The program ran and exited other than 0 (`run(..., check=True)`)."""

    error_id = "process.failed"
    default_hint = "run the command named by hand; its last lines of stderr are above"
    argv: tuple[str, ...] = ()
    returncode = 0
    stderr = ""

    @classmethod
    def of(cls, argv: Sequence[str], returncode: int, stderr: str) -> CommandFailed:
        tail = "\n".join("    " + ln for ln in stderr.strip().splitlines()[-STDERR_TAIL_LINES:])
        err = cls(
            f"{argv[0]} failed (exit {returncode})" + (f"\n  last lines:\n{tail}" if tail else ""),
            where=shlex.join(argv),
        )
        err.argv = tuple(argv)
        err.returncode = returncode
        err.stderr = stderr
        return err


class GitUnavailable(PipelineError):
    """git itself cannot be run."""

    error_id = "git.unavailable"
    default_hint = "install git and run inside a clone of the repository"


class GitFailed(PipelineError):
    """A git command exited other than 0 (not a repository, an unknown revision, ...)."""

    error_id = "git.failed"
    default_hint = "run inside a clone of the repository, with its history (not a shallow export)"
    stderr = ""


@dataclass(frozen=True)
class Finished(Generic[AnyStr]):
    """A program that ran to its end: its exit code and what it printed ('' when not captured)."""

    argv: tuple[str, ...]
    returncode: int
    stdout: AnyStr
    stderr: AnyStr

    @property
    def ok(self) -> bool:
        return self.returncode == 0


@overload
def run(
    argv: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    check: bool = False,
    text: Literal[True] = True,
    capture: bool = True,
    umask: int = -1,
    echo: Callable[[str], None] | None = None,
) -> Finished[str]: ...


@overload
def run(
    argv: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    check: bool = False,
    text: Literal[False],
    capture: bool = True,
    umask: int = -1,
    echo: Callable[[str], None] | None = None,
) -> Finished[bytes]: ...


def run(
    argv: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    check: bool = False,
    text: bool = True,
    capture: bool = True,
    umask: int = -1,
    echo: Callable[[str], None] | None = None,
) -> Finished[str] | Finished[bytes]:
    """Run `argv` to its end (see the module's docstring); `env` None: this process's."""
    argv = [str(a) for a in argv]
    if echo is not None:
        echo("$ " + shlex.join(argv))
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            env=env,
            timeout=timeout,
            text=text,
            capture_output=capture,
            umask=umask,
            check=False,
        )
    except OSError as exc:
        raise CommandUnstartable.of(argv, exc) from exc
    except subprocess.TimeoutExpired as exc:
        raise CommandTimedOut.of(argv, exc) from None
    if check and done.returncode != 0:
        stderr = done.stderr or ""
        shown = stderr if isinstance(stderr, str) else stderr.decode(errors="replace")
        raise CommandFailed.of(argv, done.returncode, shown)
    if text:
        return Finished(tuple(argv), done.returncode, done.stdout or "", done.stderr or "")
    return Finished(tuple(argv), done.returncode, done.stdout or b"", done.stderr or b"")


def git(repo: Path, *args: str) -> str:
    """The stdout of `git -C repo ARGS`."""
    try:
        done = run(["git", "-C", str(repo), *args])
    except CommandUnstartable as exc:
        raise GitUnavailable(f"cannot run git: {exc.strerror}", where=str(repo)) from exc
    if not done.ok:
        failed = GitFailed(f"git {' '.join(args)} failed: {done.stderr.strip()}", where=str(repo))
        failed.stderr = done.stderr
        raise failed
    return done.stdout
