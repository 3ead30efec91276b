"""Subcommand dispatch shared by both CLIs (pipeline may import verify, never the reverse).

Each command lives in its own module exposing `add_arguments(parser)` and `run(args) -> int`;
only the chosen module is imported, so `--help` and cheap commands stay fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Mapping, Sequence
from typing import Protocol


class Diagnosable(Protocol):
    exit_code: int

    def diagnostics(self) -> str: ...


def dispatch(
    prog: str,
    description: str,
    commands: Mapping[str, tuple[str, str]],
    argv: Sequence[str] | None,
    error_root: type[BaseException],
) -> int:
    """Run `prog COMMAND ...`; `commands` maps name -> (module, one-line help)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help") or args[0] not in commands:
        width = max(len(name) for name in commands)
        listing = "\n".join(f"  {n:<{width}}  {h}" for n, (_, h) in commands.items())
        out = sys.stdout if args and args[0] in ("-h", "--help") else sys.stderr
        print(f"usage: {prog} COMMAND [ARGS]\n\n{description}\n\ncommands:\n{listing}", file=out)
        if args and args[0] not in ("-h", "--help"):
            print(f"\n{prog}: unknown command {args[0]!r}", file=sys.stderr)
        return 0 if args and args[0] in ("-h", "--help") else 2
    name = args[0]
    module_name, help_text = commands[name]
    module = importlib.import_module(module_name)
    parser = argparse.ArgumentParser(prog=f"{prog} {name}", description=help_text)
    module.add_arguments(parser)
    parsed = parser.parse_args(args[1:])
    try:
        code: int = module.run(parsed)
    except error_root as exc:
        diag: Diagnosable = exc  # type: ignore[assignment]
        print(diag.diagnostics(), file=sys.stderr)
        return diag.exit_code
    except OSError as exc:  # a file vanished or is unreadable: still one clear line, exit 3
        where = f"\n  where: {exc.filename}" if exc.filename else ""
        print(f"error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    return code
