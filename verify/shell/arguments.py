"""Arguments the commands share: the output flags every command takes, the trust flags of
every command that verifies a bundle, and value types (argparse refuses bad values, exit 2)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

# Every command of both CLIs takes these (tests/verify/test_cli_shell.py walks the parsers).
OUTPUT_FLAGS = ("--json", "--quiet", "--verbose")


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """`--json`, `-q/--quiet`, `-v/--verbose` (README, "Command-line output")."""
    group = parser.add_argument_group("output")
    group.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object on stdout: the result, or the error with its id",
    )
    loudness = group.add_mutually_exclusive_group()
    loudness.add_argument(
        "-q", "--quiet", action="store_true", help="print nothing but errors (and --json's object)"
    )
    loudness.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also print an error's causes and traceback, and the command's exit code and time",
    )


def at_least_one(why: str) -> Callable[[str], int]:
    """A whole number >= 1; `why` ends the message for 0 or less ("at least one key must sign")."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"{value}: {why}")
        return value

    return parse


def add_trust_arguments(
    parser: argparse.ArgumentParser, what: str, *, required: bool = True
) -> None:
    """`--trusted-keys FILE` and `--allow-dev-key`, as every command that verifies a bundle
    takes them; `what` says what the keys check here (the end of the help text)."""
    parser.add_argument(
        "--trusted-keys",
        type=Path,
        required=required,
        default=None,
        metavar="FILE",
        help=f"trusted-keys JSON (v1 or v2): {what}",
    )
    parser.add_argument(
        "--allow-dev-key",
        action="store_true",
        help="accept a bundle signed by a development-role key (refused by default)",
    )
