"""Step 13, v3: every row's verdict recomputed from the token ids the report keeps.

A v3 report carries the evidence its verdicts rest on, and nothing of it is taken on trust:
  1. the cases: `cases.entries` are `count` cases with unique ids whose canonical list hashes
     to `cases.sha256`;
  2. the oracle: per tier, exactly one output per case, in case order, none an error, and its
     `oracle_stops` are the count of their stops;
  3. each row: a not-run row keeps no case and counts none; any other row keeps exactly one
     result per case, in case order, and for each the failure kind follows from it: a result
     with an error is an `error` or a `timeout` (the runner's word for which), one without an
     error is a `mismatch` exactly when its token ids or final RNG state differ from the
     oracle's on that tier; then `cases_passed`, `cases_failed`, `outcome` and the first
     failure's case are what those kinds add up to.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from verify.bundle import errors as e
from verify.bundle.layout import CONFORMANCE
from verify.formats.conformance import (
    CaseOutput,
    CaseRun,
    ConformanceReport,
    FailureKind,
    TokenRow,
    cases_sha256,
)


def _name(row: TokenRow) -> str:
    iso = "" if row.isolated is None else f" (isolated={row.isolated})"
    return f"{row.engine}/{row.lane} [{row.tier}]{iso}"


def _check_cases(report: ConformanceReport) -> list[str]:
    table = report.cases
    ids = [c.id for c in table.entries]
    where = f"{CONFORMANCE}: cases.entries"
    if len(ids) != table.count or len(set(ids)) != len(ids):
        raise e.ConformanceInvalid(
            f"cases.entries holds {len(ids)} cases ({len(set(ids))} distinct ids), "
            f"cases.count says {table.count}",
            where=where,
        )
    if cases_sha256(table.entries) != table.sha256:
        raise e.ConformanceMismatch(
            "cases.sha256 is not the digest of the cases the report lists", where=where
        )
    return ids


def _in_order(got: Sequence[CaseOutput], ids: Sequence[str], what: str, where: str) -> None:
    have = [r.case for r in got]
    if have != list(ids):
        missing = [i for i in ids if i not in set(have)]
        why = f"lacks case {missing[0]}" if missing else "is not one result per case, in order"
        raise e.ConformanceInvalid(f"{what} {why}", where=where)


def _check_oracle(
    report: ConformanceReport, ids: Sequence[str]
) -> dict[str, dict[str, CaseOutput]]:
    oracles: dict[str, dict[str, CaseOutput]] = {}
    for i, model in enumerate(report.models):
        where = f"{CONFORMANCE}: models[{i}].oracle"
        _in_order(model.oracle, ids, f"the {model.tier} oracle", where)
        if any(o.stop == "error" for o in model.oracle):
            raise e.ConformanceInvalid(f"the {model.tier} oracle failed a case", where=where)
        stops = Counter(o.stop for o in model.oracle)
        if dict(stops) != model.oracle_stops:
            raise e.ConformanceMismatch(
                f"models[{i}].oracle_stops {model.oracle_stops} are not its outputs' {dict(stops)}",
                where=f"{CONFORMANCE}: models[{i}].oracle_stops",
            )
        oracles[model.tier] = {o.case: o for o in model.oracle}
    return oracles


def failure_of(result: CaseRun, expected: CaseOutput) -> FailureKind | None:
    """The failure kind a case's result shows against the oracle's output (None: it passed)."""
    if result.error is not None:
        return "timeout" if result.failure == "timeout" else "error"
    if (result.tokens, result.rng_state) != (expected.tokens, expected.rng_state):
        return "mismatch"
    return None


def _check_row(row: TokenRow, i: int, ids: Sequence[str], oracle: dict[str, CaseOutput]) -> None:
    where = f"{CONFORMANCE}: rows[{i}]"
    if row.outcome == "not-run":
        if row.results or row.cases_passed or row.cases_failed:
            raise e.ConformanceVerdictWrong(
                f"row {_name(row)} did not run but keeps or counts cases", where=f"{where}.results"
            )
        return
    _in_order(row.results, ids, f"row {_name(row)}", f"{where}.results")
    failing = []
    for j, result in enumerate(row.results):
        kind = failure_of(result, oracle[result.case])
        if kind != result.failure:
            raise e.ConformanceVerdictWrong(
                f"row {_name(row)} case {result.case}: says {result.failure or 'pass'}, its "
                f"token ids and RNG state against the oracle's say {kind or 'pass'}",
                where=f"{where}.results[{j}].failure",
            )
        if kind is not None:
            failing.append(result.case)
    passed, failed = len(ids) - len(failing), len(failing)
    outcome = "fail" if failing else "pass"
    first = row.first_failure.case if row.first_failure else None
    if (row.cases_passed, row.cases_failed, row.outcome) != (passed, failed, outcome) or first != (
        failing[0] if failing else None
    ):
        raise e.ConformanceVerdictWrong(
            f"row {_name(row)} says {row.outcome} ({row.cases_passed} passed, "
            f"{row.cases_failed} failed, first {first or '-'}); its cases say {outcome} "
            f"({passed} passed, {failed} failed, first {failing[0] if failing else '-'})",
            where=f"{where}.outcome",
        )


def recompute_verdicts(report: ConformanceReport) -> None:
    """Raise unless every row's verdict follows from the token ids (module docstring)."""
    ids = _check_cases(report)
    oracles = _check_oracle(report, ids)
    for i, row in enumerate(report.rows):
        _check_row(row, i, ids, oracles[row.tier])
