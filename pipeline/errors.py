"""The one error root of `pipeline`; the CLI catches it once and prints `diagnostics()`."""

from __future__ import annotations

# Exit codes shared by every `tinyrustlm-release` command (documented in README.md).
EXIT_OK = 0
EXIT_CHECK_FAILED = 1  # the command ran and found a problem: drift, mismatch, failed test
EXIT_USAGE = 2  # argparse's own code for bad arguments
EXIT_ERROR = 3  # bad input or environment: malformed file, missing tool, failed build


class PipelineError(Exception):
    """A failure a person can act on. `where` names the file/field/lane; `hint` says what to do."""

    exit_code = EXIT_ERROR

    def __init__(self, message: str, *, where: str = "", hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.where = where
        self.hint = hint

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
