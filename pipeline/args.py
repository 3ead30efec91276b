"""Argument types shared by the commands (argparse refuses bad values with exit 2)."""

from __future__ import annotations

import argparse
from collections.abc import Callable


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
