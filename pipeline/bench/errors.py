"""The bench's one error type."""

from __future__ import annotations

from pipeline.errors import PipelineError


class BenchError(PipelineError):
    """A benchmark step could not run (missing tool, failed build, runner error)."""

    error_id = "bench.failed"
    default_hint = (
        "read the tool's output in the message; `tinyrustlm-release build` and `toolchain "
        "check` show a broken lane or toolchain"
    )
