"""The bench's Chromium runs without a browser: the page's reports made into bench runs, what
their `ran_on` says (engine and version, the lane the loader chose, first load or cached, what
the loader's receipt observed), the refusals when a report contradicts the run it belongs to,
and what the page is served. tests/js/loader/test_bench_chromium.py runs it in Chromium."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from pipeline.bench import browser
from pipeline.bench.browser import Plan, Staged, facts_of, page_sample
from pipeline.bench.document import BENCH_SCHEMA, BenchDocument
from pipeline.bench.environment import stamp_runs
from pipeline.bench.errors import BenchError
from pipeline.bench.summary import summarize, table
from pipeline.cli import parser as release_parser
from pipeline.conformance.matrix import Trust
from pipeline.conformance.subject import Subject, WasmLane
from tests.test_help_texts import _walk

SHA = "ab" * 32
MODEL = "f3" * 32
VERSION = "Chromium 156.0.8078.114 built on Debian GNU/Linux 12 (bookworm)"
THREADS = "simd128-threads-wasm32"


def page_doc(cache: str, lane: str = THREADS, scale: float = 1.0) -> dict[str, Any]:
    """What page/main.mjs posts to ./lane for one load."""
    return {
        "chosen_lane": lane,
        "lane": 2,
        "workers": 2,
        "module_sha256": SHA,
        "context": 512,
        "fetched": [
            {"what": "manifest", "cache": "off"},
            {"what": f"module {lane}", "cache": cache},
            {"what": "model", "cache": cache},
        ],
        "load_ms": 900.0 * scale,
        "prefill_ms": 5000.0 * scale,
        "ttft_ms": 5060.0 * scale,
        "decode_ms": 60.0 * scale,
        "decode_steps": 15,
    }


REPS = (1.0, 0.9, 1.1, 1.0, 1.2)
FIRST = [page_doc("stored", scale=f) for f in REPS]
CACHED = [page_doc("hit", scale=f) for f in REPS]


def _doc(first: list[dict[str, Any]] = FIRST, cached: list[dict[str, Any]] = CACHED) -> Any:
    reps = [
        {
            "node": "v24",
            "kernels": {},
            "bandwidth_gbps": {},
            "runs": [page_sample("chromium", f), page_sample("chromium-cached", c)],
        }
        for f, c in zip(first, cached, strict=True)
    ]
    summary = summarize(reps, weights=10**8, n_prompt=128)
    doc = {
        "schema": BENCH_SCHEMA,
        "version": 4,
        "generated_utc": "2026-12-03T00:00:00Z",
        "machine": {"platform": "x", "cpus": 2, "node": "v24", "load_average": [0.1] * 6},
        "model": {
            "preset": "bench",
            "seed": 7,
            "sha256": MODEL,
            "weight_bytes_per_token": 10**8,
            "context": 512,
        },
        "modules": {"chromium": SHA},
        "method": {
            "reps": len(REPS),
            "tokens": 16,
            "prompt_tokens": 128,
            "statistic": "median",
            "matvec": [],
            "probe_bytes": 1,
            "probe_threads": [1, 2],
        },
        **summary,
        # v4's memory and KV-reuse sections, empty: these tests are about the Chromium runs
        "memory": {
            "model": {"preset": "bench", "sha256": MODEL, "file_bytes": 1, "max_context": 512},
            "part_names": [],
            "contexts": [],
            "method": "none",
            "runs": [],
        },
        "kv_reuse": {
            "model": {"preset": "bench-1k", "sha256": MODEL, "context": 1024},
            "conversation_tokens": 512,
            "new_tokens": 16,
            "method": "none",
            "runs": [],
        },
    }
    facts = {
        "chromium": facts_of("chromium", VERSION, first),
        "chromium-cached": facts_of("chromium-cached", VERSION, cached),
    }
    return stamp_runs(
        doc,
        native_names=frozenset({"native-scalar"}),
        node_version="v24.0.0",
        rustc_version="rustc 1.96.0",
        model_digests={"f32": MODEL, "int8": "18" * 32},
        context=512,
        warmup_tokens=4,
        os_arch=("Linux 6.1.0", "x86_64"),
        browser_runs=facts,
    )


def test_the_chromium_runs_are_a_bench_document_that_says_what_they_ran_on() -> None:
    doc = _doc()
    BenchDocument.model_validate(doc)
    assert [r["name"] for r in doc["runs"]] == ["chromium", "chromium-cached"]
    for run in (*doc["runs"], *doc["prefill_runs"]):
        on = run["ran_on"]
        cached = run["name"] == "chromium-cached"
        assert (on["engine"], on["engine_version"], on["lane"]) == ("chromium", VERSION, THREADS)
        assert (on["module_sha256"], on["model_sha256"], on["tier"]) == (SHA, MODEL, "f32")
        assert (on["context"], on["workers"], on["os"], on["arch"]) == (
            512,
            2,
            "Linux 6.1.0",
            "x86_64",
        )
        assert on["cache"] == {
            "process": "fresh-per-repetition",
            "module": "compiled-fresh",
            "model": "fetched-by-loader",
            "warmup_tokens": 4,
            "loader": "cached" if cached else "first-load",
            "fetched": {"module": "hit", "model": "hit"}
            if cached
            else {"module": "stored", "model": "stored"},
        }
    decode = {r["name"]: r for r in doc["runs"]}["chromium"]
    assert decode["tokens_per_s"] == pytest.approx(1000 / 60.0)  # the median repetition
    assert len(decode["tokens_per_s_samples"]) == len(REPS)
    prefill = {r["name"]: r for r in doc["prefill_runs"]}["chromium"]
    assert (prefill["load_ms"], prefill["load_ms_min"], prefill["load_ms_max"]) == (
        pytest.approx(900.0),
        pytest.approx(810.0),
        pytest.approx(1080.0),
    )


def test_node_and_native_runs_say_nothing_of_a_loader() -> None:
    """Their `ran_on` is as before: no `lane`, no loader cache state (and refused with one)."""
    doc = _doc()
    on = copy.deepcopy(doc["runs"][0]["ran_on"])
    on["engine"], on["cache"]["model"] = "node", "read-from-file"
    for key in ("loader", "fetched"):
        del on["cache"][key]
    del on["lane"]
    doc["runs"][0]["ran_on"] = on
    BenchDocument.model_validate(doc)
    on["lane"] = THREADS
    with pytest.raises(ValidationError, match="no loader"):
        BenchDocument.model_validate(doc)


@pytest.mark.parametrize(
    "drop",
    [("lane",), ("cache", "loader"), ("cache", "fetched")],
    ids=["lane", "loader-state", "fetched"],
)
def test_a_chromium_run_without_its_lane_or_cache_state_is_refused(drop: tuple[str, ...]) -> None:
    doc = _doc()
    on = doc["runs"][1]["ran_on"]
    del (on if len(drop) == 1 else on[drop[0]])[drop[-1]]
    with pytest.raises(ValidationError, match="names its lane"):
        BenchDocument.model_validate(doc)


def test_a_chromium_run_with_the_model_read_from_a_file_is_refused() -> None:
    doc = _doc()
    doc["prefill_runs"][0]["ran_on"]["cache"]["model"] = "read-from-file"
    with pytest.raises(ValidationError, match="fetched by the loader"):
        BenchDocument.model_validate(doc)


def _with(docs: list[dict[str, Any]], at: int, **change: Any) -> list[dict[str, Any]]:
    out = copy.deepcopy(docs)
    out[at].update(change)
    return out


CONTRADICTIONS = [
    ("chromium-cached", [page_doc("stored") for _ in REPS], "measures a cached"),
    ("chromium-cached", _with(CACHED, 3, fetched=page_doc("miss")["fetched"]), "measures a"),
    ("chromium", [page_doc("hit") for _ in REPS], "measures a first-load"),
    ("chromium", _with(FIRST, 2, fetched=page_doc("hit")["fetched"]), "measures a first-load"),
    ("chromium", _with(FIRST, 1, chosen_lane="simd128-wasm32"), "different lanes"),
    ("chromium", _with(FIRST, 0, fetched=[{"what": "model", "cache": "stored"}]), "does not say"),
]


@pytest.mark.parametrize(
    ("name", "docs", "message"),
    CONTRADICTIONS,
    ids=[
        "cached-but-stored",
        "cached-but-one-miss",
        "first-load-but-hit",
        "first-load-one-hit",
        "lane-changed",
        "no-module-record",
    ],
)
def test_a_report_that_contradicts_its_run_is_an_error(
    name: str, docs: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(BenchError, match=message) as caught:
        facts_of(name, VERSION, docs)
    assert caught.value.error_id == "bench.failed"


def test_the_page_is_served_the_bundle_the_model_and_its_plan(tmp_path: Path) -> None:
    files = {}
    for url in ("manifest.json", "manifest.sigstore.json", "js/loader.js", "artifacts/t.wasm"):
        files[url] = tmp_path / url
        files[url].parent.mkdir(parents=True, exist_ok=True)
        files[url].write_bytes(url.encode())
    model = tmp_path / "m.trlm"
    model.write_bytes(b"model bytes")
    subject = Subject(
        version="0.1.0",
        source_revision="0" * 40,
        wasm=(WasmLane(THREADS, "artifacts/t.wasm", files["artifacts/t.wasm"], SHA, True, True),),
        native=(),
        js_files=(("js/loader.js", files["js/loader.js"]),),
        signed_files=tuple((u, files[u]) for u in ("manifest.json", "manifest.sigstore.json")),
        source_date_epoch=1_700_000_000,
    )
    trust = Trust({"schema": "tinyrustlm.trusted-keys.v1", "keys": []}, allow_dev_key=True)
    digest = hashlib.sha256(b"model bytes").hexdigest()
    plan = Plan(Staged(subject, trust), model, digest, [256, 84], warmup=4, tokens=16)
    routes = plan.routes()
    for url, path in files.items():
        assert routes[f"/{url}"] == path
    assert routes[browser.MODEL_URL] == model
    assert routes["/conformance/index.html"] == browser.PAGE / "index.html"
    assert routes["/conformance/main.mjs"] == browser.PAGE / "main.mjs"
    page_plan = json.loads(routes["/conformance/plan.json"])  # type: ignore[arg-type]
    assert page_plan == {
        "base": "/",
        "trusted_keys": trust.trusted_keys,
        "allow_dev_key": True,
        "model": {"url": browser.MODEL_URL, "size": 11, "sha256": digest},
        "workers": 2,
        "now": 1_700_000_000,
        "prompt_tokens": [256, 84],
        "warmup": 4,
        "tokens": 16,
    }


def test_the_table_lists_the_chromium_runs_with_their_lane_and_cache_state() -> None:
    text = table(_doc())
    assert "chromium-cached" in text
    load_lines = [line for line in text.splitlines() if "first-load" in line or ", cached" in line]
    assert [line.split()[0] for line in load_lines] == ["chromium", "chromium-cached"]
    assert all(THREADS in line for line in load_lines)


def test_bench_help_says_what_the_chromium_runs_are_and_how_to_leave_them_out() -> None:
    (bench,) = [p for path, p in _walk(release_parser(), "x") if path == "x bench"]
    (flag,) = [a for a in bench._actions if "--no-browser" in a.option_strings]
    assert "Chromium" in str(flag.help) and "js/loader.js" in str(flag.help)
    assert "Chromium" in " ".join(str(bench.description).split())
