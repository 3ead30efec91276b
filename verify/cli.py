# PYTHON_ARGCOMPLETE_OK  (argcomplete's global completion looks for this line: README)
"""`tinyrustlm-verify`: inspect artifacts and bundles without trusting the builder.

Each command is a module with `add_arguments(parser)` and `run(args)`; the shared shell
(`verify.shell`) parses, runs and prints: the one error root (`VerifyError`) is caught there,
once, and printed as its `diagnostics()` (and with --json as an error object).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from verify import artifact_cli
from verify.bundle import cli as bundle_cli
from verify.bundle import page_cli
from verify.errors import VerifyError
from verify.shell.commands import CommandModule, Shell
from verify.version import DISTRIBUTIONS

# name -> (module with add_arguments/run, one-line help)
COMMANDS: dict[str, tuple[CommandModule, str]] = {
    "artifact": (artifact_cli, "inspect one final binary against its lane's policy"),
    "bundle": (bundle_cli, "verify a signed release bundle (directory or tarball)"),
    "report": (page_cli, "verify a bundle, then write its report page (HTML) with your verdict"),
}

SHELL = Shell(
    prog="tinyrustlm-verify",
    description="Independent verification of tinyrustlm release bytes.",
    commands=COMMANDS,
    package_dir=Path(__file__).parent,
    distributions=DISTRIBUTIONS,
    errors=(VerifyError,),
)
parser = SHELL.parser


def main(argv: Sequence[str] | None = None) -> int:
    return SHELL.main(argv)


if __name__ == "__main__":
    raise SystemExit(main())
