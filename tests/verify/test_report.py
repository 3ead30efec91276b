"""The report model, its committed JSON Schema, the table, and the CLI's exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema  # type: ignore[import-untyped]  # no stubs; installed via cyclonedx
import pytest

from tests.verify import wasmbuild as wb
from verify.cli import main
from verify.formats.registry import schema_json
from verify.formats.report import VerificationReport
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
