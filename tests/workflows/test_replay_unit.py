"""The replay's own parts: expressions, matrices, step outputs, the artifact round trip."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest

from pipeline.release.bundle import bundle_contents

from .replay import (
    Replay,
    ReplayError,
    _copy_like_artifact,
    _expand,
    _read_outputs,
    condition,
    evaluate,
    substitute,
)
from .test_replay import assert_same_but_the_measurement

CTX = {
    "matrix": {"lane": "a", "native_runner": ""},
    "needs": {"plan": {"outputs": {"smoke": '{"include": [{"lane": "b"}]}'}}},
    "github": {"ref": "refs/tags/v1.0.0"},
    "secrets": {"KEY": "pem"},
}


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ("matrix.lane", "a"),
        ("matrix.native_runner != ''", False),
        ("matrix.lane == 'a'", True),
        ("startsWith(github.ref, 'refs/tags/v')", True),
        ("fromJSON(needs.plan.outputs.smoke)", {"include": [{"lane": "b"}]}),
        ("secrets.KEY", "pem"),
        ("failure()", False),
    ],
    ids=["path", "ne", "eq", "startsWith", "fromJSON", "secret", "failure"],
)
def test_expressions(expr: str, value: object) -> None:
    assert evaluate(expr, CTX) == value


def test_an_unknown_context_is_an_error_not_a_guess() -> None:
    with pytest.raises(ReplayError, match="unknown expression context"):
        evaluate("github.event.inputs.lane", CTX)
    with pytest.raises(ReplayError, match="hashFiles"):
        evaluate("hashFiles('x')", CTX)


def test_substitution_keeps_a_lone_expressions_type() -> None:
    assert substitute("${{ fromJSON(needs.plan.outputs.smoke) }}", CTX) == {
        "include": [{"lane": "b"}]
    }
    assert substitute("records-${{ matrix.lane }}", CTX) == "records-a"
    assert condition({"if": "${{ matrix.native_runner != '' }}"}, CTX) is False
    assert condition({}, CTX) is True


def test_matrix_expansion() -> None:
    assert _expand({"include": [{"lane": "x"}, {"lane": "y"}]}) == [{"lane": "x"}, {"lane": "y"}]
    assert _expand({"lane": ["x", "y"]}) == [{"lane": "x"}, {"lane": "y"}]


def test_step_outputs_plain_and_heredoc(tmp_path: Path) -> None:
    path = tmp_path / "out"
    path.write_text('build={"a":1}\nnotes<<EOF\nline 1\nline 2\nEOF\n', encoding="utf-8")
    assert _read_outputs(path) == {"build": '{"a":1}', "notes": "line 1\nline 2"}


def test_an_artifact_round_trip_drops_modes_and_hidden_files(tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "lane").mkdir(parents=True)
    (source / "lane" / "tool").write_bytes(b"x")
    (source / "lane" / "tool").chmod(0o755)
    (source / ".hidden").write_bytes(b"h")
    _copy_like_artifact(source, tmp_path / "out")
    assert (tmp_path / "out" / "lane" / "tool").stat().st_mode & 0o777 == 0o644
    assert not (tmp_path / "out" / ".hidden").exists()


def test_a_job_after_a_skipped_job_is_skipped(tmp_path: Path) -> None:
    workflow = tmp_path / "w.yml"
    workflow.write_text(
        "on: workflow_dispatch\npermissions: {}\njobs:\n"
        "  first:\n    if: startsWith(github.ref, 'refs/tags/v')\n    runs-on: ubuntu-24.04\n"
        "    permissions: {}\n    steps:\n      - run: exit 1\n"
        "  second:\n    needs: first\n    runs-on: ubuntu-24.04\n    permissions: {}\n"
        "    steps:\n      - run: exit 1\n",
        encoding="utf-8",
    )
    results = Replay(workflow, tmp_path / "work").run()
    assert [(r.name, r.status) for r in results] == [("first", "skipped"), ("second", "skipped")]


def _bundle(folder: Path, rows: list[dict[str, object]], artifact: bytes = b"wasm") -> Path:
    """A bundle made as the release makes one (`bundle_contents`: SHA256SUMS and the tarball
    over the files): a measured report and a provenance statement naming its digest."""
    files = {"artifacts/a.wasm": artifact, "conformance.json": json.dumps({"rows": rows}).encode()}
    statement = {
        "subject": [
            {"name": n, "digest": {"sha256": hashlib.sha256(b).hexdigest()}}
            for n, b in files.items()
        ]
    }
    payload = base64.b64encode(json.dumps(statement).encode()).decode()
    files["provenance.sigstore.json"] = json.dumps({"dsseEnvelope": {"payload": payload}}).encode()
    root = folder / "tinyrustlm-9.9.9"
    for name, data in bundle_contents("9.9.9", files, 0).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def _row(when: str, port: int, **receipt: object) -> dict[str, object]:
    fetched = [{"url": f"http://127.0.0.1:{port}/b/manifest.json", "source": "network"}]
    return {
        "engine": "chromium",
        "lane": "scalar",
        "outcome": "pass",
        "cases_passed": 3,
        "receipt_sha256": f"{port:064x}",
        "receipt": {"created_utc": when, "fetched": fetched, **receipt},
    }


ROW = _row("2026-12-01T18:00:00Z", 4000)


def test_the_bundles_may_differ_only_in_the_measured_report(tmp_path: Path) -> None:
    same = _bundle(tmp_path / "a", [ROW]), _bundle(tmp_path / "b", [ROW])
    assert assert_same_but_the_measurement(*same) == []
    later = _bundle(tmp_path / "c", [_row("2026-12-01T18:40:00Z", 4711)])
    assert "conformance.json" in assert_same_but_the_measurement(same[0], later)
    for name, other in [
        ("verdict", [{**ROW, "outcome": "fail"}]),
        ("rows", [ROW, ROW]),
        ("receipt", [_row("2026-12-01T18:00:00Z", 4000, numerical_mode="other")]),
    ]:
        with pytest.raises(AssertionError):
            assert_same_but_the_measurement(same[0], _bundle(tmp_path / name, other))
    with pytest.raises(AssertionError):  # an artifact that differs is never a measurement
        assert_same_but_the_measurement(same[0], _bundle(tmp_path / "d", [ROW], b"other"))
