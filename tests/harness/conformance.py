"""Hand-made `tinyrustlm.conformance-report.v3` documents over a release's own lanes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tests.harness.receipts import loader_receipt, receipt_sha256
from verify.formats.conformance import (
    MODEL_TIERS,
    CaseDiff,
    CaseOutput,
    CaseRun,
    CaseTable,
    ConformanceReport,
    OracleModel,
    SamplerCase,
    TokenRow,
    cases_sha256,
)

SHA = "c" * 64
CASES = [
    SamplerCase(
        id=f"{i:03d}-greedy",
        prompt="a",
        seed=i,
        stream=0,
        temperature=0.0,
        top_k=0,
        top_p=1.0,
        repetition_penalty=1.0,
        max_tokens=4,
    )
    for i in range(3)
]
ORACLE = [
    CaseOutput(case=c.id, tokens=f"{i} 7 9", rng_state=f"0x{i:016x}", stop="max-tokens")
    for i, c in enumerate(CASES)
]
# (engine, isolated, outcome, tier) rows, applied to every lane of the release
Row = tuple[str, bool | None, str, str]


def case_runs(outcome: str) -> list[CaseRun]:
    """Every case as the oracle gave it (pass), the first with other tokens (fail), none
    (not-run)."""
    if outcome == "not-run":
        return []
    runs = [CaseRun(**o.model_dump(), failure=None) for o in ORACLE]
    if outcome == "fail":
        runs[0] = runs[0].model_copy(update={"tokens": "0 7 8", "failure": "mismatch"})
    return runs


def token_row(
    engine: str,
    isolated: bool | None,
    outcome: str,
    tier: str,
    lane: str,
    artifact_sha256: str,
    manifest_sha256: str,
) -> TokenRow:
    receipt = None
    if outcome == "pass":  # the loader's receipt of the lane it ran
        receipt = loader_receipt(engine, lane, artifact_sha256, manifest_sha256, tier)
    failed = 1 if outcome == "fail" else 0
    return TokenRow(
        tier=tier,
        engine=engine,
        engine_kind="browser" if isolated is not None else "js-runtime",
        engine_version="1",
        isolated=isolated,
        lane=lane,
        artifact_sha256=artifact_sha256,
        outcome=outcome,
        chosen=False,
        cases_passed=0 if outcome == "not-run" else len(CASES) - failed,
        cases_failed=failed,
        first_failure=CaseDiff(case=CASES[0].id, field="tokens", expected="0 7 9", got="0 7 8")
        if failed
        else None,
        receipt=receipt,
        receipt_sha256=None if receipt is None else receipt_sha256(receipt),
        results=case_runs(outcome),
    )


def report_v3(
    version: str,
    revision: str,
    lanes: Sequence[tuple[str, str]],
    rows: Sequence[Row],
    manifest_sha256: str,
    wrong_sha: bool = False,
) -> ConformanceReport:
    """A v3 report: `rows` on every (lane, artifact sha256) of `lanes`."""
    return ConformanceReport(
        release_version=version,
        source_revision=revision,
        cases=CaseTable(
            count=len(CASES),
            seed=1,
            sha256=cases_sha256(CASES),
            oracle_lane="oracle",
            oracle_sha256=SHA,
            entries=CASES,
        ),
        models=[
            OracleModel(
                tier=t,
                model=t,
                model_sha256=SHA,
                oracle_stops={"max-tokens": len(CASES)},
                oracle=ORACLE,
            )
            for t in MODEL_TIERS
        ],
        rows=[
            token_row(e, iso, out, tier, lane, SHA if wrong_sha else sha, manifest_sha256)
            for e, iso, out, tier in rows
            for lane, sha in lanes
        ],
    )


def as_v2(doc: dict[str, Any]) -> dict[str, Any]:
    """The same report in the v2 shape (no cases, oracle or results kept)."""
    out = {**doc, "schema": "tinyrustlm.conformance-report.v2"}
    out["cases"] = {k: v for k, v in doc["cases"].items() if k != "entries"}
    out["models"] = [{k: v for k, v in m.items() if k != "oracle"} for m in doc["models"]]
    out["rows"] = [{k: v for k, v in r.items() if k != "results"} for r in doc["rows"]]
    return out
