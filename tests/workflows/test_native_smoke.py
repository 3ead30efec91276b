"""The native smoke: the plan names the artifact, model and the oracle's tokens; the
executor (standard library only) passes a right artifact and fails a wrong one."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.errors import PipelineError
from pipeline.lanebuild import native_smoke, smoke_plan

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden" / "e2e_decode.json"


def test_the_executor_imports_nothing_outside_the_standard_library() -> None:
    # -S: no site-packages, so pydantic & co. cannot be imported; -I: no user site either.
    done = subprocess.run(
        [sys.executable, "-S", "-c", "import pipeline.lanebuild.native_smoke"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_golden_checks_carry_the_oracles_tokens() -> None:
    checks = smoke_plan.golden_checks(GOLDEN)
    raw = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert [c["id"] for c in checks] == [r["id"] for r in raw]
    for check, record in zip(checks, raw, strict=True):
        assert check["expect"]["tokens"] == record["expected"]["values"]
        assert check["args"][:3] == ["run", "--model", smoke_plan.MODEL_PLACEHOLDER]
        assert check["args"][-1] == "--json"


def _fake_artifact(folder: Path, tokens: list[int], model_sha: str, prompt: list[int]) -> Path:
    """A stand-in native binary: `self-test` passes; `run` prints the given JSON."""
    out = json.dumps({"tokens": tokens, "prompt_tokens": prompt, "model_sha256": model_sha})
    script = folder / "lane" / "tinyrustlm.fake"
    script.parent.mkdir(parents=True)
    script.write_text(
        f"#!/bin/sh\nif [ \"$1\" = self-test ]; then echo ok; exit 0; fi\necho '{out}'\n",
        encoding="utf-8",
    )
    return script


def _plan(tmp_path: Path, tokens: list[int]) -> tuple[Path, Path]:
    records, plan_dir = tmp_path / "records", tmp_path / "plan"
    plan_dir.mkdir()
    model = b"model bytes"
    model_sha = hashlib.sha256(model).hexdigest()
    (plan_dir / "small.trlm").write_bytes(model)
    artifact = _fake_artifact(records, tokens, model_sha, [1, 2])
    artifact.chmod(0o644)  # as an artifact download leaves it: the executor must chmod a copy
    plan = {
        "schema": native_smoke.SCHEMA,
        "lane": "fake",
        "artifact": "lane/tinyrustlm.fake",
        "artifact_sha256": hashlib.sha256(artifact.read_bytes()).hexdigest(),
        "model": "small.trlm",
        "model_sha256": model_sha,
        "checks": [
            {"id": "self-test", "args": ["self-test"], "expect": None},
            {
                "id": "e2e",
                "args": ["run", "--model", "{model}", "--json"],
                "expect": {"tokens": [5, 6], "prompt_tokens": [1, 2], "model_sha256": model_sha},
            },
        ],
    }
    (plan_dir / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    return plan_dir, records


def test_a_matching_artifact_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan_dir, records = _plan(tmp_path, [5, 6])
    assert native_smoke.execute(plan_dir, records) == 0
    assert "fake (native): 2/2 passed" in capsys.readouterr().out


def test_wrong_tokens_fail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan_dir, records = _plan(tmp_path, [5, 7])
    assert native_smoke.execute(plan_dir, records) == 1
    assert "FAIL e2e: tokens: got [5, 7], the oracle's is [5, 6]" in capsys.readouterr().out


def test_a_swapped_artifact_is_refused_before_it_runs(tmp_path: Path) -> None:
    plan_dir, records = _plan(tmp_path, [5, 6])
    (records / "lane" / "tinyrustlm.fake").write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    with pytest.raises(PipelineError, match="the artifact hashes to"):
        native_smoke.execute(plan_dir, records)


def test_an_emulator_is_named_in_every_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    plan_dir, records = _plan(tmp_path, [5, 6])
    monkeypatch.setenv(native_smoke.EMULATOR_ENV, "/bin/sh")
    assert native_smoke.execute(plan_dir, records) == 0
    assert "(EMULATED by /bin/sh, not native)" in capsys.readouterr().out


def test_not_a_plan_is_a_typed_error(tmp_path: Path) -> None:
    (tmp_path / "plan.json").write_text('{"schema": "other"}', encoding="utf-8")
    assert native_smoke.main([str(tmp_path), "--records", str(tmp_path)]) == 3


def test_a_wasm_lane_gets_no_native_plan(tmp_path: Path) -> None:
    with pytest.raises(PipelineError, match="only native binaries"):
        smoke_plan.make_plan(REPO, "scalar-wasm32", tmp_path, tmp_path / "out")


def test_the_executors_plan_is_the_plan_format(tmp_path: Path) -> None:
    plan_dir, _ = _plan(tmp_path, [5, 6])
    raw = json.loads((plan_dir / "plan.json").read_text(encoding="utf-8"))
    raw["source_revision"] = "0" * 40
    plan = smoke_plan.NativeSmokePlan.model_validate(raw)
    assert plan.schema_ == native_smoke.SCHEMA == smoke_plan.SCHEMA
