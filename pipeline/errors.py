"""The one error root of `pipeline`; the CLI catches it once and prints `diagnostics()`.

Every error has a stable id (printed `error[<id>]:`, what scripts match on) and a hint. A class
raised for one reason names its id in `error_id` with its `default_hint`; a class raised for
several has a `table` of id -> hint and each raise names its row (`error_id=`). The roots
(`PipelineError`, `CheckFailed`, `TabledError`) have neither, so they cannot be raised: an
error without an id cannot be made, and tests/test_errors.py finds every raise in `pipeline`
and every id, and keeps README's table equal to them.
"""

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
    # The id of a class raised for one reason, and its hint when none is given.
    error_id = ""
    default_hint: ClassVar[str] = ""
    # The ids of a class raised for several reasons: id -> hint; each raise names one.
    table: ClassVar[Mapping[str, str]] = {}

    def __init__(
        self, message: str, *, error_id: str = "", where: str = "", hint: str = ""
    ) -> None:
        super().__init__(message)
        ids = type(self).ids()
        chosen = error_id or type(self).error_id
        if chosen not in ids:  # a programming error, found before release by tests/test_errors
            raise TypeError(f"{type(self).__qualname__} has no error id {chosen!r}: {sorted(ids)}")
        self.error_id = chosen
        self.message = message
        self.where = where
        self.hint = hint or ids[chosen]

    @classmethod
    def ids(cls) -> dict[str, str]:
        """Every id this class can print, with its hint."""
        own = {cls.error_id: cls.default_hint} if cls.error_id else {}
        return {**own, **cls.table}

    def diagnostics(self) -> str:
        lines = [f"error[{self.error_id}]: {self.message}"]
        if self.where:
            lines.append(f"  where: {self.where}")
        lines.append(f"  hint: {self.hint}")
        return "\n".join(lines)


class CheckFailed(PipelineError):
    """A check ran to completion and the answer is no (drift, mismatch, failed self-test)."""

    exit_code = EXIT_CHECK_FAILED


class TabledError(PipelineError):
    """A class raised for several reasons: its `table` holds id -> hint, and every raise
    names its id (a required argument here, so the type checker sees a missing one)."""

    def __init__(self, message: str, *, error_id: str, where: str = "", hint: str = "") -> None:
        super().__init__(message, error_id=error_id, where=where, hint=hint)
