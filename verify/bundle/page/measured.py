"""Speed and memory: what the release measured or planned, or a plain statement that it did not.

Speed comes from the conformance report's speed table (medians with min..max over its runs);
a release carries no bench document of its own today, and the page says so rather than leaving
a blank. Memory comes from the release's memory plan (memory-plan.json): per model and wasm
lane, a bar per context stacking the plan's parts, beside a table of the same values; a bundle
without one (released before it existed, or with no wasm lane) says so."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from verify.bundle.page.charts import bar_chart, stacked_bar_chart
from verify.bundle.page.html import el, prose, section, table
from verify.formats.conformance import AnyReport
from verify.formats.memory_plan import PHASE_PARTS, PLAN_PARTS, LanePlan, MemoryPlanDocument

MIB = 1 << 20


def speed_section(report: AnyReport | None) -> ET.Element:
    head = el("h2", "Speed")
    rows = list(report.speed) if report is not None else []
    absent = prose(
        "p",
        "This release carries no bench document: tok/s per lane and tier, prefill against "
        "decode and the roofline are measured by `nox -s bench`, outside the bundle.",
        cls="absent",
        id="bench-absent",
    )
    if not rows:
        return section("speed", head, absent)
    body: list[list[ET.Element | str]] = [
        [
            el("th", f"{r.engine} {r.engine_version}", scope="row"),
            el("code", r.lane),
            r.model,
            el("td", str(r.runs), cls="num"),
            el(
                "td",
                f"{r.decode_tps_median:.1f} ({r.decode_tps_min:.1f}–{r.decode_tps_max:.1f})",
                cls="num",
            ),
            el(
                "td", f"{r.ttft_ms_median:.1f} ({r.ttft_ms_min:.1f}–{r.ttft_ms_max:.1f})", cls="num"
            ),
        ]
        for r in rows
    ]
    chart = bar_chart(
        "Decode tokens per second (median)",
        [
            (f"{r.engine} {r.lane}", r.decode_tps_median, f"{r.decode_tps_median:.1f} tok/s")
            for r in rows
        ],
    )
    return section(
        "speed",
        head,
        el("p", "From the conformance run: medians, with min–max over the runs."),
        table(
            ("engine", "lane", "model", "runs", "decode tok/s", "first token ms"),
            body,
            id="speed-table",
        ),
        chart,
        absent,
    )


def mib(n: int) -> str:
    """Bytes as MiB, three decimals (the table's and the chart's unit)."""
    return f"{n / MIB:.3f}"


def _bar_label(plan: LanePlan) -> str:
    workers = f", {plan.workers} workers" if plan.workers else ""
    return f"context {plan.context}{workers}"


def _lane_plan(model: str, lane: str, plans: list[LanePlan], top: int) -> ET.Element:
    """One lane's chart (a bar per context) beside its table (a column per context)."""
    chart = stacked_bar_chart(
        f"{lane}, {model} model: the memory plan's parts by context (MiB)",
        PLAN_PARTS,
        [
            (
                _bar_label(p),
                [(float(part.bytes), f"{mib(part.bytes)} MiB") for part in p.parts],
                f"{mib(sum(part.bytes for part in p.parts))} MiB",
            )
            for p in plans
        ],
        top=float(top),
    )
    peaks = [*PHASE_PARTS, "peak"]
    rows: list[list[ET.Element | str]] = [
        [
            el("th", el("code", name), scope="row"),
            *(el("td", mib(p.part(name)), cls="num", title=f"{p.part(name)} bytes") for p in plans),
        ]
        for name in PLAN_PARTS
    ]
    rows += [
        [
            el("th", name.replace("_", " "), scope="row"),
            *(
                el("td", mib(getattr(p, name)), cls="num", title=f"{getattr(p, name)} bytes")
                for p in plans
            ),
        ]
        for name in peaks
    ]
    ident = f"memory-plan-{model}-{lane}"
    return el(
        "div",
        el("h4", el("code", lane)),
        el(
            "div",
            chart,
            table(("part, MiB", *(_bar_label(p) for p in plans)), rows, id=ident),
            cls="plan",
        ),
    )


def memory_section(plan: MemoryPlanDocument | None = None) -> ET.Element:
    head = el("h2", "Memory")
    if plan is None:
        return section(
            "memory",
            head,
            el(
                "p",
                "This release carries no memory plan: each lane's declared memory is in the "
                "lanes table; the stacked plan per lane and context is not a document of this "
                "bundle.",
                cls="absent",
                id="memory-absent",
            ),
        )
    models = table(
        ("model", "seed", "tier", "file MiB", "max context", "SHA-256"),
        (
            [
                el("th", m.preset, scope="row"),
                el("td", str(m.seed), cls="num"),
                m.tier,
                el("td", mib(m.file_bytes), cls="num", title=f"{m.file_bytes} bytes"),
                el("td", str(m.max_context), cls="num"),
                el("code", m.sha256),
            ]
            for m in plan.models
        ),
        id="memory-models",
    )
    body: list[ET.Element | str | None] = [
        head,
        prose(
            "p",
            "What each wasm lane plans to hold, asked of the artifact's own bytes by the "
            "release (`memory-plan.json`: `tr_plan_header` over the model's header and "
            "directory, loaded in place as `js/loader.js` loads it, so no load copy). A bar "
            "stacks the plan's eleven parts at one context; its length is their sum, the "
            "prefill peak. The table beside it gives every part and the three phase peaks "
            "in MiB (hover a cell for the bytes).",
        ),
        el("p", plan.method, cls="muted"),
        models,
    ]
    for model in plan.models:
        of_model = [p for p in plan.plans if p.model == model.preset]
        top = max((sum(part.bytes for part in p.parts) for p in of_model), default=0)
        body.append(el("h3", f"{model.preset} model"))
        for lane in dict.fromkeys(p.lane for p in of_model):
            body.append(
                _lane_plan(model.preset, lane, [p for p in of_model if p.lane == lane], top)
            )
    return section("memory", *body)
