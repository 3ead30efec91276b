"""The shell's own error: a command line argparse refused, with an id for --json."""

from __future__ import annotations

from verify.errors import EXIT_USAGE, VerifyError


class CommandLineRefused(VerifyError):
    """An unknown command or option, a missing or malformed argument (argparse's refusal).
    Printed as argparse prints it (usage, then `PROG: error: MESSAGE`), exit 2; with --json,
    also as an error object."""

    exit_code = EXIT_USAGE
    error_id = "cli.usage"
    default_hint = "see the command's --help for its arguments"

    def __init__(self, message: str, *, where: str = "", usage: str = "") -> None:
        super().__init__(message, where=where)  # where: the (sub)command's prog
        self.usage = usage

    def argparse_text(self) -> str:
        """Exactly what argparse itself prints to stderr for this refusal."""
        return f"{self.usage}{self.where}: error: {self.message}\n"
