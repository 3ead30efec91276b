"""Colour on a terminal, plain everywhere else, and where a command's own prints go.

Colour needs rich (installed with the project; optional in the slim verifier), a terminal, no
`NO_COLOR` (https://no-color.org) and a `TERM` other than `dumb`. Anything else gets the
command's bytes unchanged: logs, pipes and captured test output stay as they always were.
"""

from __future__ import annotations

import io
import os
import re
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import TextIO

try:  # optional: the slim verifier may be installed without it
    from rich.console import Console
    from rich.text import Text

    HAVE_RICH = True
except ImportError:  # pragma: no cover - exercised by monkeypatching HAVE_RICH
    HAVE_RICH = False

# What stands out in a command's text on a terminal: pattern -> rich style (tables, summaries
# and diagnostics; the words are the statuses the commands print).
HIGHLIGHTS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.MULTILINE), style)
    for pattern, style in (
        (r"error\[[^\]]+\]", "bold red"),
        (r"\b(?:FAILED|FAIL|fail|failed|drift|drifted|mismatch|refused)\b", "bold red"),
        (r"\b(?:ok|pass|passed|verified|identical|published|up to date)\b", "green"),
        (r"\b(?:cached|skip|skipped|unsmoked|pending|PENDING|DEVELOPMENT)\b", "yellow"),
        (r"^\s+(?:where|hint):", "cyan"),
    )
)


def terminal_allows_colour() -> bool:
    return HAVE_RICH and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


def colour_wanted(stream: TextIO) -> bool:
    return terminal_allows_colour() and is_terminal(stream)


def styled(text: str) -> str:
    """`text` with ANSI colours on what HIGHLIGHTS names (call only if colour_wanted)."""
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        force_terminal=True,
        color_system="standard",
        soft_wrap=True,
        highlight=False,
        markup=False,
        emoji=False,
    )
    rich_text = Text(text)
    for pattern, style in HIGHLIGHTS:
        rich_text.highlight_regex(pattern, style)
    console.print(rich_text, end="")
    return buffer.getvalue()


def print_diagnostics(text: str, stream: TextIO | None = None) -> None:
    """An error's diagnostics on stderr, in colour on a terminal."""
    out = sys.stderr if stream is None else stream
    print(styled(text) if colour_wanted(out) else text, file=out)


class ColourStream(io.TextIOBase):
    """A terminal's stdout that colours what HIGHLIGHTS names in each write."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(styled(text))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.stream.fileno()


@contextmanager
def _descriptor_1_to(target: TextIO) -> Iterator[None]:
    """Also the process's file descriptor 1, so a tool the command runs cannot write to the
    stdout that --json keeps for its object (skipped when either stream has no descriptor,
    as under a test's capture)."""
    real = sys.__stdout__
    try:
        if real is None:
            raise ValueError("no stdout")
        out_fd, target_fd = real.fileno(), target.fileno()
    except (AttributeError, OSError, ValueError):
        yield
        return
    real.flush()
    saved = os.dup(out_fd)
    os.dup2(target_fd, out_fd)
    try:
        yield
    finally:
        real.flush()
        os.dup2(saved, out_fd)
        os.close(saved)


@contextmanager
def command_streams(*, json: bool, quiet: bool) -> Iterator[None]:
    """Where a command's own prints go while it runs. Default: unchanged (in colour on a
    terminal). --json: its stdout to nowhere, so stdout holds only the object the shell prints
    after (its stderr lines stay). --quiet: its stdout and stderr to nowhere (the shell still
    prints an error)."""
    with ExitStack() as stack:
        if json or quiet:
            sink = stack.enter_context(Path(os.devnull).open("w", encoding="utf-8"))
            stack.enter_context(_descriptor_1_to(sink))
            stack.enter_context(redirect_stdout(sink))
            if quiet:
                stack.enter_context(redirect_stderr(sink))
        elif colour_wanted(sys.stdout):
            stack.enter_context(redirect_stdout(ColourStream(sys.stdout)))
        yield
