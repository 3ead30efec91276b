"""A progress bar for long steps (builds, downloads, the conformance matrix): on a terminal
only, on stderr, never with --json or --quiet, and never where output is captured (a test, a
log, a pipe). Without rich it is absent; the step's own lines are printed as before."""

from __future__ import annotations

import argparse
import itertools
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from verify.shell.terminal import HAVE_RICH, is_terminal

try:  # optional, as in terminal.py (HAVE_RICH says whether it is there)
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )
except ImportError:  # pragma: no cover - the slim verifier without rich
    pass

# done, total (None: unknown), what is happening now
Bar = Callable[[int, int | None, str], None]
Say = Callable[[str], None]


def no_bar(done: int, total: int | None, what: str) -> None:
    """The bar when none is shown."""


def bar_wanted(args: argparse.Namespace) -> bool:
    if getattr(args, "json", False) or getattr(args, "quiet", False):
        return False
    return HAVE_RICH and os.environ.get("TERM") != "dumb" and is_terminal(sys.stderr)


@contextmanager
def progress_bar(args: argparse.Namespace, label: str) -> Iterator[Bar]:
    """A bar titled `label` while the block runs (no_bar when bar_wanted says no)."""
    if not bar_wanted(args):
        yield no_bar
        return
    progress = Progress(
        SpinnerColumn(),
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=Console(file=sys.stderr),
        transient=True,
        redirect_stdout=is_terminal(sys.stdout),  # a piped stdout keeps its lines
        redirect_stderr=True,
    )
    task = progress.add_task("", total=None)

    def update(done: int, total: int | None, what: str) -> None:
        progress.update(task, completed=done, total=total, description=what)

    with progress:
        yield update


# "[3/7] title ..." at the start of a line: the numbered steps of build and release
STEP_LINE = re.compile(r"^\[\s*(\d+)/(\d+)\]\s*(.*)$")


def step_lines(say: Say, bar: Bar) -> Say:
    """`say`, and each numbered step line moves the bar to that step."""

    def both(line: str) -> None:
        say(line)
        if found := STEP_LINE.match(line):
            bar(int(found[1]) - 1, int(found[2]), found[3])

    return both


def counted_lines(say: Say, bar: Bar) -> Say:
    """`say`, and each line is one more unit of work of an unknown total."""
    count = itertools.count()

    def both(line: str) -> None:
        say(line)
        bar(next(count), None, line.strip())

    return both
