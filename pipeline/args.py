"""Argument types shared by the commands (argparse refuses bad values with exit 2)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path


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
