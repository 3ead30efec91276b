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
    svg = el(
        "svg",
        el("title", title),
        el("desc", desc),
        xmlns="http://www.w3.org/2000/svg",
        role="img",
        width=str(width),
        height=str(height),
        viewBox=f"0 0 {width} {height}",
        aria_label=f"{title}: {desc}",
        cls="chart",
    )
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
