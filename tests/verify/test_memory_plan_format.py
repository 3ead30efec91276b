"""memory-plan.json's model (`tinyrustlm.memory-plan.v1`): the part names are the runtime's,
every plan adds up, and what the release plans (pipeline/release/memory_plan.json) is what
the loader runs."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from pipeline.release.memory_plan import contexts_of, load_coverage
from verify.formats.base import strict_model
from verify.formats.memory_plan import PHASE_PARTS, PLAN_PARTS, MemoryPlanDocument
from verify.formats.registry import schema_json

REPO_ROOT = Path(__file__).resolve().parents[2]
# the bench model's plan on the simd128 lane at 128 and 512 (its maximum), from a release
BENCH_128 = [77637536, 2968, 0, 1572864, 625156, 4096, 6720, 1114112, 512, 0, 67584]
BENCH_512 = [77637536, 2968, 0, 6291456, 632836, 4096, 6720, 1114112, 2048, 0, 67584]
SHA = "ab" * 32


def plan(lane: str, context: int, parts: list[int], workers: int = 0) -> dict[str, Any]:
    named = dict(zip(PLAN_PARTS, parts, strict=True))
    peaks = {phase: sum(named[p] for p in members) for phase, members in PHASE_PARTS.items()}
    return {
        "lane": lane,
        "artifact_sha256": SHA,
        "model": "bench",
        "workers": workers,
        "context": context,
        "parts": [{"name": n, "bytes": b} for n, b in named.items()],
        **peaks,
        "peak": max(peaks.values()),
        "largest": "weights",
    }


def document() -> dict[str, Any]:
    return {
        "schema": "tinyrustlm.memory-plan.v1",
        "release_version": "9.9.9",
        "source_revision": "0" * 40,
        "method": "tr_plan_header",
        "models": [
            {
                "preset": "bench",
                "seed": 7,
                "sha256": SHA,
                "file_bytes": 77453216,
                "max_context": 512,
                "tier": "f32",
            }
        ],
        "plans": [plan("simd128-wasm32", 128, BENCH_128), plan("simd128-wasm32", 512, BENCH_512)],
    }


def test_a_document_reads_and_adds_up() -> None:
    doc = strict_model(MemoryPlanDocument, document())
    assert [p.peak for p in doc.plans] == [81031548, 85759356]  # the README's 77.3 / 81.8 MiB
    assert doc.plans[1].steady_decode == 85757308 and doc.plans[0].peak_load == 78822200


def _drop_part(d: dict[str, Any]) -> None:
    del d["plans"][0]["parts"][3]


def _swap_parts(d: dict[str, Any]) -> None:
    parts = d["plans"][0]["parts"]
    parts[3], parts[4] = parts[4], parts[3]


def _kv_changed(d: dict[str, Any]) -> None:
    d["plans"][0]["parts"][3]["bytes"] += 1


def _peak_not_max(d: dict[str, Any]) -> None:
    d["plans"][0]["peak"] = d["plans"][0]["steady_decode"]


def _largest_wrong(d: dict[str, Any]) -> None:
    d["plans"][0]["largest"] = "kv"


def _unknown_model(d: dict[str, Any]) -> None:
    d["plans"][0]["model"] = "small"


def _over_max(d: dict[str, Any]) -> None:
    d["plans"][1]["context"] = 1024


def _twice(d: dict[str, Any]) -> None:
    d["plans"][1] = copy.deepcopy(d["plans"][0])


def _contexts_swapped(d: dict[str, Any]) -> None:
    d["plans"][0]["context"], d["plans"][1]["context"] = 512, 128


def _string_bytes(d: dict[str, Any]) -> None:
    d["plans"][0]["parts"][0]["bytes"] = "77637536"


def _extra_field(d: dict[str, Any]) -> None:
    d["plans"][0]["note"] = "x"


def _unknown_part(d: dict[str, Any]) -> None:
    d["plans"][0]["parts"][2]["name"] = "vocab"


BROKEN: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    ("a part dropped", _drop_part),
    ("two parts swapped", _swap_parts),
    ("a part that is not in its peaks", _kv_changed),
    ("peak not the largest phase", _peak_not_max),
    ("largest not the largest part", _largest_wrong),
    ("a model not listed", _unknown_model),
    ("a context over the model's maximum", _over_max),
    ("a plan twice", _twice),
    ("two contexts swapped", _contexts_swapped),
    ("bytes as a string", _string_bytes),
    ("an unknown field", _extra_field),
    ("an unknown part", _unknown_part),
]


@pytest.mark.parametrize("edit", [e for _, e in BROKEN], ids=[n for n, _ in BROKEN])
def test_a_plan_that_does_not_add_up_is_refused(edit: Callable[[dict[str, Any]], None]) -> None:
    doc = document()
    edit(doc)
    with pytest.raises(ValidationError):
        strict_model(MemoryPlanDocument, doc)


def test_the_part_names_are_the_runtimes_and_the_loaders() -> None:
    rust = (REPO_ROOT / "crates/core/src/memory.rs").read_text(encoding="utf-8")
    block = re.search(r"pub const PART_NAMES: \[&str; \d+\] = \[(.*?)\];", rust, re.S)
    assert block is not None
    assert tuple(re.findall(r'"([a-z_]+)"', block.group(1))) == PLAN_PARTS
    abi = (REPO_ROOT / "crates/wasm/js/abi.js").read_text(encoding="utf-8")
    js = re.search(r"export const PLAN_PARTS = Object\.freeze\(\[(.*?)\]\)", abi)
    assert js is not None
    assert tuple(re.findall(r"'([a-z_]+)'", js.group(1))) == PLAN_PARTS


def test_the_phases_are_the_runtimes_sums() -> None:
    """memory.rs `plan_with`: load = weights, metadata, stacks, load copy, allocator; decode
    = everything but transfer and load copy; prefill = decode + transfer."""
    everything = set(PLAN_PARTS)
    assert set(PHASE_PARTS["steady_decode"]) == everything - {"transfer", "load_copy"}
    assert set(PHASE_PARTS["peak_prefill"]) == everything - {"load_copy"}
    assert "load_copy" in PHASE_PARTS["peak_load"] and "kv" not in PHASE_PARTS["peak_load"]


def test_the_threads_lanes_are_planned_with_the_loaders_default_workers() -> None:
    loader = (REPO_ROOT / "crates/wasm/js/loader.js").read_text(encoding="utf-8")
    defaults = re.search(r"function normalise\(opts\).*?\n    workers: (\d+),", loader, re.S)
    assert defaults is not None
    assert load_coverage().threads_workers == [int(defaults.group(1))]


@pytest.mark.parametrize(
    ("max_context", "expected"),
    [(512, [128, 512]), (256, [128, 256]), (1024, [128, 512, 1024]), (32, [32])],
    ids=["bench", "small", "bigger", "tiny"],
)
def test_contexts_each_the_model_admits_and_its_maximum(
    max_context: int, expected: list[int]
) -> None:
    assert contexts_of(load_coverage().contexts, max_context) == expected


def test_the_committed_schema_is_the_models() -> None:
    committed = REPO_ROOT / "manifests/schemas/tinyrustlm.memory-plan.v1.json"
    assert committed.read_text(encoding="utf-8") == schema_json(MemoryPlanDocument)
    assert json.loads(committed.read_text())["properties"]["schema"]["const"] == (
        "tinyrustlm.memory-plan.v1"
    )
