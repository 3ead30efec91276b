"""`tinyrustlm-verify`: inspect artifacts and bundles without trusting the builder."""

from __future__ import annotations

from collections.abc import Sequence

from verify.cmdline import dispatch
from verify.errors import VerifyError

# name -> (module with add_arguments/run, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "artifact": ("verify.artifact_cli", "inspect one final binary against its lane's policy"),
    "bundle": ("verify.bundle.cli", "verify a signed release bundle (directory or tarball)"),
}


def main(argv: Sequence[str] | None = None) -> int:
    return dispatch(
        "tinyrustlm-verify",
        "Independent verification of tinyrustlm release bytes.",
        COMMANDS,
        argv,
        VerifyError,
    )


if __name__ == "__main__":
    raise SystemExit(main())
