"""report.html's Memory section from a bundle's memory-plan.json: a stacked bar per context
for every lane, its values as text in the table beside it, and a plan `verify bundle` refuses
(malformed, or not about this release) never reaches a page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.harness.release import Harness, copy_pristine, fake_report
from tests.verify.page.bundles import add_memory_plan
from tests.verify.page.dom import Node, parse
from tests.verify.test_memory_plan_format import BENCH_128, BENCH_512, plan
from verify.bundle import verifier
from verify.bundle.errors import MemoryPlanInvalid, MemoryPlanMismatch
from verify.bundle.layout import REPORT_PAGE
from verify.bundle.page.charts import BAR_WIDTH, LABEL_WIDTH
from verify.bundle.page.html import page_bytes
from verify.bundle.page.measured import memory_section, mib
from verify.canonical import canonical_json
from verify.formats.base import strict_model
from verify.formats.manifest import ModuleManifest
from verify.formats.memory_plan import PLAN_PARTS, MemoryPlanDocument

THREADS = [77637536, 2968, 0, 6291456, 632836, 4096, 6720, 5310464, 2048, 0, 67584]


@pytest.fixture(autouse=True)
def _fake_inspection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verifier, "default_deriver", lambda: fake_report)


def plan_of(manifest: ModuleManifest) -> dict[str, Any]:
    """A plan of every wasm lane of `manifest`, about its release."""
    lanes = [(a.id, a.sha256) for a in manifest.artifacts]
    return plan_for(manifest.version, manifest.source_revision, lanes)


def plan_for(version: str, revision: str, lanes: list[tuple[str, str]]) -> dict[str, Any]:
    """A plan of every (lane, artifact SHA-256) of `lanes`: the bench model at 128 and 512,
    a threads lane with 2 workers."""
    plans = []
    for lane, sha256 in lanes:
        threads = "threads" in lane
        for context, parts in ((128, BENCH_128), (512, THREADS if threads else BENCH_512)):
            row = plan(lane, context, parts, workers=2 if threads else 0)
            plans.append({**row, "artifact_sha256": sha256})
    return {
        "schema": "tinyrustlm.memory-plan.v1",
        "release_version": version,
        "source_revision": revision,
        "method": "tr_plan_header of each final artifact",
        "models": [
            {
                "preset": "bench",
                "seed": 7,
                "sha256": "ab" * 32,
                "file_bytes": 77453216,
                "max_context": 512,
                "tier": "f32",
            }
        ],
        "plans": plans,
    }


def _section(doc: dict[str, Any]) -> tuple[MemoryPlanDocument, Node]:
    model = strict_model(MemoryPlanDocument, doc)
    return model, parse(page_bytes(memory_section(model)))


def _fixture() -> dict[str, Any]:
    lanes = [("simd128-wasm32", "cd" * 32), ("simd128-threads-wasm32", "ef" * 32)]
    return plan_for("9.9.9", "0" * 40, lanes)


def test_every_part_of_every_plan_is_in_the_table_as_text() -> None:
    model, dom = _section(_fixture())
    for lane in model.lanes():
        table = dom.by_id(f"memory-plan-bench-{lane}")
        (body,) = table.find("tbody")
        rows = {
            tr.children[0].all_text(): [td.all_text() for td in tr.children[1:]]
            for tr in body.children
        }
        plans = [p for p in model.plans if p.lane == lane]
        for name in PLAN_PARTS:
            assert rows[name] == [mib(p.part(name)) for p in plans], (lane, name)
        assert rows["peak"] == [mib(p.peak) for p in plans]
        assert rows["peak prefill"] == [mib(p.peak_prefill) for p in plans]
        # and exact, in each cell's title
        kv = next(tr for tr in body.children if tr.children[0].all_text() == "kv")
        assert [td.attrs["title"] for td in kv.children[1:]] == [
            f"{p.part('kv')} bytes" for p in plans
        ]


def _bars(svg: Node) -> list[tuple[str, list[tuple[str, int, int]], int]]:
    """(label, [(part, x, width)], x where the total's text starts) of each bar."""
    texts = [n for n in svg.children if n.tag == "text"]
    labels = [t for t in texts if t.attrs.get("text-anchor") == "end"]
    bars = []
    for label in labels:
        y = int(label.attrs["y"] or 0) - 13
        segs = [
            (r.attrs["class"] or "", int(r.attrs["x"] or 0), int(r.attrs["width"] or 0))
            for r in svg.children
            if r.tag == "rect" and r.attrs.get("y") == str(y)
        ]
        (total,) = [
            t
            for t in texts
            if t.attrs.get("y") == label.attrs["y"] and "text-anchor" not in t.attrs
        ]
        bars.append((label.all_text(), segs, int(total.attrs["x"] or 0) - 6))
    return bars


def test_the_stacked_segments_add_up_to_each_bar() -> None:
    model, dom = _section(_fixture())
    top = max(sum(part.bytes for part in p.parts) for p in model.plans)
    svgs = dom.find("svg")
    assert len(svgs) == len(model.lanes())
    for svg, lane in zip(svgs, model.lanes(), strict=True):
        plans = [p for p in model.plans if p.lane == lane]
        bars = _bars(svg)
        assert [b[0] for b in bars] == [
            f"context {p.context}" + (f", {p.workers} workers" if p.workers else "") for p in plans
        ]
        for (_, segs, end), p in zip(bars, plans, strict=True):
            total = sum(part.bytes for part in p.parts)
            assert total == p.peak_prefill  # loaded in place: the parts sum to the prefill peak
            assert end - LABEL_WIDTH == round(BAR_WIDTH * total / top)
            # contiguous, in part order, and their widths add up to the bar within rounding
            x = LABEL_WIDTH
            for cls, at, width in segs:
                assert at == x, (cls, at, x)
                x += width
            assert x == end
            assert abs(sum(w for _, _, w in segs) - BAR_WIDTH * total / top) <= 0.5
            drawn = [cls.split()[-1].removeprefix("seg-") for cls, _, _ in segs]
            assert drawn == [n for n in PLAN_PARTS if n in drawn]
            assert drawn[0] == "weights" and "kv" in drawn
        # every value, exact to the MiB shown, in the chart's text alternative
        (desc,) = svg.find("desc")
        for p in plans:
            for part in p.parts:
                assert f"{part.name} {mib(part.bytes)} MiB" in desc.all_text()


def test_without_a_plan_the_page_says_so() -> None:
    dom = parse(page_bytes(memory_section(None)))
    assert "carries no memory plan" in dom.by_id("memory-absent").all_text()
    assert not dom.find("svg")


# -- in a bundle ---------------------------------------------------------------------------
def _manifest(bundle: Path) -> ModuleManifest:
    return ModuleManifest.model_validate_json((bundle / "manifest.json").read_bytes())


def test_a_bundle_with_a_plan_verifies_and_its_page_draws_it(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    h = pristine[0]
    bundle = copy_pristine(pristine, tmp_path)
    add_memory_plan(bundle, h, canonical_json(plan_of(_manifest(bundle))))
    verdict = h.verify(bundle)
    assert "memory plan: " in verdict.steps[12].detail
    dom = parse((bundle / REPORT_PAGE).read_bytes())
    assert not [n for n in dom.walk() if n.attrs.get("id") == "memory-absent"]
    for art in _manifest(bundle).artifacts:
        assert dom.by_id(f"memory-plan-bench-{art.id}")
    # the page is a function of the documents: the same bytes rendered again
    assert len(dom.by_id("memory").find("svg")) == len(_manifest(bundle).artifacts)


def _malformed(doc: dict[str, Any]) -> bytes:
    del doc["plans"][0]["parts"][3]  # a part dropped
    return canonical_json(doc)


def _swapped_contexts(doc: dict[str, Any]) -> bytes:
    first, second = doc["plans"][0], doc["plans"][1]
    first["context"], second["context"] = second["context"], first["context"]
    return canonical_json(doc)  # each plan's prompt transfer (4 bytes a token) is the other's


def _other_artifact(doc: dict[str, Any]) -> bytes:
    doc["plans"][0]["artifact_sha256"] = "ef" * 32
    return canonical_json(doc)


def _lane_left_out(doc: dict[str, Any]) -> bytes:
    lane = doc["plans"][0]["lane"]
    doc["plans"] = [p for p in doc["plans"] if p["lane"] != lane]
    return canonical_json(doc)


def _other_release(doc: dict[str, Any]) -> bytes:
    doc["release_version"] = "9.9.8"
    return canonical_json(doc)


REFUSED = [
    ("a part dropped", _malformed, MemoryPlanInvalid),
    ("contexts swapped", _swapped_contexts, MemoryPlanInvalid),
    ("an artifact not the manifest's", _other_artifact, MemoryPlanMismatch),
    ("a wasm lane left out", _lane_left_out, MemoryPlanMismatch),
    ("another release", _other_release, MemoryPlanMismatch),
]


@pytest.mark.parametrize(
    ("make", "error"), [(m, e) for _, m, e in REFUSED], ids=[n for n, _, _ in REFUSED]
)
def test_a_plan_verify_refuses_has_its_id(
    pristine: tuple[Harness, Path], tmp_path: Path, make: Any, error: type[Exception]
) -> None:
    h = pristine[0]
    bundle = copy_pristine(pristine, tmp_path)
    add_memory_plan(bundle, h, make(plan_of(_manifest(bundle))), page=False)
    with pytest.raises(error) as caught:
        h.verify(bundle)
    assert caught.value.error_id in ("memory-plan.invalid", "memory-plan.mismatch")  # type: ignore[attr-defined]
    assert "memory-plan.json" in (caught.value.where or "")  # type: ignore[attr-defined]
