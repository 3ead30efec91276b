"""`tinyrustlm.cli-result.v1`: what a command of either CLI prints with `--json` when it has
no document of its own (README, "Command-line output").

`ok` and `exit_code` are the verdict; `result` what the command did (each command's keys are
listed in README), or `error` the typed error that stopped it, with its stable id.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from verify.formats.base import Frozen

CLI_RESULT_SCHEMA = "tinyrustlm.cli-result.v1"


class CliError(Frozen):
    id: str = Field(description="stable error id, e.g. io.error or cli.usage")
    message: str
    where: str
    hint: str
    offset: int | None = Field(description="byte offset where parsing stopped, if any")
    exit_code: int


class CliResult(Frozen):
    schema_: Literal["tinyrustlm.cli-result.v1"] = Field("tinyrustlm.cli-result.v1", alias="schema")
    command: str | None = Field(
        description='the command, e.g. "build" or "repo init"; null if the command line '
        "itself was refused"
    )
    ok: bool = Field(description="exit_code == 0")
    exit_code: int
    result: dict[str, Any] | None = Field(None, description="what the command did")
    error: CliError | None = None
