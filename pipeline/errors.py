"""The one error root of `pipeline`; the CLI catches it once and prints `diagnostics()`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

# Exit codes shared by every `tinyrustlm-release` command (documented in README.md).
EXIT_OK = 0
EXIT_CHECK_FAILED = 1  # the command ran and found a problem: drift, mismatch, failed test
EXIT_USAGE = 2  # argparse's own code for bad arguments
EXIT_ERROR = 3  # bad input or environment: malformed file, missing tool, failed build


class PipelineError(Exception):
    """A failure a person can act on. `where` names the file/field/lane; `hint` says what to do."""

    exit_code = EXIT_ERROR
    # The hint when none is given; every class with its own error id has one (tests/test_errors).
    default_hint: ClassVar[str] = ""

    def __init__(self, message: str, *, where: str = "", hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.where = where
        self.hint = hint or self.default_hint

    def diagnostics(self) -> str:
        lines = [f"error: {self.message}"]
        if self.where:
            lines.append(f"  where: {self.where}")
        if self.hint:
            lines.append(f"  hint: {self.hint}")
        return "\n".join(lines)


class CheckFailed(PipelineError):
    """A check ran to completion and the answer is no (drift, mismatch, failed self-test)."""

    exit_code = EXIT_CHECK_FAILED


class TabledError(PipelineError):
    """An error whose stable id is a row of its module's table of id -> hint (`table`); the
    hint is that row's unless one is given. Printed as `error[<id>]:`."""

    table: ClassVar[Mapping[str, str]] = {}

    def __init__(self, message: str, *, error_id: str, where: str = "", hint: str = "") -> None:
        super().__init__(message, where=where, hint=hint or self.table[error_id])
        self.error_id = error_id

    def diagnostics(self) -> str:
        return super().diagnostics().replace("error:", f"error[{self.error_id}]:", 1)
