"""`tinyrustlm-verify`: inspect artifacts and bundles without trusting the builder.

Each command is a module with `add_arguments(parser)` and `run(args) -> int`; the one error
root (`VerifyError`) is caught here, once, and printed as its `diagnostics()`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from verify import artifact_cli
from verify.bundle import cli as bundle_cli
from verify.errors import EXIT_ERROR, IoFailed, VerifyError
from verify.version import DISTRIBUTIONS, add_version_argument

# name -> (module with add_arguments/run, one-line help)
COMMANDS: dict[str, tuple[ModuleType, str]] = {
    "artifact": (artifact_cli, "inspect one final binary against its lane's policy"),
    "bundle": (bundle_cli, "verify a signed release bundle (directory or tarball)"),
}


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="tinyrustlm-verify",
        description="Independent verification of tinyrustlm release bytes.",
    )
    add_version_argument(top, Path(__file__).parent, DISTRIBUTIONS)
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        sub = commands.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        code: int = args.run(args)
    except VerifyError as exc:
        print(exc.diagnostics(), file=sys.stderr)
        return exc.exit_code
    except OSError as exc:  # a file vanished or is unreadable: still one clear line, exit 3
        print(IoFailed.of(exc).diagnostics(), file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("tinyrustlm-verify: interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":
    raise SystemExit(main())
