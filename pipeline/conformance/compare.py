"""Rows: one runner's case results against the oracle's.

Tokens and the final RNG state must be equal for every lane (the scalar lanes bit-identical by
construction, the SIMD lanes within their tier so the same tokens, threads equal to simd128);
the logits themselves are not visible through the ABI, so tokens and RNG are what is compared.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.conformance.results import CaseResult
from verify.canonical import canonical_json
from verify.formats.conformance import (
    CaseDiff,
    CaseOutput,
    CaseRun,
    EngineKind,
    FailureKind,
    ModelTier,
    SamplerCase,
    TokenRow,
    token_text,
)


@dataclass(frozen=True)
class Tally:
    passed: int
    failed: int
    first: CaseDiff | None
    results: tuple[CaseRun, ...] = ()  # every case, in case order


def _first_index(a: Sequence[int], b: Sequence[int]) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


def diff(expected: CaseResult, got: CaseResult | None) -> CaseDiff | None:
    case = expected.case
    if got is None:
        return CaseDiff(case=case, field="error", expected="a result", got="nothing")
    if got.error is not None or expected.error is not None:
        if got.error == expected.error:
            return None
        return CaseDiff(
            case=case,
            field="error",
            expected=expected.error or "no error",
            got=got.error or "no error",
        )
    if got.tokens != expected.tokens:
        return CaseDiff(
            case=case,
            field="tokens",
            expected=str(list(expected.tokens)),
            got=str(list(got.tokens)),
            first_index=_first_index(expected.tokens, got.tokens),
        )
    if got.rng_state != expected.rng_state:
        return CaseDiff(
            case=case, field="rng_state", expected=expected.rng_state, got=got.rng_state
        )
    return None


def output(result: CaseResult) -> CaseOutput:
    """A case's output as the report keeps it (the oracle's, per tier)."""
    return CaseOutput(
        case=result.case,
        tokens=token_text(result.tokens),
        rng_state=result.rng_state,
        stop=_stop(result.stop),
    )


def _stop(stop: str) -> Any:
    return stop if stop in ("eos", "max-tokens", "context") else "error"


def failure_kind(got: CaseResult | None, problem: CaseDiff | None) -> FailureKind | None:
    """Why a case failed: a normal run with other outputs is a mismatch; a runner error is an
    error, or a timeout when the runner ran out of time."""
    if problem is None:
        return None
    if got is not None and got.error is None:
        return "mismatch"
    return "timeout" if got is not None and got.timed_out else "error"


def case_run(case: str, got: CaseResult | None, problem: CaseDiff | None) -> CaseRun:
    if got is None:
        return CaseRun(
            case=case,
            tokens="",
            rng_state="",
            stop="error",
            failure="error",
            error="the runner reported no result for this case",
        )
    return CaseRun(
        **output(got).model_dump(),
        failure=failure_kind(got, problem),
        error=got.error,
    )


def tally(
    cases: Sequence[SamplerCase], oracle: Mapping[str, CaseResult], got: Sequence[CaseResult]
) -> Tally:
    by_case = {r.case: r for r in got}
    passed, failed, first = 0, 0, None
    results = []
    for case in cases:
        mine = by_case.get(case.id)
        problem = diff(oracle[case.id], mine)
        results.append(case_run(case.id, mine, problem))
        if problem is None:
            passed += 1
        else:
            failed += 1
            first = first or problem
    return Tally(passed, failed, first, tuple(results))


@dataclass(frozen=True)
class RowKey:
    engine: str
    kind: EngineKind
    version: str
    isolated: bool | None
    tier: ModelTier  # of the model the row ran


def ran_row(
    key: RowKey,
    lane: str,
    sha256: str,
    cases: Sequence[SamplerCase],
    oracle: Mapping[str, CaseResult],
    got: Sequence[CaseResult],
    *,
    chosen: bool,
    receipt: dict[str, Any] | None = None,
    detail: str = "",
) -> TokenRow:
    t = tally(cases, oracle, got)
    return TokenRow(
        tier=key.tier,
        engine=key.engine,
        engine_kind=key.kind,
        engine_version=key.version,
        isolated=key.isolated,
        lane=lane,
        artifact_sha256=sha256,
        outcome="pass" if t.failed == 0 else "fail",
        chosen=chosen,
        receipt_sha256=None if receipt is None else _sha(canonical_json(receipt)),
        receipt=receipt,
        cases_passed=t.passed,
        cases_failed=t.failed,
        first_failure=t.first,
        detail=detail,
        results=list(t.results),
    )


def blocked_row(
    key: RowKey,
    lane: str,
    sha256: str,
    cases: Sequence[SamplerCase],
    *,
    refused: bool,
    why: str,
    timed_out: bool = False,
) -> TokenRow:
    """A lane that did not run: `not-run` when that is correct here, else a failure whose
    every case says why (an error, or a timeout when the runner ran out of time)."""
    first = (
        None
        if refused or not cases
        else CaseDiff(case=cases[0].id, field="error", expected="the lane runs", got=why)
    )
    kind: FailureKind = "timeout" if timed_out else "error"
    results = [
        CaseRun(case=c.id, tokens="", rng_state="", stop="error", failure=kind, error=why)
        for c in ([] if refused else cases)
    ]
    return TokenRow(
        tier=key.tier,
        engine=key.engine,
        engine_kind=key.kind,
        engine_version=key.version,
        isolated=key.isolated,
        lane=lane,
        artifact_sha256=sha256,
        outcome="not-run" if refused else "fail",
        chosen=False,
        cases_passed=0,
        cases_failed=0 if refused else len(cases),
        first_failure=first,
        detail=why,
        results=results,
    )


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
