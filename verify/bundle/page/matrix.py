"""The conformance matrix: engine (and isolation) x lane x tier, the cases each passed and
whether the engine's own lane choice picked that lane."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from verify.bundle.page.html import el, section, table
from verify.bundle.page.inputs import Release
from verify.formats.conformance import AnyReport


def _engine_label(engine: str, version: str, isolated: bool | None) -> str:
    where = "" if isolated is None else (" isolated" if isolated else " not isolated")
    return f"{engine} {version}{where}"


def matrix_section(release: Release, report: AnyReport | None) -> ET.Element:
    head = el("h2", "Conformance")
    if report is None:
        return section(
            "conformance",
            head,
            el(
                "p",
                "This release carries no conformance report (released with --no-conformance, "
                "or no oracle ran on the release machine).",
                cls="absent",
                id="conformance-absent",
            ),
        )
    tiers = sorted({r.tier for r in report.rows})
    lanes = [a.id for a in release.manifest.artifacts] + [
        a.id for a in release.manifest.native_artifacts
    ]
    lanes += sorted({r.lane for r in report.rows} - set(lanes))
    columns = [(lane, tier) for lane in lanes for tier in tiers]
    cells: dict[tuple[str, tuple[str, str]], ET.Element] = {}
    engines: dict[str, None] = {}
    for row in sorted(report.rows, key=lambda r: (r.engine, str(r.isolated))):
        label = _engine_label(row.engine, row.engine_version, row.isolated)
        engines.setdefault(label)
        total = row.cases_passed + row.cases_failed
        text = f"{row.outcome} {row.cases_passed}/{total}" + (" ★ chosen" if row.chosen else "")
        cells[(label, (row.lane, row.tier))] = el(
            "td", text, cls=row.outcome, title=row.detail or row.outcome
        )
    rows = [
        [el("th", label, scope="row")]
        + [cells.get((label, col), el("td", "—", cls="muted")) for col in columns]
        for label in engines
    ]
    passed = sum(r.outcome == "pass" for r in report.rows)
    notes = el("ul", *(el("li", n) for n in report.notes)) if report.notes else None
    return section(
        "conformance",
        head,
        el(
            "p",
            f"{len(report.rows)} rows, {passed} pass; {report.cases.count} seeded cases per "
            "row against the native scalar oracle. ★ marks the lane the engine's own choice "
            "picked.",
        ),
        table(["engine", *(f"{lane} · {tier}" for lane, tier in columns)], rows, id="matrix"),
        notes,
    )
