"""The report model, its committed JSON Schema, the table, and the CLI's exit codes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs; installed via cyclonedx
import pytest

from tests.verify import wasmbuild as wb
from verify.bundle.errors import ReportInvalid
from verify.bundle.report_check import failed_findings, findings_by_lane, read_report
from verify.canonical import canonical_json
from verify.cli import main
from verify.formats.registry import schema_json
from verify.formats.report import VerificationReport, report_bytes
from verify.inspect import render_table, verification_report

SCHEMA = "tinyrustlm.verification-report.v1"
SCHEMA_FILE = Path(__file__).resolve().parents[2] / "manifests" / "schemas" / f"{SCHEMA}.json"


def test_committed_schema_equals_the_model() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_json(VerificationReport)


def test_report_validates_against_schema_and_round_trips(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.wasm", tmp_path / "bad.wasm"
    good.write_bytes(wb.module(wb.scalar_spec()))
    bad.write_bytes(wb.module(wb.simd_spec()))
    report = verification_report([(good, "scalar-wasm32"), (bad, "scalar-wasm32")])
    doc = json.loads(report.model_dump_json(by_alias=True))
    jsonschema.validate(doc, json.loads(SCHEMA_FILE.read_text()))
    assert doc["schema"] == SCHEMA
    assert [a["ok"] for a in doc["artifacts"]] == [True, False] and doc["ok"] is False
    assert VerificationReport.model_validate(doc) == report
    table = render_table(report)
    assert "PASS  scalar-wasm32" in table and "FAIL  wasm.proposals.allowed" in table


def _write(tmp_path: Path, data: bytes) -> str:
    path = tmp_path / "m.wasm"
    path.write_bytes(data)
    return str(path)


CLI_CASES = [
    ("passes", lambda: wb.module(wb.scalar_spec()), 0),
    ("findings", lambda: wb.module(wb.simd_spec()), 1),
    ("malformed", lambda: wb.module(wb.scalar_spec())[:-3], 3),
    ("not-wasm", lambda: b"hello", 3),
]


@pytest.mark.parametrize(("make", "code"), [c[1:] for c in CLI_CASES],
                         ids=[c[0] for c in CLI_CASES])  # fmt: skip
def test_cli_exit_codes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: object, code: int
) -> None:
    assert callable(make)
    path = _write(tmp_path, make())
    assert main(["artifact", path, "--lane", "scalar-wasm32", "--json"]) == code
    out, err = capsys.readouterr()
    if code == 3:  # refused: still JSON on stdout, naming the error
        assert "byte offset" in err
        doc = json.loads(out)
        assert doc["schema"] == "tinyrustlm.artifact-refusal.v1" and doc["ok"] is False
        assert doc["error"]["id"] == "wasm.malformed" and doc["error"]["exit_code"] == 3
        assert doc["error"]["offset"] is not None and doc["error"]["message"]
    else:
        assert json.loads(out)["ok"] is (code == 0)


def test_cli_build_index_inspects_every_listed_lane(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build = tmp_path / "build"
    rows = []
    for lane, make in wb.BASELINES.items():
        folder = build / lane
        folder.mkdir(parents=True)
        (folder / "runtime.wasm").write_bytes(wb.module(make()))
        rows.append({"lane": lane, "artifact": f"build/{lane}/runtime.wasm"})
    index = build / "index.json"
    index.write_text(json.dumps({"lanes": rows}))
    assert main(["artifact", "--build-index", str(index), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [a["lane"] for a in doc["artifacts"]] == list(wb.BASELINES)
    index.write_text("{}")
    assert main(["artifact", "--build-index", str(index)]) == 3


def _shipped(tmp_path: Path) -> VerificationReport:
    """A real report of both kinds (a wasm module and this machine's /bin/true)."""
    wasm = tmp_path / "m.wasm"
    wasm.write_bytes(wb.module(wb.scalar_spec()))
    items = [(wasm, "scalar-wasm32"), (Path("/bin/true"), "x86_64-unknown-linux-gnu")]
    return verification_report(items, cross_check=False)


def test_shipped_bytes_keep_null_fields_and_read_back(tmp_path: Path) -> None:
    """report_bytes is the bundle's verification-report.json (canonical, nulls kept: the bytes
    releases have always shipped) and the verifier's reader gives back the same model."""
    report = _shipped(tmp_path)
    data = report_bytes(report)
    assert data.endswith(b"}\n") and b'"native":null' in data and b'"wasm":null' in data
    assert data == canonical_json(json.loads(report.model_dump_json(by_alias=True))) + b"\n"
    assert read_report(data, "verification-report.json") == report


def _doc(tmp_path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(report_bytes(_shipped(tmp_path)))
    return doc


def _set(*path: str | int, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        *parents, last = path
        target: Any = doc
        for key in parents:
            target = target[key]
        target[last] = value

    return change


def _drop(*path: str | int) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        *parents, last = path
        target: Any = doc
        for key in parents:
            target = target[key]
        del target[last]

    return change


# name -> (change to a real report document, the field the error must name)
MALFORMED: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "ok-is-a-string": (_set("artifacts", 0, "findings", 0, "ok", value="yes"),
                       "artifacts.0.findings.0.ok"),
    "size-is-a-string": (_set("artifacts", 1, "size", value="7"), "artifacts.1.size"),
    "verifier-missing": (_drop("verifier"), "verifier"),
    "unknown-field": (_set("artifacts", 0, "extra", value=1), "artifacts.0.extra"),
    "other-schema": (_set("schema", value="tinyrustlm.verification-report.v2"), "schema"),
    "bad-digest": (_set("artifacts", 0, "sha256", value="0" * 63), "artifacts.0.sha256"),
    "evidence-not-text": (_set("artifacts", 0, "findings", 0, "evidence", value={"a": 1}),
                          "artifacts.0.findings.0.evidence"),
    "findings-not-a-list": (_set("artifacts", 0, "findings", value={}), "artifacts.0.findings"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(MALFORMED), ids=list(MALFORMED))
def test_malformed_report_is_a_typed_error_naming_the_field(tmp_path: Path, case: str) -> None:
    change, field = MALFORMED[case]
    doc = _doc(tmp_path)
    change(doc)
    with pytest.raises(ReportInvalid) as caught:
        read_report(canonical_json(doc), "verification-report.json")
    assert caught.value.where == f"verification-report.json: {field}"
    assert caught.value.error_id == "report.invalid"


@pytest.mark.parametrize(
    ("data", "offset"),
    [(b'{"schema": 1,', 13), (b'{"a": 1, "a": 2}', None), (b"\xff", 0)],
    ids=["truncated", "duplicate-key", "not-utf8"],
)
def test_report_that_is_not_json_is_a_typed_error(data: bytes, offset: int | None) -> None:
    with pytest.raises(ReportInvalid) as caught:
        read_report(data, "verification-report.json")
    assert (caught.value.where, caught.value.offset) == ("verification-report.json", offset)


def test_lanes_and_failed_findings_come_from_the_model(tmp_path: Path) -> None:
    report = _shipped(tmp_path)
    table = findings_by_lane(report, "r")
    assert list(table) == ["scalar-wasm32", "x86_64-unknown-linux-gnu"]
    assert table["scalar-wasm32"] == sorted(table["scalar-wasm32"])
    failed = [f"{a.lane}: {f.id}" for a in report.artifacts for f in a.findings if not f.ok]
    assert failed_findings(report) == failed and failed  # /bin/true is no release binary
    twice = report.model_copy(update={"artifacts": [*report.artifacts, report.artifacts[0]]})
    with pytest.raises(ReportInvalid, match="reported twice") as caught:
        findings_by_lane(twice, "r")
    assert caught.value.where == "r: artifacts.2.lane"
