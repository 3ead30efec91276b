"""The release's memory plan without a real build: the fake harness's release with the end of
step 4 planning through a stand-in for wasmtime, so the document's way into the bundle (steps
5 and 7, the provenance, SHA256SUMS, the page) is tested in seconds; and what the step refuses."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pipeline.release import memory_plan as mp
from pipeline.release import steps as release_steps
from tests.harness.release import FAKE_STEPS, Harness, fake_report
from tests.verify.page.bundles import statement
from tests.verify.test_memory_plan_format import BENCH_128, BENCH_512
from verify.bundle import verifier
from verify.bundle.layout import CHECKSUMS, MEMORY_PLAN, REPORT_PAGE, parse_checksums
from verify.bundle.memory_plan_check import read_memory_plan
from verify.formats.base import strict_model
from verify.formats.memory_plan import PLAN_PARTS

# the threads lane's stacks_tls: its 8 static worker regions (CONTRACT.md §5)
WORKER_REGIONS = 8 * (512 * 1024 + 256)


def fake_answers(
    ask: mp.LaneAsk, model: Path, pairs: Sequence[tuple[int, int]], cwd: Path
) -> dict[str, Any]:
    """What plan_wasmtime prints, made from the bench model's figures scaled to the context."""
    plans = []
    for workers, context in pairs:
        parts = list(BENCH_512 if context == 512 else BENCH_128)
        parts[3] = 2 * 4 * 6 * context * 256  # kv of the bench shape: L 6, kv_dim 256
        parts[8] = 4 * context
        if workers:
            parts[7] += WORKER_REGIONS
        named = dict(zip(PLAN_PARTS, parts, strict=True))
        decode = sum(v for k, v in named.items() if k not in ("transfer", "load_copy"))
        plans.append(
            {
                "workers": workers,
                "context": context,
                "parts": parts,
                "peak_load": sum(
                    named[k]
                    for k in ("weights", "metadata", "stacks_tls", "load_copy", "allocator")
                ),
                "peak_prefill": decode + named["transfer"],
                "steady_decode": decode,
                "largest": 0,
            }
        )
    return {"plans": plans}


def planned_step(tested: release_steps.Tested) -> release_steps.Tested:
    data = mp.memory_plan_document(tested.verified.built, runner=fake_answers)
    return replace(tested, memory_plan=data, detail=f"{tested.detail}; {mp.plan_summary(data)}")


@pytest.fixture(autouse=True)
def _fake_inspection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verifier, "default_deriver", lambda: fake_report)


def test_a_release_signs_its_memory_plan_and_draws_it(harness: Harness) -> None:
    harness.steps = replace(FAKE_STEPS, memory_plan=planned_step)
    bundle = harness.release().bundle
    data = (bundle / MEMORY_PLAN).read_bytes()
    doc = read_memory_plan(data)
    assert doc.lanes() == ["scalar-wasm32", "simd128-wasm32", "simd128-threads-wasm32"]
    assert {(p.lane, p.workers) for p in doc.plans} == {
        ("scalar-wasm32", 0), ("simd128-wasm32", 0), ("simd128-threads-wasm32", 2)
    }  # fmt: skip
    assert sorted({(p.model, p.context) for p in doc.plans}) == [
        ("bench", 128), ("bench", 512), ("small", 128), ("small", 256)
    ]  # fmt: skip
    subjects = {s["name"] for s in statement(bundle)["subject"]}
    assert MEMORY_PLAN in subjects
    assert MEMORY_PLAN in (parse_checksums((bundle / CHECKSUMS).read_bytes()) or {})
    assert any("memory plan: 12 plans of 3 wasm lane(s)" in line for line in harness.log)
    verdict = harness.verify(bundle)
    assert "memory plan: 12 plans of 3 lane(s), all add up" in verdict.steps[12].detail
    page = (bundle / REPORT_PAGE).read_text(encoding="utf-8")
    assert 'id="memory-absent"' not in page and 'id="memory-plan-bench-scalar-wasm32"' in page


def test_a_release_with_the_same_plan_is_the_same_bytes(harness: Harness, tmp_path: Path) -> None:
    harness.steps = replace(FAKE_STEPS, memory_plan=planned_step)
    first = harness.release(dist=tmp_path / "a").bundle
    second = harness.release(dist=tmp_path / "b").bundle
    assert (first / MEMORY_PLAN).read_bytes() == (second / MEMORY_PLAN).read_bytes()
    assert (first / REPORT_PAGE).read_bytes() == (second / REPORT_PAGE).read_bytes()


def test_an_artifact_that_does_not_answer_stops_the_release(harness: Harness) -> None:
    """The real planner on the harness's tiny modules (no tr_* export): the release stops at
    step 4 with the artifact named, and nothing is written into dist/."""
    harness.steps = replace(FAKE_STEPS, memory_plan=release_steps.STEPS.memory_plan)
    with pytest.raises(mp.MemoryPlanFailed) as caught:
        harness.release()
    assert caught.value.error_id == "release.memory-plan"
    assert "runtime.scalar-wasm32." in (caught.value.where or "")
    assert not (harness.tmp / "dist").exists() or not any((harness.tmp / "dist").iterdir())


def test_a_record_with_another_part_count_is_refused() -> None:
    ask = mp.LaneAsk("scalar-wasm32", Path("runtime.scalar-wasm32.x.wasm"), False, False, (0,))
    answer = fake_answers(ask, Path("m"), [(0, 128)], Path())["plans"][0]
    answer["parts"] = answer["parts"][:-1]
    with pytest.raises(mp.MemoryPlanFailed) as caught:
        mp.lane_plan(ask, "ab" * 32, "bench", answer)
    assert caught.value.error_id == "release.memory-plan"


@pytest.mark.parametrize(
    "coverage",
    [
        {"models": [{"preset": "huge", "seed": 7}], "contexts": [128], "threads_workers": [2]},
        {"models": [{"preset": "bench", "seed": 7}], "contexts": [0], "threads_workers": [2]},
        {"models": [{"preset": "bench", "seed": 7}], "contexts": [128], "threads_workers": [9]},
        {"models": [{"preset": "bench", "seed": "7"}], "contexts": [128], "threads_workers": [2]},
        {"models": [], "contexts": [128], "threads_workers": [2]},
    ],
    ids=["unknown preset", "context 0", "10 workers", "seed as a string", "no model"],
)
def test_coverage_that_cannot_be_planned_is_refused(
    coverage: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "memory_plan.json"
    path.write_text(json.dumps(coverage))
    with pytest.raises(mp.MemoryPlanFailed) as caught:
        mp.load_coverage(path)
    assert caught.value.error_id == "release.memory-plan-coverage"


def test_the_shipped_coverage_reads() -> None:
    coverage = mp.load_coverage()
    assert [m.preset for m in coverage.models] == ["bench", "small"]
    assert strict_model(mp.Coverage, json.loads(mp.COVERAGE.read_text())) == coverage
