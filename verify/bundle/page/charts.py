"""Inline SVG bar charts with a text alternative: no script, no style attribute, no request.

A chart is an <svg role="img"> whose <title> says what it shows and whose <desc> lists every
value; the same values are in a table next to it, so a reader without images loses nothing.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from verify.bundle.page.html import el

BAR_HEIGHT = 18
GAP = 6
LABEL_WIDTH = 220
BAR_WIDTH = 420
VALUE_WIDTH = 140


def bar_chart(title: str, rows: Sequence[tuple[str, float, str]]) -> ET.Element:
    """Horizontal bars, one per (label, value, value text), scaled to the largest value."""
    top = max((v for _, v, _ in rows), default=0.0)
    height = len(rows) * (BAR_HEIGHT + GAP) + GAP
    width = LABEL_WIDTH + BAR_WIDTH + VALUE_WIDTH
    desc = "; ".join(f"{label}: {text}" for label, _, text in rows)
    svg = _svg(title, desc, width, height, "chart")
    for i, (label, value, text) in enumerate(rows):
        y = GAP + i * (BAR_HEIGHT + GAP)
        length = 0 if top <= 0 else max(1, round(BAR_WIDTH * value / top))
        svg.append(el("text", label, x=str(LABEL_WIDTH - 8), y=str(y + 13), text_anchor="end"))
        svg.append(
            el(
                "rect",
                x=str(LABEL_WIDTH),
                y=str(y),
                width=str(length),
                height=str(BAR_HEIGHT),
                cls="bar",
            )
        )
        svg.append(el("text", text, x=str(LABEL_WIDTH + length + 6), y=str(y + 13)))
    return svg


LEGEND_COLUMNS = 4
LEGEND_ROW = 18
LEGEND_CELL = (LABEL_WIDTH + BAR_WIDTH + VALUE_WIDTH) // LEGEND_COLUMNS


def segment_edges(values: Sequence[float], top: float) -> list[int]:
    """The x offsets (0 .. BAR_WIDTH) where each stacked segment starts, then where the last
    ends: the running sums scaled to `top` and rounded once each, so the segments' widths
    always add up to the bar's rounded total (no rounding error accumulates)."""
    edges, total = [0], 0.0
    for value in values:
        total += value
        edges.append(0 if top <= 0 else round(BAR_WIDTH * total / top))
    return edges


def stacked_bar_chart(
    title: str,
    parts: Sequence[str],
    rows: Sequence[tuple[str, Sequence[tuple[float, str]], str]],
    top: float | None = None,
) -> ET.Element:
    """Horizontal bars of stacked segments: one bar per (label, segments, total text), each
    segment a (value, value text) of `parts` in order (CSS class `seg-<part>`), scaled to `top`
    (default: the largest bar); a legend of the parts under the bars."""
    totals = [sum(v for v, _ in segments) for _, segments, _ in rows]
    top = max(totals, default=0.0) if top is None else top
    bars_height = len(rows) * (BAR_HEIGHT + GAP) + GAP
    legend_rows = -(-len(parts) // LEGEND_COLUMNS)
    height = bars_height + legend_rows * LEGEND_ROW + GAP
    width = LABEL_WIDTH + BAR_WIDTH + VALUE_WIDTH
    desc = "; ".join(
        f"{label}: {total} ("
        + ", ".join(f"{part} {text}" for part, (_, text) in zip(parts, segments, strict=True))
        + ")"
        for label, segments, total in rows
    )
    svg = _svg(title, desc, width, height, "chart stacked")
    for i, (label, segments, total) in enumerate(rows):
        y = GAP + i * (BAR_HEIGHT + GAP)
        edges = segment_edges([v for v, _ in segments], top)
        svg.append(el("text", label, x=str(LABEL_WIDTH - 8), y=str(y + 13), text_anchor="end"))
        for k, (part, (_, text)) in enumerate(zip(parts, segments, strict=True)):
            start, end = edges[k], edges[k + 1]
            if end == start:
                continue  # too small to draw at this scale: in the desc and the table
            svg.append(
                el(
                    "rect",
                    el("title", f"{label}, {part}: {text}"),
                    x=str(LABEL_WIDTH + start),
                    y=str(y),
                    width=str(end - start),
                    height=str(BAR_HEIGHT),
                    cls=f"seg seg-{part}",
                )
            )
        svg.append(el("text", total, x=str(LABEL_WIDTH + edges[-1] + 6), y=str(y + 13)))
    for i, part in enumerate(parts):
        x = (i % LEGEND_COLUMNS) * LEGEND_CELL + 8
        y = bars_height + (i // LEGEND_COLUMNS) * LEGEND_ROW
        svg.append(
            el("rect", x=str(x), y=str(y + 3), width="12", height="12", cls=f"seg seg-{part}")
        )
        svg.append(el("text", part, x=str(x + 18), y=str(y + 13)))
    return svg


def _svg(title: str, desc: str, width: int, height: int, cls: str) -> ET.Element:
    """An empty <svg role="img"> whose <title> and <desc> (and aria-label) say what it shows."""
    return el(
        "svg",
        el("title", title),
        el("desc", desc),
        xmlns="http://www.w3.org/2000/svg",
        role="img",
        width=str(width),
        height=str(height),
        viewBox=f"0 0 {width} {height}",
        aria_label=f"{title}: {desc}",
        cls=cls,
    )
