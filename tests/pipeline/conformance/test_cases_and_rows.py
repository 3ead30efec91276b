"""The conformance matrix's pure parts: the seeded cases, the row rule, the report's schema."""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs; installed via cyclonedx
import pytest
from pydantic import ValidationError

from pipeline.conformance import compare
from pipeline.conformance.cases import cases_sha256, make_cases
from pipeline.conformance.cli import TIER_MODELS
from pipeline.conformance.html import render
from pipeline.conformance.results import CaseResult, from_page
from pipeline.release.conformance import unmet
from verify.formats.conformance import (
    CONFORMANCE_SCHEMA,
    CONFORMANCE_SCHEMA_V1,
    CONFORMANCE_SCHEMA_V2,
    MODEL_TIERS,
    CaseTable,
    ConformanceReport,
    OracleModel,
    SamplerCase,
    read_report,
)

REPO_ROOT = Path(__file__).resolve().parents[3]
SCHEMAS = REPO_ROOT / "manifests/schemas"
SCHEMA = SCHEMAS / f"{CONFORMANCE_SCHEMA}.json"
SHA = "a" * 64


def _f32_exact(value: float) -> bool:
    return float(struct.unpack("<f", struct.pack("<f", value))[0]) == value


def test_cases_are_seeded_and_cover_every_sampler_kind() -> None:
    cases = make_cases(100, seed=7)
    assert cases == make_cases(100, seed=7)
    assert cases_sha256(cases) != cases_sha256(make_cases(100, seed=8))
    assert len({c.id for c in cases}) == 100
    assert any(c.temperature == 0 for c in cases)
    assert any(c.top_k > 0 and c.temperature > 0 for c in cases)
    assert any(c.top_p < 1 for c in cases)
    assert any(c.repetition_penalty != 1 for c in cases)
    assert any(c.max_tokens >= 48 for c in cases)  # the EOS hunt
    assert len({c.seed for c in cases}) == 100
    assert cases[6].max_tokens == 64 and cases[6].temperature == 2.0
    for c in cases:  # the CLI, JavaScript and Python must all read the same f32
        assert all(_f32_exact(v) for v in (c.temperature, c.top_p, c.repetition_penalty)), c


def _result(
    tokens: tuple[int, ...] = (1, 2, 3), rng: str = "0x01", error: str | None = None
) -> CaseResult:
    return CaseResult("c", tokens, rng, "max-tokens", error)


@pytest.mark.parametrize(
    ("got", "field", "index"),
    [
        (_result(), None, None),
        (_result(tokens=(1, 9, 3)), "tokens", 1),
        (_result(tokens=(1, 2)), "tokens", 2),
        (_result(rng="0x02"), "rng_state", None),
        (_result(error="trap"), "error", None),
        (None, "error", None),
    ],
    ids=["equal", "token-differs", "shorter", "rng-differs", "runner-error", "no-result"],
)
def test_case_diff(got: CaseResult | None, field: str | None, index: int | None) -> None:
    problem = compare.diff(_result(), got)
    assert (problem.field if problem else None) == field
    assert (problem.first_index if problem else None) == index


def test_one_wrong_case_fails_the_row_and_is_kept() -> None:
    cases = make_cases(3, seed=1)
    oracle = {c.id: CaseResult(c.id, (5, 6), "0x10", "max-tokens") for c in cases}
    got = [CaseResult(c.id, (5, 6), "0x10", "max-tokens") for c in cases]
    got[1] = CaseResult(cases[1].id, (5, 7), "0x10", "max-tokens")
    key = compare.RowKey("node", "js-runtime", "v1", None, "f32")
    row = compare.ran_row(key, "lane", SHA, cases, oracle, got, chosen=True)
    assert (row.outcome, row.cases_passed, row.cases_failed) == ("fail", 2, 1)
    assert row.first_failure is not None and row.first_failure.case == cases[1].id
    got[1] = CaseResult(cases[1].id, (5, 6), "0x10", "max-tokens")
    assert compare.ran_row(key, "lane", SHA, cases, oracle, got, chosen=True).outcome == "pass"


@pytest.mark.parametrize(
    ("doc", "stop", "error"),
    [
        ({"id": "x", "code": 0, "tokens": [1], "rng_state": "0x1", "eos": True}, "eos", None),
        ({"id": "x", "code": 0, "tokens": [1], "rng_state": "0x1"}, "max-tokens", None),
        ({"id": "x", "code": 14, "tokens": [1], "rng_state": "0x1"}, "context", None),
        ({"id": "x", "code": 4, "tokens": [], "rng_state": "0x0"}, "error", "TrResult 4"),
        ({"id": "x", "error": "boom"}, "error", "boom"),
    ],
    ids=["eos", "max-tokens", "context", "tr-error", "exception"],
)
def test_page_results_read_like_the_oracle(
    doc: dict[str, object], stop: str, error: str | None
) -> None:
    result = from_page(doc)
    assert (result.stop, result.error) == (stop, error)


def _report() -> ConformanceReport:
    cases = make_cases(2, seed=3)
    oracle = {c.id: CaseResult(c.id, (1,), "0x1", "max-tokens") for c in cases}
    rows = [
        compare.ran_row(
            compare.RowKey("chromium", "browser", "156", True, "f32"),
            "lane-a",
            SHA,
            cases,
            oracle,
            list(oracle.values()),
            chosen=True,
            receipt={"lane": "lane-a"},
        ),
        compare.blocked_row(
            compare.RowKey("chromium", "browser", "156", False, "int8"),
            "lane-b",
            SHA,
            cases,
            refused=True,
            why="needs isolation",
        ),
        compare.blocked_row(
            compare.RowKey("webkit", "browser", "2.50", True, "int8"),
            "lane-b",
            SHA,
            cases,
            refused=False,
            why="probe did not validate",
        ),
    ]
    return ConformanceReport(
        release_version="1.0.0",
        source_revision="b" * 40,
        cases=CaseTable(
            count=2,
            seed=3,
            sha256=cases_sha256(cases),
            oracle_lane="native",
            oracle_sha256=SHA,
            entries=cases,
        ),
        models=[
            OracleModel(
                tier=t,
                model=m,
                model_sha256=SHA,
                oracle_stops={"max-tokens": 2},
                oracle=[compare.output(r) for r in oracle.values()],
            )
            for t, m in (("f32", "small"), ("int8", "small-int8"))
        ],
        rows=rows,
    )


def test_report_validates_against_the_committed_schema() -> None:
    doc = json.loads(_report().model_dump_json(by_alias=True))
    jsonschema.validate(doc, json.loads(SCHEMA.read_text()))
    doc["rows"][0]["outcome"] = "maybe"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, json.loads(SCHEMA.read_text()))


def test_a_v2_reader_refuses_a_v3_report_rather_than_misread_it() -> None:
    """v2's schema (what a v2 reader holds a report to) refuses a v3 report: its `schema`
    literal, and the fields v2 does not know (extra fields are forbidden)."""
    doc = json.loads(_report().model_dump_json(by_alias=True))
    v2 = json.loads((SCHEMAS / f"{CONFORMANCE_SCHEMA_V2}.json").read_text())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, v2)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**doc, "schema": CONFORMANCE_SCHEMA_V2}, v2)


def test_every_case_keeps_its_token_ids_and_why_it_failed() -> None:
    """A row keeps every case's raw token ids and RNG state, and a failing case says whether
    it was a mismatch, an error or a timeout (a runner that ran out of time)."""
    cases = make_cases(4, seed=1)
    oracle = {c.id: CaseResult(c.id, (5, 6), "0x10", "max-tokens") for c in cases}
    got = [
        CaseResult(cases[0].id, (5, 6), "0x10", "max-tokens"),
        CaseResult(cases[1].id, (5, 7), "0x10", "max-tokens"),
        CaseResult.failed(cases[2].id, "RuntimeError: unreachable"),
        CaseResult.failed(cases[3].id, "no answer within 120s", timed_out=True),
    ]
    key = compare.RowKey("webkit", "browser", "2.50", False, "int8")
    row = compare.ran_row(key, "simd128-wasm32", SHA, cases, oracle, got, chosen=False)
    assert [(r.tokens, r.failure) for r in row.results] == [
        ("5 6", None),
        ("5 7", "mismatch"),
        ("", "error"),
        ("", "timeout"),
    ]
    assert row.results[2].error == "RuntimeError: unreachable"
    assert (row.outcome, row.cases_passed, row.cases_failed) == ("fail", 1, 3)
    missing = compare.ran_row(key, "simd128-wasm32", SHA, cases, oracle, got[:1], chosen=False)
    assert [r.failure for r in missing.results] == [None, "error", "error", "error"]
    timed_out = compare.blocked_row(
        key, "simd128-wasm32", SHA, cases, refused=False, why="no answer", timed_out=True
    )
    assert {r.failure for r in timed_out.results} == {"timeout"}
    refused = compare.blocked_row(key, "x", SHA, cases, refused=True, why="needs isolation")
    assert refused.results == []


def test_the_command_runs_a_model_of_every_tier() -> None:
    assert tuple(TIER_MODELS) == MODEL_TIERS


def _v1(report: ConformanceReport) -> dict[str, Any]:
    """`report` as its v1 writer made it: one model (f32), rows without a tier."""
    doc: dict[str, Any] = json.loads(report.model_dump_json(by_alias=True))
    del doc["cases"]["entries"]
    for m in doc["models"]:
        del m["oracle"]
    for r in doc["rows"]:
        del r["results"]
    model = doc.pop("models")[0]
    doc["schema"] = CONFORMANCE_SCHEMA_V1
    doc["cases"].update({k: v for k, v in model.items() if k != "tier"})
    for row in doc["rows"]:
        del row["tier"]
    return doc


def test_a_v1_report_still_reads_as_the_f32_tier() -> None:
    doc = _v1(_report())
    jsonschema.validate(doc, json.loads((SCHEMAS / f"{CONFORMANCE_SCHEMA_V1}.json").read_text()))
    report, schema = read_report(json.dumps(doc).encode())
    assert schema == CONFORMANCE_SCHEMA_V1
    assert report.tiers() == ["f32"] and {r.tier for r in report.rows} == {"f32"}
    assert not isinstance(report, ConformanceReport)  # read as v2: no token ids to judge
    assert report.models[0].model == "small" and report.cases.count == 2


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d["models"].append(dict(d["models"][0])),
        lambda d: d.update(models=d["models"][:1]),  # int8 rows, no int8 model
        lambda d: d["rows"][0].pop("tier"),
        lambda d: d["rows"][0].update(tier="int4"),
        lambda d: d.update(models=[]),
    ],
    ids=["a tier twice", "rows of an undeclared tier", "a row without a tier", "int4", "none"],
)
def test_a_v2_report_names_each_rows_tier_once(edit: Callable[[dict[str, Any]], None]) -> None:
    doc = json.loads(_report().model_dump_json(by_alias=True))
    read_report(json.dumps(doc).encode())
    edit(doc)
    with pytest.raises(ValidationError):
        read_report(json.dumps(doc).encode())


def test_release_requires_each_engine_on_every_tier() -> None:
    """`release --conformance-require`: a passing row of each tier, no failing one."""
    report = _report()  # chromium: f32 passes, int8 not run; webkit: int8 fails
    assert unmet(report, ["chromium"]) == ["chromium (int8 tier): no passing row"]
    assert unmet(report, ["webkit"]) == [
        "webkit (f32 tier): no passing row",
        "webkit (int8 tier): failing lane-b isolated",
    ]


def test_html_colours_each_cell_by_outcome() -> None:
    page = render(_report())
    assert page.count("#b7e4b0") == 1  # pass
    assert page.count("#dddddd") == 1  # not-run
    assert page.count("#f4a6a6") == 1  # fail
    assert "probe did not validate" in page


def test_sampler_case_model_refuses_bad_values() -> None:
    with pytest.raises(ValueError, match="top_p"):
        SamplerCase(
            id="x",
            prompt="p",
            seed=0,
            stream=0,
            temperature=0,
            top_k=0,
            top_p=0,
            repetition_penalty=1,
            max_tokens=1,
        )


@pytest.mark.parametrize(
    ("args", "message", "exit_code"),
    [
        (["--engines", "opera"], "[conformance.usage]: --engines: unknown opera", 2),
        (["--engines", ""], "[conformance.usage]: --engines: an empty list", 2),
        (["--cases", "0"], "[conformance.usage]: --cases and --speed-runs must be >= 1", 2),
        ([], "[conformance.not-a-bundle]: not a bundle", 3),
    ],
    ids=["unknown-engine", "no-engine", "zero-cases", "not-a-bundle"],
)
def test_cli_bad_input_is_one_error_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
    exit_code: int,
) -> None:
    from pipeline.cli import main

    code = main(["conformance", str(tmp_path), "--out", str(tmp_path / "r.json"), *args])
    err = capsys.readouterr().err
    assert code == exit_code
    assert err.startswith(f"error{message}"), err
    assert "Traceback" not in err and not (tmp_path / "r.json").exists()
