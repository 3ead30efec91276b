"""Step "the report re-derived": inspect every artifact again with the verifier's OWN policy.

The bundle's verification-report.json is what the builder claims it found; a verifier must
not trust it, nor the bundle's policy. It re-inspects each artifact (by lane) with the
policy shipped with this verifier and compares the findings (id, ok, evidence) per lane.
`Deriver` is injectable so the comparison can be tested apart from the inspectors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from verify.canonical import canonical_json

# (artifact file, lane id) in manifest order -> the report as a JSON object
Deriver = Callable[[Sequence[tuple[Path, str]]], dict[str, Any]]


def default_deriver() -> Deriver:
    # Imported here, not at the top: the inspectors load lief and capstone (seconds of start-up)
    # and a bundle refused at an earlier step never needs them.
    from verify.inspect import verification_report

    def derive(artifacts: Sequence[tuple[Path, str]]) -> dict[str, Any]:
        report = verification_report(list(artifacts))
        dumped: dict[str, Any] = report.model_dump(mode="json", by_alias=True)
        return dumped

    return derive


def findings_by_lane(report: Any) -> dict[str, list[tuple[str, bool, str]]] | None:
    """lane -> sorted (finding id, ok, canonical evidence); None if the shape is unknown."""
    if not isinstance(report, dict) or not isinstance(report.get("artifacts"), list):
        return None
    table: dict[str, list[tuple[str, bool, str]]] = {}
    for artifact in report["artifacts"]:
        if not isinstance(artifact, dict):
            return None
        lane = artifact.get("lane", artifact.get("id"))
        findings = artifact.get("findings")
        if not isinstance(lane, str) or not isinstance(findings, list):
            return None
        rows: list[tuple[str, bool, str]] = []
        for finding in findings:
            if not isinstance(finding, dict) or not isinstance(finding.get("id"), str):
                return None
            evidence = canonical_json(finding.get("evidence")).decode("utf-8")
            rows.append((finding["id"], finding.get("ok") is True, evidence))
        table[lane] = sorted(rows)
    return table


def failed_findings(report: Any) -> list[str]:
    """`lane: finding-id` for every finding that is not ok (empty when all pass)."""
    table = findings_by_lane(report) or {}
    return [f"{lane}: {fid}" for lane, rows in table.items() for fid, ok, _ in rows if not ok]
