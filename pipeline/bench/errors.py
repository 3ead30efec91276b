"""The bench's one error type."""

from __future__ import annotations

from pipeline.errors import PipelineError


class BenchError(PipelineError):
    """A benchmark step could not run (missing tool, failed build, runner error)."""
