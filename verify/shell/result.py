"""What a command returns to the shell, and the `--json` object the shell prints for it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from verify.formats.cli_result import CliError, CliResult


@dataclass(frozen=True)
class Outcome:
    """A command's exit code and, for `--json`, either its `result` (inside the shell's
    `tinyrustlm.cli-result.v1` object) or a `document` of its own (printed as it is: the
    bundle verification, the artifact report, ...). A command may return a bare exit code:
    its `--json` result is then `{}`."""

    code: int
    result: Mapping[str, Any] = field(default_factory=dict)
    document: str | None = None


class TypedError(Protocol):
    """What the shell reads of an error (`VerifyError` and `PipelineError` both have it)."""

    @property
    def error_id(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def where(self) -> str: ...
    @property
    def hint(self) -> str: ...
    @property
    def exit_code(self) -> int: ...
    def diagnostics(self) -> str: ...


def as_outcome(returned: int | Outcome) -> Outcome:
    return returned if isinstance(returned, Outcome) else Outcome(returned)


def _dumps(doc: CliResult) -> str:
    return json.dumps(doc.model_dump(mode="json", by_alias=True), indent=2, sort_keys=True)


def result_json(command: str | None, outcome: Outcome) -> str:
    """What `--json` prints for a command that finished (with exit code 0 or not)."""
    if outcome.document is not None:
        return outcome.document
    return _dumps(
        CliResult(
            command=command,
            ok=outcome.code == 0,
            exit_code=outcome.code,
            result=dict(outcome.result),
        )
    )


def error_json(command: str | None, exc: TypedError) -> str:
    """What `--json` prints for a command stopped by a typed error."""
    offset = getattr(exc, "offset", None)
    return _dumps(
        CliResult(
            command=command,
            ok=False,
            exit_code=exc.exit_code,
            error=CliError(
                id=exc.error_id,
                message=exc.message,
                where=exc.where,
                hint=exc.hint,
                offset=offset if isinstance(offset, int) else None,
                exit_code=exc.exit_code,
            ),
        )
    )
