"""The bench's Chromium runs for real, short: the loader tests' release bundle served with
COOP/COEP, the `small` model, two repetitions of a first load (fresh profile) and a cached load
(a primed profile), each through js/loader.js in headless Chromium. Checks what the runs say
they ran on against the bundle and the loader's receipts; never a speed."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from pipeline.bench.browser import ChromiumBench, Plan, Staged
from pipeline.bench.document import DecodeRun, PrefillRun
from pipeline.bench.environment import stamp_runs
from pipeline.bench.lanes import prompt_tokens
from pipeline.bench.memory import MemoryRun
from pipeline.bench.summary import summarize
from pipeline.conformance.matrix import Trust
from pipeline.conformance.subject import from_bundle
from pipeline.documents.keys import load_private_key
from pipeline.io.digest import sha256_file
from pipeline.modelpack import PRESETS, pack
from tests.js.loader.site import RELAXED_THREADS_LANE, Signer, expired, link_tree

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        shutil.which("chromium") is None, reason="Debian's chromium is not installed"
    ),
]
REPS = 2


@pytest.fixture(scope="module")
def bench_doc(
    loader_bundle: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    bundle, key = loader_bundle
    trusted = json.loads((key.parent / "development.trusted-keys.json").read_bytes())
    model = tmp_path_factory.mktemp("model") / "small.trlm"
    model.write_bytes(pack(PRESETS["small"], 7))
    staged = Staged(from_bundle(bundle), Trust(trusted, allow_dev_key=True))
    plan = Plan(staged, model, sha256_file(model), prompt_tokens(), warmup=1, tokens=4)
    chromium = ChromiumBench.start(plan)
    try:
        chromium.prime()
        samples = [
            {"node": "-", "kernels": {}, "bandwidth_gbps": {}, "runs": chromium.repetition()}
            for _ in range(REPS)
        ]
        facts = chromium.facts()
        memory = chromium.memory_rows()
    finally:
        chromium.close()
    assert not chromium.cached_profile.exists()
    doc = summarize(samples, weights=1, n_prompt=len(prompt_tokens()))
    doc["_memory"] = memory
    return stamp_runs(
        doc,
        native_names=frozenset(),
        node_version="-",
        rustc_version="-",
        model_digests={"f32": plan.model_sha256},
        context=PRESETS["small"].max_context,
        warmup_tokens=plan.warmup,
        os_arch=("Linux", "x86_64"),
        browser_runs=facts,
    )


def test_both_runs_ran_in_chromium_on_the_lane_the_loader_chose(
    bench_doc: dict[str, Any], loader_bundle: tuple[Path, Path]
) -> None:
    manifest = json.loads((loader_bundle[0] / "manifest.json").read_bytes())
    sha = {a["id"]: a["sha256"] for a in manifest["artifacts"]}
    assert [r["name"] for r in bench_doc["runs"]] == ["chromium", "chromium-cached"]
    for run in (*bench_doc["runs"], *bench_doc["prefill_runs"]):
        on = run["ran_on"]
        assert on["engine"] == "chromium"
        assert on["engine_version"].startswith("Chromium ")
        assert on["lane"] == RELAXED_THREADS_LANE  # served isolated: the loader's first choice
        assert run["module_sha256"] == on["module_sha256"] == sha[RELAXED_THREADS_LANE]
        assert on["workers"] == 2
        assert on["context"] == PRESETS["small"].max_context
    for run in bench_doc["runs"]:
        DecodeRun.model_validate(run)
        assert len(run["tokens_per_s_samples"]) == REPS
        assert all(math.isfinite(x) and x > 0 for x in run["tokens_per_s_samples"])
    for run in bench_doc["prefill_runs"]:
        PrefillRun.model_validate(run)
        assert len(run["load_ms_samples"]) == REPS


def test_the_first_load_measures_memory_beside_the_loaders_plan(
    bench_doc: dict[str, Any],
) -> None:
    """The bench document's browser row (`memory.runs`): the loader's plan and what its page
    measured, each phase within the plan and at most 10% under it."""
    [row] = [MemoryRun.model_validate(r) for r in bench_doc["_memory"]]
    assert (row.name, row.engine, row.lane, row.workers) == (
        "chromium",
        "chromium",
        RELAXED_THREADS_LANE,
        2,
    )
    assert (row.context, row.prompt_tokens) == (PRESETS["small"].max_context, len(prompt_tokens()))
    assert row.before is None and row.plan.parts["load_copy"] == 0
    for phase, peak in (
        ("load", "peak_load"),
        ("prefill", "peak_prefill"),
        ("decode", "steady_decode"),
    ):
        got, plan = getattr(row.measured, phase).high_water, getattr(row.plan, peak)
        assert got <= plan <= 1.10 * got, (phase, plan, got)


def test_the_first_load_fetched_and_the_cached_load_hit_the_loaders_store(
    bench_doc: dict[str, Any],
) -> None:
    cache = {r["name"]: r["ran_on"]["cache"] for r in bench_doc["runs"]}
    assert cache["chromium"]["loader"] == "first-load"
    assert cache["chromium"]["fetched"] == {"module": "stored", "model": "stored"}
    assert cache["chromium-cached"]["loader"] == "cached"
    assert cache["chromium-cached"]["fetched"] == {"module": "hit", "model": "hit"}


def test_a_bench_of_an_old_commit_runs_the_loader_as_of_its_manifests_time(
    loader_bundle: tuple[Path, Path], tmp_path: Path
) -> None:
    """The manifest re-signed to expire a second after its SOURCE_DATE_EPOCH, as an old
    commit's has; the page checks it as of that time, so the load runs (not `Expired`)."""
    bundle, key = loader_bundle
    trusted_path = key.parent / "development.trusted-keys.json"
    old = tmp_path / "old"
    link_tree(bundle, old)
    expired(old, Signer(load_private_key(key), "", trusted_path), None)  # type: ignore[arg-type]
    model = tmp_path / "small.trlm"
    model.write_bytes(pack(PRESETS["small"], 7))
    trust = Trust(json.loads(trusted_path.read_bytes()), allow_dev_key=True)
    plan = Plan(Staged(from_bundle(old), trust), model, sha256_file(model), [256], 1, 2)
    chromium = ChromiumBench.start(plan)
    try:
        chromium.prime()  # one load; a refusal is a BenchError with the loader's code
    finally:
        chromium.close()
