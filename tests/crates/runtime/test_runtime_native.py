"""The native `tinyrustlm` CLI (scalar oracle): self-test, regenerating goldens reproduces the
committed ones, end-to-end tokens on the packed `small` model, and malformed models give their
typed code (exit 3, never a panic/abort). Builds with the pinned toolchain: integration."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pipeline.modelpack import PRESETS, pack
from verify.formats.golden import GoldenVector, U32Expected

from .malformed import CASES, Case, mutated, truncation_points

pytestmark = pytest.mark.integration
GOLDEN = Path(__file__).resolve().parents[2] / "golden"
EXIT_INPUT_ERROR = 3


def run(cli: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(cli), *args], capture_output=True, text=True, check=False)


def test_self_test_passes_with_a_line_per_test(cli: Path) -> None:
    done = run(cli, "self-test")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert sum(line.startswith("pass ") for line in lines) >= 12
    assert not any(line.startswith("FAIL") for line in lines)


def _without_provenance(text: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = json.loads(text)
    for r in records:
        r.pop("provenance")
    return records


def test_golden_regeneration_reproduces_the_committed_vectors(
    cli: Path, small_model: Path, int8_model: Path, tmp_path: Path
) -> None:
    done = run(
        cli,
        "golden",
        "--out",
        str(tmp_path),
        "--small-model",
        str(small_model),
        "--int8-model",
        str(int8_model),
        "--source-revision",
        "test",
        "--generated-utc",
        "now",
    )
    assert done.returncode == 0, done.stderr
    committed = sorted(p.name for p in GOLDEN.glob("*.json"))
    assert sorted(p.name for p in tmp_path.glob("*.json")) == committed
    for name in committed:
        fresh = _without_provenance((tmp_path / name).read_text(encoding="utf-8"))
        assert fresh == _without_provenance((GOLDEN / name).read_text(encoding="utf-8")), name


E2E = [GoldenVector.model_validate(r) for r in json.loads((GOLDEN / "e2e_decode.json").read_text())]


def _run_args(v: GoldenVector, model: Path) -> list[str]:
    p = v.params

    def f(name: str) -> str:
        value = p[name]
        assert isinstance(value, str)
        return repr(__import__("struct").unpack("<f", int(value, 16).to_bytes(4, "little"))[0])

    return [
        "run",
        "--model",
        str(model),
        "--prompt",
        str(p["prompt"]),
        "--seed",
        str(p["seed"]),
        "--max-tokens",
        str(v.shape["max_tokens"]),
        "--temperature",
        f("temperature"),
        "--top-k",
        str(p["top_k"]),
        "--top-p",
        f("top_p"),
        "--repetition-penalty",
        f("repetition_penalty"),
        "--json",
    ]


@pytest.mark.parametrize("vector", E2E, ids=[v.id for v in E2E])
def test_run_reproduces_the_end_to_end_golden_tokens(
    cli: Path, small_model: Path, vector: GoldenVector
) -> None:
    done = run(cli, *_run_args(vector, small_model))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    fixture = vector.inputs["model"]
    assert getattr(fixture, "sha256", None) == out["model_sha256"], "packer output changed"
    assert isinstance(vector.expected, U32Expected)
    assert out["tokens"] == vector.expected.values
    assert out["prompt_tokens"] == getattr(vector.inputs["prompt_tokens"], "values", None)
    assert len(out["decode_ms"]) == len(out["tokens"]) and out["prefill_ms"] >= 0


def test_run_prints_prefill_and_per_token_decode_time(cli: Path, small_model: Path) -> None:
    done = run(cli, "run", "--model", str(small_model), "--prompt", "hi", "--max-tokens", "3")
    assert done.returncode == 0
    assert "prefill:" in done.stdout and "decode per token (ms):" in done.stdout


def test_inspect_model_describes_the_small_model(cli: Path, small_model: Path) -> None:
    done = run(cli, "inspect-model", str(small_model), "--json")
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    p = PRESETS["small"]
    assert info["header"]["n_kv_heads"] == p.n_kv_heads
    assert info["header"]["tied_embeddings"] is False
    assert {t["layout"] for t in info["tensors"]} == {"f32", "q8-block-v1", "q4-block-v1"}
    assert info["peak_prefill_bytes"] > small_model.stat().st_size
    assert info["header"]["kernel_tier"] == "f32"


def test_inspect_model_names_the_integer_tier(cli: Path, int8_model: Path) -> None:
    done = run(cli, "inspect-model", str(int8_model), "--json")
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert info["header"]["kernel_tier"] == "int8"


def _inspect(cli: Path, path: Path) -> tuple[int, dict[str, Any]]:
    done = run(cli, "inspect-model", str(path), "--json")
    assert done.returncode in (0, EXIT_INPUT_ERROR), f"crash: {done.returncode} {done.stderr}"
    return done.returncode, json.loads(done.stdout)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_malformed_model_gives_its_code(
    cli: Path, tiny_bytes: bytes, tmp_path: Path, case: Case
) -> None:
    path = tmp_path / "bad.trlm"
    path.write_bytes(mutated(tiny_bytes, case))
    code, info = _inspect(cli, path)
    assert (code, info["result"]) == (EXIT_INPUT_ERROR, case.result)


def test_truncation_at_every_header_offset_and_through_the_data_is_bounds(
    cli: Path, tmp_path: Path
) -> None:
    model = pack(PRESETS["tiny"], 7)
    wrong = []
    for i, cut in enumerate(truncation_points(len(model))):
        path = tmp_path / f"cut{i}.trlm"
        path.write_bytes(model[:cut])
        code, info = _inspect(cli, path)
        if (code, info["result"]) != (EXIT_INPUT_ERROR, "Bounds"):
            wrong.append((cut, code, info["result"]))
    assert wrong == []


@pytest.mark.slow
@pytest.mark.parametrize("vector", E2E, ids=[v.id for v in E2E])
def test_aarch64_reproduces_the_end_to_end_golden_tokens(
    aarch64_cli: list[str], small_model: Path, vector: GoldenVector
) -> None:
    done = subprocess.run(
        [*aarch64_cli, *_run_args(vector, small_model)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert isinstance(vector.expected, U32Expected)
    assert json.loads(done.stdout)["tokens"] == vector.expected.values
