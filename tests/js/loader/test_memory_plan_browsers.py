"""The memory plan beside what each engine measures through the loader (issue 33 item 2): in
node, Chromium, Firefox ESR and WebKit (those installed; the loader tests' page and launchers),
on every lane the engine runs, `load()` admits the model against its plan and measures its own
load in place (`lm.loadMemory`); the page then prefills a prompt that fills the context but 8
tokens and decodes 8, measuring each phase (`lm.memorySince()`): the allocator's high-water mark
over the static base and the Wasm memory's size. The `small` model at contexts 16, 64 and 256,
the `bench` model at its maximum (512). The plan is never below the measurement and at most 10%
above it; unthreaded, the Wasm memory (it only grows) stays within the plan's peak in whole
pages and, while loading, within the load plan + 5% (no load copy). The threads lane's memory is
the fixed shared memory the host made (recorded, not bounded here). WebKit may run no threads
lane (MiniBrowser exposes shared memory only with JSC_useSharedArrayBuffer, which the harness
sets; it ran the threads lane in our runs since): should it fall back, the threads case records
the loader's fallback (the failed attempt and its step) and measures the lane that ran.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.conformance import browsers
from pipeline.modelpack import PRESETS, pack
from pipeline.serve import Site
from tests.js.loader.cases import Case, Env
from tests.js.loader.checks import by_name, check_receipt
from tests.js.loader.conftest import run_node_cases, serve
from tests.js.loader.site import (
    LANE_ORDER,
    RELAXED_LANES,
    RELAXED_THREADS_LANE,
    THREADS_LANE,
    deny_above,
)
from tests.js.loader.test_loader_chromium import run_page

pytestmark = pytest.mark.integration
ENGINES = ("node", "chromium", "firefox", "webkit")
SMALL_CONTEXTS = (16, 64, 256)
BENCH_MODEL = "/bench-model.trlm"
BENCH_CONTEXT = PRESETS["bench"].max_context
DECODE = 8
TOLERANCE = 1.10  # the plan is at most 10% above the measurement
LOAD_SLACK = 1.05  # Wasm memory while loading <= the load plan + 5%
PAGE = 65536
PHASES = (("load", "peakLoad"), ("prefill", "peakPrefill"), ("decode", "steadyDecode"))
# each lane first (the better ones denied): the loader runs it, or says why not
LANES = {lane: deny_above(lane)["denyLanes"] for lane in LANE_ORDER}


@pytest.fixture(scope="module")
def bench() -> bytes:
    """The bench model (`nox -s bench`'s, pipeline/bench/lanes.py bench_model)."""
    return pack(PRESETS["bench"], 7)


@pytest.fixture(scope="module")
def server(site: Path, bench: bytes) -> Iterator[tuple[Site, str]]:
    served: Site
    for served, url in serve(site, isolated=True):
        served.overrides[BENCH_MODEL] = bench
        yield served, url


def _cases(url: str, bench: bytes) -> dict[str, list[Case]]:
    """Two pages per engine: the small model, then the bench model (a page's time bound)."""
    bench_model = {
        "url": f"{url}{BENCH_MODEL.lstrip('/')}",
        "size": len(bench),
        "sha256": hashlib.sha256(bench).hexdigest(),
    }
    small, big = [], []
    for lane, deny in LANES.items():
        options = {"denyLanes": deny, "cache": "none", "prefillChunk": 16}
        measure = {"measureMemory": {"decode": DECODE}}
        small += [
            Case(f"{lane} small {c}", options={**options, "context": c}, extra=measure)
            for c in SMALL_CONTEXTS
        ]
        big.append(
            Case(
                f"{lane} bench {BENCH_CONTEXT}",
                options={**options, "context": BENCH_CONTEXT, "model": bench_model},
                extra=measure,
            )
        )
    return {"small": small, "bench": big}


def _env(site: Path, url: str, loader_root: str, sha256: str) -> Env:
    return Env(
        url=url,
        loader_root=loader_root,
        model_sha256=sha256,
        stalled_worker=f"{url}stalled/worker.js",
        model_size=(site / "model.trlm").stat().st_size,
    )


@pytest.fixture(scope="module", params=ENGINES)
def measured(
    request: pytest.FixtureRequest,
    site: Path,
    server: tuple[Site, str],
    bench: bytes,
    golden: dict[str, Any],
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[str, dict[str, dict[str, Any]]]:
    """(engine, case name -> result) of every case in that engine."""
    engine: str = request.param
    if engine != "node" and browsers.browser(engine).executable() is None:
        pytest.skip(f"{engine} is not installed")
    _, url = server
    sha = golden["model_sha256"]
    results: list[dict[str, Any]] = []
    for part, cases in _cases(url, bench).items():
        folder = tmp_path_factory.mktemp(f"{engine}-{part}")
        if engine == "node":
            env = _env(site, url, site.as_uri() + "/", sha)
            results += run_node_cases([c.spec(env) for c in cases], folder, site)
        else:
            page = run_page(server, site, cases, sha, folder, engine=engine)
            assert "error" not in page, page
            results += page["results"]
    return engine, by_name(results)


def in_pages(n: int) -> int:
    """`n` bytes rounded up to whole 64 KiB Wasm pages: the memory a plan of `n` bytes takes."""
    return -(-n // PAGE) * PAGE


def check_memory(memory: dict[str, Any], where: str) -> list[str]:
    """Plan >= measured, within 10%, per phase; unthreaded, the Wasm memory within the plan.
    Returns the report's lines."""
    plan = memory["plan"]
    parts = plan["parts"]
    assert parts["load_copy"] == 0, f"{where}: admitted with a load copy"
    assert plan["peakPrefill"] == sum(parts.values()), f"{where}: the peaks are not the parts'"
    assert memory["committed"] == memory["context"] - DECODE, where
    assert memory["memoryUnchanged"] is True, where
    lines = []
    for phase, key in PHASES:
        got = memory[phase]["highWater"]
        assert plan[key] >= got, f"{where}: {phase} plan {plan[key]} < measured {got}"
        assert plan[key] <= TOLERANCE * got, f"{where}: {phase} plan {plan[key]} > 110% of {got}"
        lines.append(f"{phase} {plan[key]}/{got} (+{100 * (plan[key] / got - 1):.2f}%)")
    if memory["workers"] == 0:  # unthreaded: the memory only grows, its size is its high-water
        size = memory["decode"]["memoryBytes"]
        assert size <= in_pages(plan["peak"]), f"{where}: Wasm memory {size} > plan {plan['peak']}"
        loading = memory["load"]["memoryBytes"]
        assert loading <= LOAD_SLACK * plan["peakLoad"], f"{where}: loading took {loading} bytes"
    lines.append(f"memory {memory['decode']['memoryBytes']}")
    return lines


def _ran(result: dict[str, Any], lane: str, engine: str) -> str:
    """The lane that ran: `lane`, or in WebKit (no relaxed SIMD; a threads worker may die at
    start) the lane it fell back to, with `lane`'s refusal recorded in the receipt."""
    assert "error" not in result, result["error"]
    receipt = check_receipt(result["receipt"])
    if result["lane"] != lane and engine == "webkit" and lane in (*RELAXED_LANES, THREADS_LANE):
        failed = [a for a in receipt.attempts if a.artifact_id == lane]
        assert failed and failed[0].outcome != "selected", receipt.attempts
        return f"{result['lane']} (fell back: {failed[0].step} {failed[0].error_code})"
    assert result["lane"] == lane, receipt.attempts
    return lane


@pytest.mark.parametrize("lane", list(LANES))
def test_the_plan_bounds_what_the_engine_measured_within_ten_percent(
    measured: tuple[str, dict[str, dict[str, Any]]], lane: str
) -> None:
    engine, results = measured
    cases = [f"{lane} small {c}" for c in SMALL_CONTEXTS] + [f"{lane} bench {BENCH_CONTEXT}"]
    report = []
    for name in cases:
        result = results[name]
        ran = _ran(result, lane, engine)
        memory = result["memory"]
        threads = result["lane"] in (RELAXED_THREADS_LANE, THREADS_LANE)
        assert (memory["workers"] > 0) == threads, f"{engine} {name}: {memory['workers']} workers"
        lines = check_memory(memory, f"{engine} {name} ({ran})")
        report.append(f"{engine:9} {name:32} {ran}: " + ", ".join(lines))
    print("\n" + "\n".join(report))
