"""conformance.json in a signed bundle, and `verify bundle --require-engines`.

Each case releases the fake tree with a conformance step that ships a hand-made report
(rows over the release's own artifacts), then runs the real verifier CLI: a required engine
needs a passing row and no failing one; a failure nobody requires is recorded, not refused.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pipeline.release import steps
from tests.harness.release import Harness, fake_report, verify_json
from verify.bundle import verifier
from verify.bundle.conformance_check import check_conformance
from verify.bundle.errors import ConformanceRowFailed
from verify.bundle.layout import CONFORMANCE, MANIFEST, parse_checksums
from verify.formats.conformance import CaseSet, ConformanceReport, ConformanceRow
from verify.formats.manifest import ModuleManifest

SHA = "c" * 64
# (engine, isolated, outcome) rows, applied to every lane of the release
ALL_PASS = [("chromium", True, "pass"), ("firefox", True, "pass"), ("webkit", True, "pass")]
WEBKIT_FAILS = [*ALL_PASS, ("webkit", False, "fail")]


@pytest.fixture(autouse=True)
def _fake_inspection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verifier, "default_deriver", lambda: fake_report)


def _report(
    signed: steps.ManifestSigned, rows: Sequence[tuple[str, bool, str]], wrong_sha: bool = False
) -> bytes:
    built = signed.tested.verified.built
    out = []
    for engine, isolated, outcome in rows:
        for entry in built.index.lanes:
            out.append(
                ConformanceRow(
                    engine=engine,
                    engine_kind="browser",
                    engine_version="1",
                    isolated=isolated,
                    lane=entry.lane,
                    artifact_sha256=SHA if wrong_sha else entry.sha256,
                    outcome=outcome,
                    chosen=False,
                    cases_passed=3 if outcome == "pass" else 0,
                    cases_failed=3 if outcome == "fail" else 0,
                )
            )
    report = ConformanceReport(
        release_version=built.tree.version,
        source_revision=built.tree.git.revision,
        cases=CaseSet(
            count=3,
            seed=1,
            sha256=SHA,
            model="small",
            model_sha256=SHA,
            oracle_lane="oracle",
            oracle_sha256=SHA,
            oracle_stops={},
        ),
        rows=out,
    )
    return report.model_dump_json(by_alias=True).encode()


def _release(
    harness: Harness, rows: Sequence[tuple[str, bool, str]] | None, wrong_sha: bool = False
) -> Path:
    table = harness.steps
    if rows is not None:

        def matrix(signed: steps.ManifestSigned) -> steps.Conformed:
            return steps.Conformed(signed, _report(signed, rows, wrong_sha), "fake matrix")

        table = replace(table, conformance=matrix)
    return replace(harness, steps=table).release().bundle


def _verify(harness: Harness, bundle: Path, require: str) -> tuple[int, dict[str, Any]]:
    extra = ["--require-engines", require] if require else []
    code, doc, _ = verify_json(bundle, harness.trusted, *extra)
    return code, doc


CASES = [
    ("all-required-pass", ALL_PASS, False, "chromium,firefox,webkit", None),
    (
        "missing-engine",
        ALL_PASS[:2],
        False,
        "chromium,firefox,webkit",
        "conformance.engine-missing",
    ),
    ("failing-row", WEBKIT_FAILS, False, "chromium,webkit", "conformance.row-failed"),
    ("only-not-run", [("webkit", False, "not-run")], False, "webkit", "conformance.engine-missing"),
    ("failure-recorded-not-required", WEBKIT_FAILS, False, "chromium,firefox", None),
    ("nothing-required", WEBKIT_FAILS, False, "", None),
    ("no-report", None, False, "chromium", "conformance.missing"),
    ("no-report-none-required", None, False, "", None),
    ("row-of-another-artifact", ALL_PASS, True, "", "conformance.mismatch"),
]


@pytest.mark.parametrize(
    ("rows", "wrong_sha", "require", "error_id"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_require_engines(
    harness: Harness,
    rows: list[tuple[str, bool, str]] | None,
    wrong_sha: bool,
    require: str,
    error_id: str | None,
) -> None:
    bundle = _release(harness, rows, wrong_sha)
    code, doc = _verify(harness, bundle, require)
    if error_id is None:
        assert code == 0, doc
        assert doc["steps"][12]["title"] == "conformance matrix"
    else:
        assert code == 1
        assert doc["error"]["id"] == error_id, doc["error"]
        assert doc["error"]["step"] == 13


def test_conformance_json_is_checksummed_and_attested(harness: Harness) -> None:
    bundle = _release(harness, ALL_PASS)
    sums = parse_checksums((bundle / "SHA256SUMS").read_bytes())
    assert sums is not None and CONFORMANCE in sums
    # one changed byte after signing: the provenance no longer names its digest
    data = (bundle / CONFORMANCE).read_bytes().replace(b'"pass"', b'"fail"', 1)
    (bundle / CONFORMANCE).write_bytes(data)
    code, doc = _verify(harness, bundle, "")
    assert (code, doc["error"]["id"]) == (1, "provenance.subjects")


def test_a_failing_lane_the_manifest_disables_is_not_held_against_the_engine(
    harness: Harness,
) -> None:
    bundle = _release(harness, ALL_PASS)
    manifest = ModuleManifest.model_validate_json((bundle / MANIFEST).read_bytes())
    doc = json.loads((bundle / CONFORMANCE).read_bytes())
    lane = manifest.artifacts[0].id
    webkit = next(r for r in doc["rows"] if r["engine"] == "webkit" and r["lane"] == lane)
    doc["rows"].append({**webkit, "isolated": False, "outcome": "fail", "cases_passed": 0})
    report = json.dumps(doc).encode()
    with pytest.raises(ConformanceRowFailed):
        check_conformance(report, manifest, SHA, ["webkit"])
    switched_off = manifest.model_copy(update={"disabled_lanes": [lane]})
    verdict = check_conformance(report, switched_off, SHA, ["webkit"])
    assert "required engines webkit pass" in verdict
