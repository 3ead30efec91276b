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
from pipeline.conformance.matrix import Options
from pipeline.conformance.subject import Subject
from pipeline.release import conformance as release_conformance
from pipeline.release import matrix_cache, steps
from pipeline.release.conformance import RELEASE_ENGINES, covered
from tests.harness.conformance import Row, as_v2, report_v3, token_row
from tests.harness.receipts import receipt_sha256
from tests.harness.release import Harness, fake_report, verify_json
from verify.bundle import verifier
from verify.bundle.conformance_check import check_conformance
from verify.bundle.errors import (
    ConformanceDowngrade,
    ConformanceInvalid,
    ConformanceMismatch,
    ConformanceRowFailed,
    ConformanceVerdictWrong,
)
from verify.bundle.layout import CONFORMANCE, MANIFEST, parse_checksums
from verify.cli import main as verify_main
from verify.formats.conformance import CONFORMANCE_SCHEMA_V1, MODEL_TIERS, ConformanceReport
from verify.formats.manifest import ModuleManifest

TIERS = MODEL_TIERS
ALL_PASS: list[Row] = [
    (engine, True, "pass", tier) for engine in ("chromium", "firefox", "webkit") for tier in TIERS
]
WEBKIT_FAILS: list[Row] = [
    *ALL_PASS,
    ("webkit", False, "fail", "f32"),
    ("webkit", False, "pass", "int8"),
]
WEBKIT_INT8_FAILS: list[Row] = [
    *ALL_PASS,
    ("webkit", False, "pass", "f32"),
    ("webkit", False, "fail", "int8"),
]
WEBKIT_NO_INT8: list[Row] = [r for r in ALL_PASS if r[0] != "webkit" or r[3] != "int8"]
# webkit passes every f32 row and runs nothing on int8: required, it lacks that tier
WEBKIT_INT8_NOT_RUN: list[Row] = [
    r if r[0] != "webkit" or r[3] != "int8" else ("webkit", True, "not-run", "int8")
    for r in ALL_PASS
]


@pytest.fixture(autouse=True)
def _fake_inspection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verifier, "default_deriver", lambda: fake_report)


def _report(signed: steps.ManifestSigned, rows: Sequence[Row], wrong_sha: bool = False) -> bytes:
    built = signed.tested.verified.built
    manifest_sha = hashlib.sha256(signed.documents.files[MANIFEST]).hexdigest()
    lanes = [(entry.lane, entry.sha256) for entry in built.index.lanes]
    report = report_v3(
        built.tree.version, built.tree.git.revision, lanes, rows, manifest_sha, wrong_sha
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
    # a tier dropped from the report is refused whoever is required (the release declares both)
    ("no-int8-row-for-a-required-engine", WEBKIT_NO_INT8, False, "webkit", "conformance.invalid"),
    ("no-int8-row-for-another-engine", WEBKIT_NO_INT8, False, "chromium", "conformance.invalid"),
    ("no-int8-row-nothing-required", WEBKIT_NO_INT8, False, "", "conformance.invalid"),
    # per tier: f32 passes, int8 did not run: the engine is missing on int8
    ("int8-not-run-required", WEBKIT_INT8_NOT_RUN, False, "webkit", "conformance.engine-missing"),
    ("int8-not-run-not-required", WEBKIT_INT8_NOT_RUN, False, "chromium", None),
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
        assert doc["steps"][12]["title"] == "conformance matrix and memory plan"
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
    for tier in TIERS:  # webkit not isolated: the lane fails on each tier
        failing = token_row("webkit", False, "fail", tier, lane, manifest.artifacts[0].sha256, "")
        doc["rows"].append(failing.model_dump(mode="json"))
    report = json.dumps(doc).encode()
    with pytest.raises(ConformanceRowFailed):
        check_conformance(report, manifest, manifest_sha, ["webkit"])
    switched_off = manifest.model_copy(update={"disabled_lanes": [lane]})
    verdict = check_conformance(report, switched_off, manifest_sha, ["webkit"])
    assert "required engines webkit pass" in verdict


def _as_v1(doc: dict[str, Any]) -> dict[str, Any]:
    doc = as_v2(doc)
    _drop_int8(doc)
    model = doc.pop("models")[0]
    doc["schema"] = CONFORMANCE_SCHEMA_V1
    doc["cases"].update({k: v for k, v in model.items() if k != "tier"})
    for row in doc["rows"]:
        del row["tier"]
    return doc


def test_old_reports_are_read_and_never_judge_a_required_engine(harness: Harness) -> None:
    """A v1 report (one model, before the integer tier) verifies as f32 rows only, and a v2
    report (verdicts, no token ids) as it is, when nothing is required; with
    --require-engines each is a downgrade (no int8 tier, no verdict to recompute)."""
    bundle = _release(harness, ALL_PASS)
    manifest = ModuleManifest.model_validate_json((bundle / MANIFEST).read_bytes())
    manifest_sha = hashlib.sha256((bundle / MANIFEST).read_bytes()).hexdigest()
    doc = json.loads((bundle / CONFORMANCE).read_bytes())
    v2, v1 = json.dumps(as_v2(doc)).encode(), json.dumps(_as_v1(doc)).encode()
    assert "(a v2 report)" in check_conformance(v2, manifest, manifest_sha, [])
    assert "tiers f32 (a v1 report)" in check_conformance(v1, manifest, manifest_sha, [])
    for old in (v1, v2):
        with pytest.raises(ConformanceDowngrade, match="required"):
            check_conformance(old, manifest, manifest_sha, ["webkit"])
    v2_no_int8 = as_v2(doc)
    _drop_int8(v2_no_int8)
    with pytest.raises(ConformanceInvalid, match="no model of the int8 tier"):
        check_conformance(json.dumps(v2_no_int8).encode(), manifest, manifest_sha, [])
    v2_no_int8_rows = as_v2(doc)
    v2_no_int8_rows["rows"] = [r for r in v2_no_int8_rows["rows"] if r["tier"] != "int8"]
    with pytest.raises(ConformanceInvalid, match="has no int8 row"):
        check_conformance(json.dumps(v2_no_int8_rows).encode(), manifest, manifest_sha, [])


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


def _f32_receipt_on_int8(doc: dict[str, Any]) -> None:
    row = _row(doc, "webkit", "int8")
    row["receipt"]["selection"]["numerical_mode"] = "strict-f32-v1"
    _resign_receipt(row)


def _result(doc: dict[str, Any], engine: str = "webkit", case: int = 1) -> dict[str, Any]:
    result: dict[str, Any] = _row(doc, engine)["results"][case]
    return result


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
    "an f32 receipt on an int8 row": (_f32_receipt_on_int8, ConformanceMismatch),
    "a tier's rows dropped": (
        lambda d: d.update(rows=[r for r in d["rows"] if r["tier"] != "int8"]), ConformanceInvalid
    ),
    # v3: verdicts recomputed from the token ids
    "a pass whose tokens differ": (
        lambda d: _result(d).update(tokens="5 5"), ConformanceVerdictWrong
    ),
    "a pass whose rng state differs": (
        lambda d: _result(d).update(rng_state="0x0000000000000009"), ConformanceVerdictWrong
    ),
    "a mismatch called a pass": (
        lambda d: _result(d).update(tokens="5 5", failure=None), ConformanceVerdictWrong
    ),
    "a mismatch called an error": (
        lambda d: _result(d).update(tokens="5 5", failure="error"), ConformanceVerdictWrong
    ),
    "a failing case in a passing row": (
        lambda d: _result(d).update(tokens="5 5", failure="mismatch"), ConformanceVerdictWrong
    ),
    "an error called a pass": (
        lambda d: _result(d).update(error="RuntimeError: unreachable"), ConformanceVerdictWrong
    ),
    "an edited oracle": (
        lambda d: d["models"][0]["oracle"][1].update(tokens="5 5"), ConformanceVerdictWrong
    ),
    "oracle stops that are not its outputs": (
        lambda d: d["models"][0].update(oracle_stops={"eos": 3}), ConformanceMismatch
    ),
    "an oracle case missing": (lambda d: d["models"][0]["oracle"].pop(), ConformanceInvalid),
    "a case result missing": (lambda d: _row(d, "webkit")["results"].pop(), ConformanceInvalid),
    "case results out of order": (
        lambda d: _row(d, "webkit")["results"].reverse(), ConformanceInvalid
    ),
    "an edited case": (
        lambda d: d["cases"]["entries"][0].update(prompt="b"), ConformanceMismatch
    ),
    "a case dropped from the list": (lambda d: d["cases"]["entries"].pop(), ConformanceInvalid),
    "a not-run row that keeps cases": (
        lambda d: _row(d, "webkit").update(outcome="not-run", receipt=None, receipt_sha256=None,
                                           cases_passed=0), ConformanceVerdictWrong
    ),
    "token ids that are not numbers": (
        lambda d: _result(d).update(tokens="1 two"), ConformanceInvalid
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


NAN_SPEED_ROW = {
    "engine": "node",
    "engine_version": "1",
    "lane": "x",
    "model": "m",
    "runs": 1,
    "decode_tokens": 1,
    "ttft_ms_median": float("nan"),
    "ttft_ms_min": 0,
    "ttft_ms_max": 0,
    "decode_tps_median": 0,
    "decode_tps_min": 0,
    "decode_tps_max": 0,
}
DUPLICATE = b'"release_version":"0.0.0","release_version"'
# name -> an edit of the report's bytes that a lenient JSON reader would still take
NOT_STRICT_JSON: dict[str, Callable[[bytes], bytes]] = {
    "a duplicate key": lambda b: b.replace(b'"release_version"', DUPLICATE, 1),
    "NaN": lambda b: b.replace(
        b'"speed":[]', b'"speed":' + json.dumps([NAN_SPEED_ROW]).replace(" ", "").encode(), 1
    ),
    "Infinity": lambda b: b.replace(b'"seed":1,', b'"seed":Infinity,', 1),
}


@pytest.mark.parametrize("edit", NOT_STRICT_JSON.values(), ids=NOT_STRICT_JSON.keys())
def test_a_report_is_strict_json(harness: Harness, edit: Callable[[bytes], bytes]) -> None:
    bundle = _release(harness, ALL_PASS)
    manifest = ModuleManifest.model_validate_json((bundle / MANIFEST).read_bytes())
    manifest_sha = hashlib.sha256((bundle / MANIFEST).read_bytes()).hexdigest()
    data = json.dumps(json.loads((bundle / CONFORMANCE).read_bytes()), separators=(",", ":"))
    edited = edit(data.encode())
    assert edited != data.encode()
    with pytest.raises(ConformanceInvalid, match=r"duplicate key|non-standard JSON constant"):
        check_conformance(edited, manifest, manifest_sha, [])


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
     ["--conformance-require", "chromium,netscape"], ["--conformance-require", "chromium,"],
     ["--no-conformance", "--conformance"], ["--no-conformance", "--conformance-require", "node"]],
    ids=["0 cases", "-1 cases", "unknown engine", "empty engine", "no matrix and all engines",
         "no matrix and a required engine"],
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


def test_every_release_runs_the_matrix_on_node_over_every_lane_and_tier() -> None:
    """The default step 6 is the node matrix (the signed matrix belongs in every release);
    its detail names the engines and tiers it covered."""
    assert steps.STEPS.conformance is steps.release_matrix
    assert "node" in RELEASE_ENGINES
    report = report_v3(
        "1.0.0",
        "b" * 40,
        [("scalar-wasm32", "a" * 64)],
        [("node", None, "pass", t) for t in TIERS],
        "d" * 64,
    )
    assert covered(report) == "2 rows, engines node, tiers f32/int8, 3 cases, 0 failing"


def test_the_default_matrix_is_node_over_every_lane_isolation_and_tier(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default step 6 asks the matrix for nothing narrowed (verify accepts a report of
    fewer lanes, so only this can tell), ships its report and says what it covered."""
    asked: list[tuple[Options, tuple[str, ...], list[str]]] = []

    def matrix(
        subject: Subject, opts: Options, tiers: tuple[str, ...] = MODEL_TIERS
    ) -> ConformanceReport:
        asked.append((opts, tiers, [w.lane for w in subject.wasm]))
        manifest = dict(subject.signed_files)[MANIFEST].read_bytes()
        lanes = [(w.lane, w.sha256) for w in subject.wasm]
        rows: list[Row] = [("node", None, "pass", t) for t in tiers]
        sha = hashlib.sha256(manifest).hexdigest()
        return report_v3(subject.version, subject.source_revision, lanes, rows, sha)

    monkeypatch.setattr(release_conformance, "conformance", matrix)
    monkeypatch.setattr(matrix_cache, "harness_digests", lambda repo_root: {})  # a fake tree
    with_matrix = replace(harness, steps=replace(harness.steps, conformance=steps.release_matrix))
    bundle = with_matrix.release().bundle
    manifest = ModuleManifest.model_validate_json((bundle / MANIFEST).read_bytes())
    ((opts, tiers, lanes),) = asked
    assert (tuple(opts.engines), tuple(opts.lanes), tiers) == (RELEASE_ENGINES, (), MODEL_TIERS)
    assert tuple(opts.isolation) == tuple(Options().isolation)
    assert lanes == [a.id for a in manifest.artifacts]
    assert (bundle / CONFORMANCE).is_file()
    says = f"engines node, tiers {'/'.join(MODEL_TIERS)}"
    first = [line for line in harness.log if line.startswith("[6/")]
    assert says in first[-1] and "reused" not in first[-1], first
    # an unchanged re-release reuses the report and says so
    again = with_matrix.release(dist=harness.tmp / "dist-again").bundle
    assert len(asked) == 1
    assert (again / CONFORMANCE).read_bytes() == (bundle / CONFORMANCE).read_bytes()
    second = [line for line in harness.log if line.startswith("[6/")][len(first) :]
    assert says in second[-1] and "(reused: " in second[-1], second
