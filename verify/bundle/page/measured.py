"""Speed and memory: what the release measured, or a plain statement that it measured nothing.

Speed comes from the conformance report's speed table (medians with min..max over its runs);
a release carries no bench document of its own today, nor a memory plan, and the page says so
rather than leaving a blank."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from verify.bundle.page.charts import bar_chart
from verify.bundle.page.html import el, prose, section, table
from verify.formats.conformance import AnyReport


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


def memory_section() -> ET.Element:
    return section(
        "memory",
        el("h2", "Memory"),
        el(
            "p",
            "This release carries no memory plan: each lane's declared memory is in the lanes "
            "table; the stacked plan per lane and context is not yet a bundle document.",
            cls="absent",
            id="memory-absent",
        ),
    )
