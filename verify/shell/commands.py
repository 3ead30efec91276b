"""The shell of both CLIs: a parser built from a table of commands, and one run of one command
with its errors caught once, its exit code, its --json object, colour and completion.

A command is a module with `add_arguments(parser)` and `run(args)`, which returns an exit code
or an `Outcome` (its --json result). Every leaf command gets the output flags
(`arguments.OUTPUT_FLAGS`); the shell, not the command, decides where its prints go.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn, Protocol, cast

from verify.errors import IoFailed
from verify.shell.arguments import add_output_arguments
from verify.shell.errors import CommandLineRefused
from verify.shell.result import Outcome, TypedError, as_outcome, error_json, result_json
from verify.shell.terminal import command_streams, print_diagnostics
from verify.version import add_version_argument

EXIT_INTERRUPTED = 130


class CommandModule(Protocol):
    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int | Outcome: ...


class ShellParser(argparse.ArgumentParser):
    """argparse's parser, except that a refusal is raised (CommandLineRefused) for the shell to
    print (as argparse does, and with --json as JSON) instead of exiting on the spot."""

    def error(self, message: str) -> NoReturn:
        raise CommandLineRefused(message, where=self.prog, usage=self.format_usage())


def leaf_parsers(
    parser: argparse.ArgumentParser, path: str
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """(command path, parser) of every runnable command under `parser` ("repo init", ...).
    argparse has no public way to list sub-parsers: `_actions` is the one place they are."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
    for action in subs:
        for name, sub in action.choices.items():
            yield from leaf_parsers(sub, f"{path} {name}")


def offer_completion(parser: argparse.ArgumentParser) -> None:
    """Answer the shell's tab completion (argcomplete, when installed and asked: README)."""
    if "_ARGCOMPLETE" not in os.environ:
        return
    try:
        import argcomplete
    except ImportError:  # pragma: no cover - the slim verifier without argcomplete
        return
    argcomplete.autocomplete(parser, exit_method=sys.exit)


@dataclass(frozen=True)
class Shell:
    """One CLI: its name, its commands, and the typed errors its commands raise."""

    prog: str
    description: str
    commands: Mapping[str, tuple[CommandModule, str]]  # name -> (module, one-line help)
    package_dir: Path  # for --version
    distributions: tuple[str, ...]  # for --version
    errors: tuple[type[Exception], ...]  # each has TypedError's attributes

    def parser(self) -> argparse.ArgumentParser:
        top = ShellParser(prog=self.prog, description=self.description)
        add_version_argument(top, self.package_dir, self.distributions)
        commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
        for name, (module, help_text) in self.commands.items():
            sub = commands.add_parser(name, help=help_text, description=help_text)
            module.add_arguments(sub)
            sub.set_defaults(run=module.run)
            for path, leaf in leaf_parsers(sub, name):
                add_output_arguments(leaf)
                leaf.set_defaults(shell_command=path)
        return top

    def main(self, argv: Sequence[str] | None = None) -> int:
        parser = self.parser()
        offer_completion(parser)
        words = list(sys.argv[1:] if argv is None else argv)
        try:
            args = parser.parse_args(words)
        except CommandLineRefused as exc:  # as argparse does it: its text, SystemExit(2)
            sys.stderr.write(exc.argparse_text())
            if "--json" in words:
                print(error_json(None, exc))
            raise SystemExit(exc.exit_code) from None
        return self.run(args)

    def run(self, args: argparse.Namespace) -> int:
        command: str = args.shell_command
        started = time.monotonic()
        try:
            with command_streams(json=args.json, quiet=args.quiet):
                outcome = as_outcome(args.run(args))
        except self.errors as exc:
            code = self._refused(args, command, cast(TypedError, exc), exc)
        except OSError as exc:  # a file vanished or is unreadable: still one clear line, exit 3
            code = self._refused(args, command, IoFailed.of(exc), exc)
        except KeyboardInterrupt:
            print(f"{self.prog}: interrupted", file=sys.stderr)
            code = EXIT_INTERRUPTED
        else:
            if args.json:
                print(result_json(command, outcome))
            code = outcome.code
        if args.verbose:
            seconds = time.monotonic() - started
            print(f"{self.prog} {command}: exit {code} in {seconds:.1f}s", file=sys.stderr)
        return code

    def _refused(
        self, args: argparse.Namespace, command: str, error: TypedError, raised: BaseException
    ) -> int:
        print_diagnostics(error.diagnostics())
        if args.verbose:
            traceback.print_exception(raised, file=sys.stderr)
        if args.json:
            print(error_json(command, error))
        return error.exit_code
