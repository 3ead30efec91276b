"""The one error root of `verify`; the CLI catches it once and prints `diagnostics()`."""

from __future__ import annotations

from typing import ClassVar

# Exit codes of `tinyrustlm-verify` (documented in README.md).
EXIT_OK = 0
EXIT_FINDINGS = 1  # the input was read and at least one check failed
EXIT_USAGE = 2  # argparse's own code for bad arguments
EXIT_ERROR = 3  # the input could not be read or parsed at all


class VerifyError(Exception):
    """An input that cannot be inspected. `offset` is the byte offset where parsing stopped."""

    exit_code = EXIT_ERROR
    # Stable: scripts match on it. The roots (VerifyError, VerificationFailed) keep this
    # placeholder and cannot be raised: every error that can be printed has its own id.
    error_id: ClassVar[str] = "verify.error"
    # What a person can do about it; every class with its own error_id says (tests/test_errors).
    default_hint: ClassVar[str] = ""

    def __init__(
        self, message: str, *, where: str = "", offset: int | None = None, hint: str = ""
    ) -> None:
        if type(self).error_id == VerifyError.error_id:  # found before release: tests/test_errors
            raise TypeError(f"{type(self).__qualname__} has no error id of its own")
        super().__init__(message)
        self.message = message
        self.where = where
        self.offset = offset
        self.hint = hint or self.default_hint

    def diagnostics(self) -> str:
        place = self.where
        if self.offset is not None:
            place = f"{place} at byte offset {self.offset} (0x{self.offset:x})".strip()
        lines = [f"error[{self.error_id}]: {self.message}"]
        if place:
            lines.append(f"  where: {place}")
        if self.hint:
            lines.append(f"  hint: {self.hint}")
        return "\n".join(lines)


class VerificationFailed(VerifyError):
    """Verification ran to completion and rejected the input (a failed check, a bad signature)."""

    exit_code = EXIT_FINDINGS


class IoFailed(VerifyError):
    """The operating system refused a file operation no check anticipated (a file vanished, a
    file where a folder must be, no permission): the CLIs' last resort, still with an id."""

    error_id = "io.error"
    default_hint = "check the path named in `where`: it must exist, be of the right kind "
    default_hint += "(file or folder) and be readable or writable by this user"

    @classmethod
    def of(cls, exc: OSError) -> IoFailed:
        where = str(exc.filename) if exc.filename is not None else ""
        return cls(exc.strerror or str(exc) or type(exc).__name__, where=where)
