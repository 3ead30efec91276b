"""Statistics of `nox -s bench` (pure functions, no I/O): every figure is the median of its
interleaved repetitions with the min-max spread; target ratios; `--compare` against a saved run.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Target:
    """One target of the issue: `measured` is the ratio named by `numerator / denominator`."""

    name: str
    numerator: str
    denominator: str
    at_least: float


def spread(samples: Sequence[float]) -> dict[str, Any]:
    """{median, min, max, samples} of one figure's repetitions."""
    values = [float(s) for s in samples]
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "samples": values,
    }


@dataclass(frozen=True)
class Figure:
    """A figure reduced to what comparisons need: median and the measured range."""

    median: float
    low: float
    high: float


def ratio(num: Figure | None, den: Figure | None) -> tuple[float, float, float] | None:
    """(median ratio, lowest, highest ratio the spreads allow), or None if either is missing."""
    if num is None or den is None or den.median <= 0 or den.low <= 0:
        return None
    return num.median / den.median, num.low / den.high, num.high / den.low


def target_rows(figures: dict[str, Figure], targets: Iterable[Target]) -> list[dict[str, Any]]:
    rows = []
    for t in targets:
        r = ratio(figures.get(t.numerator), figures.get(t.denominator))
        rows.append(
            {
                "target": t.name,
                "numerator": t.numerator,
                "denominator": t.denominator,
                "at_least": t.at_least,
                "measured": None if r is None else r[0],
                "measured_range": None if r is None else [r[1], r[2]],
                "met": None if r is None else r[0] >= t.at_least,
            }
        )
    return rows


def figures_of(doc: dict[str, Any]) -> dict[str, Figure]:
    """Every named figure of a bench document (v1: the median only, no spread; v2: spreads)."""

    def fig(obj: dict[str, Any], key: str) -> Figure | None:
        value = obj.get(key)
        if not isinstance(value, int | float):
            return None
        low = obj.get(f"{key}_min", value)
        high = obj.get(f"{key}_max", value)
        return Figure(float(value), float(low), float(high))

    out: dict[str, Figure] = {}
    for lane, shapes in doc.get("kernels", {}).items():
        for shape, m in shapes.items():
            if (f := fig(m, "gbps")) is not None:
                out[f"kernel:{lane}:{shape}"] = f
    for run in doc.get("runs", []):
        if (f := fig(run, "tokens_per_s")) is not None:
            out[f"run:{run['name']}"] = f
    for run in doc.get("prefill_runs", []):
        for key, name in (("tokens_per_s", "prefill"), ("ttft_ms", "ttft")):
            if (f := fig(run, key)) is not None:
                out[f"{name}:{run['name']}"] = f
    for run in (doc.get("kv_reuse") or {}).get("runs", []):  # v4: times, like ttft
        for key in ("reuse", "scratch"):
            if (f := fig(run, f"{key}_ttft_ms")) is not None:
                out[f"ttft:kv-{key}:{run['name']}"] = f
    for threads, m in (doc.get("bandwidth") or {}).items():
        if (f := fig(m, "gbps")) is not None:
            out[f"bandwidth:{threads}-thread"] = f
    if (f := fig(doc, "roofline_1thread_tokens_per_s")) is not None:
        out["roofline:1-thread"] = f
    if isinstance(doc.get("roofline_tokens_per_s"), int | float):
        roof = float(doc["roofline_tokens_per_s"])
        out["roofline"] = Figure(
            roof,
            float(doc.get("roofline_tokens_per_s_min", roof)),
            float(doc.get("roofline_tokens_per_s_max", roof)),
        )
    return out


def compare(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """Per figure in both runs: new/old median ratio, flagged when the two measured ranges do
    not overlap (a change beyond the spread of either run); `ttft:` figures are times (lower
    is better), every other figure is a rate (higher is better)."""
    a, b = figures_of(old), figures_of(new)
    rows = []
    for key in sorted(a.keys() & b.keys()):
        o, n = a[key], b[key]
        if o.median <= 0:
            continue
        beyond = n.low > o.high or n.high < o.low
        higher = n.median > o.median
        better = higher != key.startswith("ttft:")
        rows.append(
            {
                "figure": key,
                "old": o.median,
                "new": n.median,
                "ratio": n.median / o.median,
                "flag": ("better" if better else "worse") if beyond else "",
            }
        )
    return rows


def compare_table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'figure':<40}{'old':>10}{'new':>10}{'new/old':>9}  beyond spread"]
    for r in rows:
        lines.append(
            f"{r['figure']:<40}{r['old']:>10.2f}{r['new']:>10.2f}{r['ratio']:>9.2f}  {r['flag']}"
        )
    return "\n".join(lines)
