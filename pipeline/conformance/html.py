"""The report as one static HTML page: engines x (lane, tier), coloured by result, then the
details."""

from __future__ import annotations

from html import escape

from verify.formats.conformance import ConformanceReport, ConformanceRow, TierRow

COLOURS = {"pass": "#b7e4b0", "fail": "#f4a6a6", "not-run": "#dddddd"}


def _engine_label(row: ConformanceRow) -> str:
    if row.isolated is None:
        return row.engine
    return f"{row.engine} ({'COOP/COEP' if row.isolated else 'not isolated'})"


def _cell(row: ConformanceRow | None) -> str:
    if row is None:
        return "<td>—</td>"
    mark = " ★" if row.chosen and row.engine_kind == "browser" else ""
    total = row.cases_passed + row.cases_failed
    text = f"{row.outcome}{mark}<br><small>{row.cases_passed}/{total}</small>"
    title = escape(row.detail or (row.first_failure.model_dump_json() if row.first_failure else ""))
    return f'<td style="background:{COLOURS[row.outcome]}" title="{title}">{text}</td>'


def _column(row: TierRow) -> str:
    return f"{row.lane} · {row.tier}"


def render(report: ConformanceReport) -> str:
    lanes = list(dict.fromkeys(_column(r) for r in report.rows))
    engines = list(dict.fromkeys(_engine_label(r) for r in report.rows))
    grid = {(_engine_label(r), _column(r)): r for r in report.rows}
    versions = {_engine_label(r): r.engine_version for r in report.rows}
    head = "".join(f"<th>{escape(lane)}</th>" for lane in lanes)
    body = "".join(
        f"<tr><th>{escape(e)}<br><small>{escape(versions[e])}</small></th>"
        + "".join(_cell(grid.get((e, lane))) for lane in lanes)
        + "</tr>"
        for e in engines
    )
    failures = (
        "".join(
            f"<li><b>{escape(_engine_label(r))} / {escape(_column(r))}</b>: {escape(r.detail)} "
            f"{escape(r.first_failure.model_dump_json()) if r.first_failure else ''}</li>"
            for r in report.rows
            if r.outcome == "fail"
        )
        or "<li>none</li>"
    )
    speed = "".join(
        f"<tr><td>{escape(s.engine)}</td><td>{escape(s.lane)}</td><td>{escape(s.model)}</td>"
        f"<td>{s.ttft_ms_median:.1f} ({s.ttft_ms_min:.1f}–{s.ttft_ms_max:.1f})</td>"
        f"<td>{s.decode_tps_median:.1f} ({s.decode_tps_min:.1f}–{s.decode_tps_max:.1f})</td>"
        f"<td>{s.runs}</td></tr>"
        for s in report.speed
    )
    c = report.cases
    models = ", ".join(
        f"<code>{escape(m.model)}</code> ({escape(m.tier)} tier; oracle stops "
        f"{escape(str(m.oracle_stops))})"
        for m in report.models
    )
    notes = "".join(f"<li>{escape(n)}</li>" for n in report.notes)
    return f"""<!doctype html>
<meta charset="utf-8">
<title>tinyrustlm {escape(report.release_version)} conformance</title>
<style>body{{font-family:sans-serif}} table{{border-collapse:collapse}}
td,th{{border:1px solid #999;padding:4px 8px;text-align:center}}</style>
<h1>tinyrustlm {escape(report.release_version)}: conformance matrix</h1>
<p>revision {escape(report.source_revision)}; {c.count} cases (seed {c.seed}, sha256
{c.sha256[:16]}…) on the models {models}; oracle {escape(c.oracle_lane)}
({c.oracle_sha256[:16]}…). ★ = the lane the engine's lane choice picked. Hover a cell for its
detail.</p>
<table><tr><th>engine</th>{head}</tr>{body}</table>
<h2>Failures</h2><ul>{failures}</ul>
<h2>Speed (medians of runs, min–max; measured, never asserted)</h2>
<table><tr><th>engine</th><th>lane</th><th>model</th><th>first token ms</th>
<th>decode tokens/s</th><th>runs</th></tr>{speed}</table>
<h2>Notes</h2><ul>{notes}</ul>
"""
