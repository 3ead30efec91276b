"""What one runner produced for one case, the same shape for every engine."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# TrResult code of a generation that ran out of context (crates/core/src/result.rs): the
# oracle reports it as stop "context", JavaScript as the decode's code.
TR_CONTEXT_EXCEEDED = 14


@dataclass(frozen=True)
class CaseResult:
    case: str
    tokens: tuple[int, ...]
    rng_state: str  # "0x%016x" after the last decode step
    stop: str  # eos, max-tokens, context, error
    error: str | None = None
    ttft_ms: float = 0.0  # session start to the first token
    decode_ms: tuple[float, ...] = ()  # each later token
    timed_out: bool = False  # the error is that the runner ran out of time

    @staticmethod
    def failed(case: str, error: str, *, timed_out: bool = False) -> CaseResult:
        return CaseResult(case, (), "", "error", error, timed_out=timed_out)


def from_page(doc: Mapping[str, Any]) -> CaseResult:
    """A case result as the JavaScript lane runner (lanerun.mjs) posts it."""
    case = str(doc.get("id", "?"))
    if doc.get("error") is not None:
        return CaseResult.failed(case, str(doc["error"]))
    code = int(doc.get("code", 0))
    tokens = tuple(int(t) for t in doc.get("tokens", []))
    if code == TR_CONTEXT_EXCEEDED:
        stop = "context"
    elif code != 0:
        return CaseResult(case, tokens, str(doc.get("rng_state", "")), "error", f"TrResult {code}")
    else:
        stop = "eos" if doc.get("eos") else "max-tokens"
    return CaseResult(
        case,
        tokens,
        str(doc.get("rng_state", "")),
        stop,
        ttft_ms=float(doc.get("ttft_ms", 0.0)),
        decode_ms=tuple(float(v) for v in doc.get("decode_ms", [])),
    )
