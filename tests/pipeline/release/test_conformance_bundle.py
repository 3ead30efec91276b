"""conformance.json in a signed bundle, and `verify bundle --require-engines`.

Each case releases the fake tree with a conformance step that ships a hand-made report
(rows over the release's own artifacts), then runs the real verifier CLI: a required engine
needs a passing row and no failing one; a failure nobody requires is recorded, not refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pipeline.cli import main as release_main
from pipeline.release import steps
from tests.harness.receipts import loader_receipt, receipt_sha256
from tests.harness.release import Harness, fake_report, verify_json
from verify.bundle import verifier
from verify.bundle.conformance_check import check_conformance
from verify.bundle.errors import ConformanceInvalid, ConformanceMismatch, ConformanceRowFailed
from verify.bundle.layout import CONFORMANCE, MANIFEST, parse_checksums
from verify.cli import main as verify_main
from verify.formats.conformance import (
    CONFORMANCE_SCHEMA_V1,
    MODEL_TIERS,
    CaseList,
    ConformanceReport,
    TierModel,
    TierRow,
)
from verify.formats.manifest import ModuleManifest

SHA = "c" * 64
TIERS = MODEL_TIERS
# (engine, isolated, outcome, tier) rows, applied to every lane of the release
Row = tuple[str, bool, str, str]
ALL_PASS: list[Row] = [
    (engine, True, "pass", tier) for engine in ("chromium", "firefox", "webkit") for tier in TIERS
]
WEBKIT_FAILS: list[Row] = [*ALL_PASS, ("webkit", False, "fail", "f32")]
WEBKIT_INT8_FAILS: list[Row] = [*ALL_PASS, ("webkit", False, "fail", "int8")]
WEBKIT_NO_INT8: list[Row] = [r for r in ALL_PASS if r[0] != "webkit" or r[3] != "int8"]


@pytest.fixture(autouse=True)
def _fake_inspection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verifier, "default_deriver", lambda: fake_report)


def _report(signed: steps.ManifestSigned, rows: Sequence[Row], wrong_sha: bool = False) -> bytes:
    built = signed.tested.verified.built
    manifest_sha = hashlib.sha256(signed.documents.files[MANIFEST]).hexdigest()
    out = []
    for engine, isolated, outcome, tier in rows:
        for entry in built.index.lanes:
            receipt = None
            if outcome == "pass":  # the loader's receipt of the lane it ran
                receipt = loader_receipt(engine, entry.lane, entry.sha256, manifest_sha)
            out.append(
                TierRow(
                    tier=tier,
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
                    receipt=receipt,
                    receipt_sha256=None if receipt is None else receipt_sha256(receipt),
                )
            )
    report = ConformanceReport(
        release_version=built.tree.version,
        source_revision=built.tree.git.revision,
        cases=CaseList(count=3, seed=1, sha256=SHA, oracle_lane="oracle", oracle_sha256=SHA),
        models=[TierModel(tier=t, model=t, model_sha256=SHA, oracle_stops={}) for t in TIERS],
        rows=out,
    )
    return report.model_dump_json(by_alias=True).encode()


def _release(harness: Harness, rows: Sequence[Row] | None, wrong_sha: bool = False) -> Path:
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
    (
        "only-not-run",
        [("webkit", False, "not-run", t) for t in TIERS],
        False,
        "webkit",
        "conformance.engine-missing",
    ),
    ("int8-tier-failing-row", WEBKIT_INT8_FAILS, False, "webkit", "conformance.row-failed"),
    ("int8-failure-not-required", WEBKIT_INT8_FAILS, False, "chromium", None),
    (
        "no-int8-row-for-a-required-engine",
        WEBKIT_NO_INT8,
        False,
        "webkit",
        "conformance.engine-missing",
    ),
    ("no-int8-row-for-another-engine", WEBKIT_NO_INT8, False, "chromium,firefox", None),
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
    rows: list[Row] | None,
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
    manifest_sha = hashlib.sha256((bundle / MANIFEST).read_bytes()).hexdigest()
    doc = json.loads((bundle / CONFORMANCE).read_bytes())
    lane = manifest.artifacts[0].id
    webkit = next(r for r in doc["rows"] if r["engine"] == "webkit" and r["lane"] == lane)
    doc["rows"].append({**webkit, "isolated": False, "outcome": "fail", "cases_passed": 0})
    report = json.dumps(doc).encode()
    with pytest.raises(ConformanceRowFailed):
        check_conformance(report, manifest, manifest_sha, ["webkit"])
    switched_off = manifest.model_copy(update={"disabled_lanes": [lane]})
    verdict = check_conformance(report, switched_off, manifest_sha, ["webkit"])
    assert "required engines webkit pass" in verdict


def test_a_v1_report_is_read_as_the_f32_tier(harness: Harness) -> None:
    """A report of the v1 writer (one model, before the integer tier) still verifies, as f32
    rows only; the same report labelled v2 is refused for lacking the int8 tier."""
    bundle = _release(harness, ALL_PASS)
    manifest = ModuleManifest.model_validate_json((bundle / MANIFEST).read_bytes())
    manifest_sha = hashlib.sha256((bundle / MANIFEST).read_bytes()).hexdigest()
    doc = json.loads((bundle / CONFORMANCE).read_bytes())
    _drop_int8(doc)
    with pytest.raises(ConformanceInvalid, match="no model of the int8 tier"):
        check_conformance(json.dumps(doc).encode(), manifest, manifest_sha, ["webkit"])
    model = doc.pop("models")[0]
    doc["schema"] = CONFORMANCE_SCHEMA_V1
    doc["cases"].update({k: v for k, v in model.items() if k != "tier"})
    for row in doc["rows"]:
        del row["tier"]
    verdict = check_conformance(json.dumps(doc).encode(), manifest, manifest_sha, ["webkit"])
    assert "tiers f32 (a v1 report), required engines webkit pass" in verdict


def _row(doc: dict[str, Any], engine: str, tier: str = "f32") -> dict[str, Any]:
    return next(
        r for r in doc["rows"] if (r["engine"], r["outcome"], r["tier"]) == (engine, "pass", tier)
    )


def _drop_int8(doc: dict[str, Any]) -> None:
    doc["models"] = [m for m in doc["models"] if m["tier"] != "int8"]
    doc["rows"] = [r for r in doc["rows"] if r["tier"] != "int8"]


def _resign_receipt(row: dict[str, Any]) -> None:
    row["receipt_sha256"] = receipt_sha256(row["receipt"])


def _copied_from_chromium(doc: dict[str, Any]) -> None:
    chromium, firefox = _row(doc, "chromium"), _row(doc, "firefox")
    firefox["receipt"], firefox["receipt_sha256"] = chromium["receipt"], chromium["receipt_sha256"]
    # the artifact must be the same one, or the artifact check would refuse it first
    firefox["lane"], firefox["artifact_sha256"] = chromium["lane"], chromium["artifact_sha256"]
    doc["rows"] = [r for r in doc["rows"] if r is firefox or not (
        r["engine"] == "firefox" and r["lane"] == firefox["lane"] and r["isolated"]
    )]  # fmt: skip


def _renamed_schema(doc: dict[str, Any]) -> None:
    row = _row(doc, "chromium")
    row["receipt"]["schema"] = "tinyrustlm.capability-receipt.v0"
    _resign_receipt(row)


# name -> (edit of the signed report's JSON, the error it must raise)
HOLLOW: dict[str, tuple[Callable[[dict[str, Any]], None], type[Exception]]] = {
    "no cases declared": (lambda d: d["cases"].update(count=0), ConformanceInvalid),
    "a 0/0 pass": (lambda d: _row(d, "webkit").update(cases_passed=0), ConformanceMismatch),
    "fewer cases than declared": (
        lambda d: _row(d, "webkit").update(cases_passed=2), ConformanceMismatch
    ),
    "a pass with a failure": (
        lambda d: _row(d, "webkit").update(cases_failed=1), ConformanceMismatch
    ),
    "a row twice": (lambda d: d["rows"].append(dict(_row(d, "chromium"))), ConformanceMismatch),
    "no receipt on a passing browser row": (
        lambda d: _row(d, "firefox").update(receipt=None, receipt_sha256=None),
        ConformanceMismatch,
    ),
    "a chromium receipt as firefox": (_copied_from_chromium, ConformanceMismatch),
    "a renamed receipt schema": (_renamed_schema, ConformanceInvalid),
    "an unknown engine": (
        lambda d: _row(d, "webkit").update(engine="netscape"), ConformanceInvalid
    ),
    "a v2 report without the int8 tier": (_drop_int8, ConformanceInvalid),
    "a row of an undeclared tier": (
        lambda d: _row(d, "webkit").update(tier="int4"), ConformanceInvalid
    ),
    "the same row for both tiers": (
        lambda d: _row(d, "webkit", "int8").update(tier="f32"), ConformanceMismatch
    ),
}  # fmt: skip


@pytest.mark.parametrize(("edit", "error"), HOLLOW.values(), ids=HOLLOW.keys())
def test_a_report_is_held_to_meaning_not_only_to_its_signature(
    harness: Harness, edit: Callable[[dict[str, Any]], None], error: type[Exception]
) -> None:
    bundle = _release(harness, ALL_PASS)
    manifest = ModuleManifest.model_validate_json((bundle / MANIFEST).read_bytes())
    manifest_sha = hashlib.sha256((bundle / MANIFEST).read_bytes()).hexdigest()
    doc = json.loads((bundle / CONFORMANCE).read_bytes())
    assert "rows" in check_conformance(json.dumps(doc).encode(), manifest, manifest_sha, [])
    edit(doc)
    with pytest.raises(error):
        check_conformance(json.dumps(doc).encode(), manifest, manifest_sha, [])


@pytest.mark.parametrize("engines", ["chromium,", "chromium,netscape", ","], ids=repr)
def test_require_engines_refuses_an_empty_or_unknown_name(harness: Harness, engines: str) -> None:
    bundle = _release(harness, ALL_PASS)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = verify_main(
            ["bundle", str(bundle), "--trusted-keys", str(harness.trusted),
             "--require-engines", engines]
        )  # fmt: skip
    assert code == 2 and "unknown engine" in err.getvalue()


@pytest.mark.parametrize(
    "argv",
    [["--conformance", "--conformance-cases", "0"], ["--conformance", "--conformance-cases", "-1"],
     ["--conformance-require", "chromium,netscape"], ["--conformance-require", "chromium,"]],
    ids=["0 cases", "-1 cases", "unknown engine", "empty engine"],
)  # fmt: skip
def test_release_refuses_bad_conformance_options_before_anything_runs(
    harness: Harness, argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(harness.repo)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = release_main(["release", "--key", str(harness.key.private_pem), *argv])
        except SystemExit as exit_:  # argparse's own usage error
            code = int(exit_.code or 0)
    assert code == 2, err.getvalue()
    assert not (harness.repo / "dist").exists() and "[1/" not in err.getvalue()
