"""KV prefix reuse (issue 33 item 5, CONTRACT.md §11) on every lane: through the loader's
session API (`Loaded.turn`, tests/crates/lanes/kvreuse.mjs) on the three Wasm lanes in node, and
through `tinyrustlm chat` natively. A turn that reuses the cache equals a fresh session bit for
bit (digest of logits and K/V, sampled tokens); a prompt differing in its first or last cached
token, or any cache identity field changed alone, reuses nothing. The time to first token of a
follow-up turn of 16 new tokens after a 512-token conversation is printed (never asserted)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pipeline.modelpack import PRESETS, pack
from tests.crates.lanes.conftest import REPO_ROOT, Drive
from tests.crates.runtime.conftest import TARGET, cargo_build

HERE = Path(__file__).resolve().parent
# the bench's measurement (`nox -s bench`: kv_reuse), the one script that times a follow-up turn
KV_TTFT = REPO_ROOT / "pipeline" / "bench" / "kvreuse.mjs"
RUNS = [("scalar-wasm32", 0), ("simd128-wasm32", 0), ("simd128-threads-wasm32", 2)]
IDENTITY_FIELDS = [
    "model_sha256",
    "tokenizer_sha256",
    "normalization_version",
    "chat_template_sha256",
    "numerical_mode",
    "kv_layout_version",
    "lane",
]

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def kvreuse(drive: Drive) -> Drive:
    """drive.mjs's runner pointed at kvreuse.mjs."""

    def run(*args: str | Path) -> Any:
        return drive(*args, script=HERE / "kvreuse.mjs")

    return run


@pytest.fixture(scope="module")
def cli() -> Path:
    cargo_build(["-p", "tinyrustlm"])
    return TARGET / "release" / "tinyrustlm"


@pytest.fixture(scope="module")
def long_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `small` model with a context of 1024 (room for 512 + 16 tokens and the reply)."""
    path = tmp_path_factory.mktemp("kv") / "small-1k.trlm"
    path.write_bytes(pack(dataclasses.replace(PRESETS["small"], max_context=1024), 7))
    return path


def _check_case(case: dict[str, Any], reused: bool) -> None:
    reuse, fresh = case["reuse"], case["fresh"]
    assert fresh["turn"]["reused"] == 0, case["name"]
    assert (reuse["turn"]["reused"] > 0) == reused, f"{case['name']}: {reuse['turn']}"
    total = reuse["turn"]["reused"] + reuse["turn"]["recomputed"]
    assert total == fresh["turn"]["recomputed"], case["name"]
    assert reuse["digest"] == fresh["digest"], f"{case['name']}: logits or K/V differ"
    assert reuse["tokens"] == fresh["tokens"], f"{case['name']}: tokens differ"


@pytest.mark.parametrize(("lane", "workers"), RUNS, ids=[r[0] for r in RUNS])
def test_reuse_equals_a_fresh_session_and_each_change_recomputes(
    lane: str, workers: int, wasm_lanes: dict[str, Path], small_model: Path, kvreuse: Drive
) -> None:
    doc = kvreuse("check", wasm_lanes[lane], workers, small_model, lane)
    assert doc["identity"]["lane"] == lane and doc["identity"]["chat_template_sha256"] is None
    cases = {c["name"]: c for c in doc["cases"]}
    extends = cases["extends"]
    assert extends["reuse"]["turn"]["reused"] == extends["committed"] > 0
    for name in ("extends", "same prompt", "prefill between turns"):
        _check_case(cases[name], reused=True)
    assert cases["same prompt"]["reuse"]["turn"]["recomputed"] == 1
    for at in ("first", "last"):
        _check_case(cases[f"differs in the {at} cached token"], reused=False)
    for field in IDENTITY_FIELDS:
        case = cases[f"identity {field}"]
        assert case["reuse"]["turn"]["refused"] == field
        _check_case(case, reused=False)


def _chat(cli: Path, model: Path, turns: Path, *extra: str) -> dict[str, Any]:
    done = subprocess.run(
        [str(cli), "chat", "--model", str(model), "--turns", str(turns), "--json", *extra],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


SAMPLING = ("--temperature", "0.9", "--top-p", "0.95", "--repetition-penalty", "1.3")


def test_native_chat_reuses_and_equals_fresh_sessions(
    cli: Path, small_model: Path, tmp_path: Path, wasm_lanes: dict[str, Path], kvreuse: Drive
) -> None:
    turns = tmp_path / "turns.txt"
    turns.write_text("Hello, world. Tell me a story\nQ: and then?\nWhy?\n")
    args = (*SAMPLING, "--seed", "42", "--stream", "7", "--max-tokens", "6")
    reuse = _chat(cli, small_model, turns, *args)
    scratch = _chat(cli, small_model, turns, *args, "--no-reuse")
    assert [t["tokens"] for t in reuse["turns"]] == [t["tokens"] for t in scratch["turns"]]
    assert [t["reused"] for t in scratch["turns"]] == [0, 0, 0]
    first, *later = reuse["turns"]
    assert first["reused"] == 0
    for t in later:
        assert t["reused"] > 0 and t["refused"] is None
        assert t["reused"] + t["recomputed"] == t["prompt_tokens"]
    # the native identity is the loader's but for the lane
    js = kvreuse("check", wasm_lanes["scalar-wasm32"], 0, small_model, "scalar-wasm32")
    assert {**reuse["identity"], "lane": "scalar-wasm32"} == js["identity"]


def test_time_to_first_token_of_a_follow_up_turn(
    cli: Path, long_model: Path, tmp_path: Path, wasm_lanes: dict[str, Path], drive: Drive
) -> None:
    """Measured (by the bench's own script), printed and recorded; only the reuse counts and
    equal tokens are asserted."""
    rows = []
    for lane, workers in RUNS:
        doc = drive(wasm_lanes[lane], workers, long_model, lane, script=KV_TTFT)
        assert doc["reuse"]["tokens"] == doc["scratch"]["tokens"]
        # 512 committed (the last generated token fed by an earlier turn), 16 new
        assert doc["reuse"]["recomputed"] == 16 and doc["scratch"]["reused"] == 0
        rows.append((lane, doc["reuse"]["ttft_ms"], doc["scratch"]["ttft_ms"]))
    turns = tmp_path / "turns.txt"
    text = ("The quick brown fox jumps over the lazy dog. " * 12)[:510]
    turns.write_text(f"{text}\nThen what? Tell.\n")
    reuse = _chat(cli, long_model, turns, "--max-tokens", "1")
    scratch = _chat(cli, long_model, turns, "--max-tokens", "1", "--no-reuse")
    # 511 prompt tokens + 1 generated (pending, so fed by this turn) + 16 new
    assert reuse["turns"][1]["prompt_tokens"] == 528 and reuse["turns"][1]["recomputed"] == 17
    assert reuse["turns"][1]["tokens"] == scratch["turns"][1]["tokens"]
    rows.append(("native", reuse["turns"][1]["ttft_ms"], scratch["turns"][1]["ttft_ms"]))
    report = "\n".join(f"{lane:24} reuse {a:9.2f} ms, scratch {b:9.2f} ms" for lane, a, b in rows)
    print(f"\ntime to first token, 16 new tokens after a 512-token conversation:\n{report}")
    (TARGET / "kv-reuse-ttft.json").write_text(json.dumps(rows, indent=1))
