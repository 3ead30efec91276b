"""The lanes section: one row per artifact, from the signed manifest and the verification
report (what the verifier found in the final bytes)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from verify.bundle.page.charts import bar_chart
from verify.bundle.page.html import el, section, table
from verify.bundle.page.inputs import Release
from verify.formats.report import ArtifactReport, MemorySummary

WASM_PAGE = 65536


def memory_text(memories: Sequence[MemorySummary]) -> str:
    """'17 pages (1.06 MiB) .. no maximum' per memory; 'shared', 'imported env.memory'."""
    parts = []
    for m in memories:
        size = f"{m.initial_pages} pages ({m.initial_pages * WASM_PAGE / 2**20:.2f} MiB)"
        most = "no maximum" if m.maximum_pages is None else f"max {m.maximum_pages} pages"
        flags = [w for w, on in (("shared", m.shared), ("memory64", m.memory64)) if on]
        where = f"imported {m.imported}" if m.imported else "defined"
        parts.append(", ".join([size, most, where, *flags]))
    return "; ".join(parts) or "none"


def proposal_text(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items())) or "none"


def sha_cell(sha256: str) -> ET.Element:
    """The first 16 hex digits (the artifact's file name has them); the whole in the title and
    in the provenance section."""
    return el("td", el("code", f"{sha256[:16]}…", title=sha256))


def exports_cell(exports: Sequence[str]) -> ET.Element:
    return el("td", el("details", el("summary", f"{len(exports)} exports"), ", ".join(exports)))


def findings_cell(artifact: ArtifactReport) -> ET.Element:
    failing = [f.id for f in artifact.findings if not f.ok]
    if failing:
        return el("td", f"{len(failing)} failing: {', '.join(failing)}", cls="fail")
    return el("td", f"{len(artifact.findings)} pass", cls="pass")


def wasm_rows(release: Release) -> list[list[ET.Element | str]]:
    found = {a.lane: a for a in release.report.artifacts}
    rows: list[list[ET.Element | str]] = []
    for art in release.manifest.artifacts:
        rep = found.get(art.id)
        w = rep.wasm if rep is not None else None
        rows.append(
            [
                el("th", el("code", art.id), scope="row"),
                el("td", f"{art.size:,}", cls="num"),
                sha_cell(art.sha256),
                ", ".join(art.required_features) or "mvp only",
                ", ".join(w.declared_target_features) if w else "—",
                proposal_text(w.proposal_counts) if w else "—",
                ", ".join(w.imports) if w and w.imports else "none",
                exports_cell(w.exports) if w else "—",
                memory_text(w.memories) if w else "—",
                findings_cell(rep) if rep is not None else el("td", "not inspected", cls="fail"),
            ]
        )
    return rows


def native_rows(release: Release) -> list[list[ET.Element | str]]:
    found = {a.lane: a for a in release.report.artifacts}
    rows: list[list[ET.Element | str]] = []
    for art in release.manifest.native_artifacts:
        rep = found.get(art.id)
        n = rep.native if rep is not None else None
        isa = ", ".join(f"{k} {v}" for k, v in sorted(n.isa_groups.items())) if n else "—"
        rows.append(
            [
                el("th", el("code", art.id), scope="row"),
                el("td", f"{art.size:,}", cls="num"),
                sha_cell(art.sha256),
                f"{n.format} {n.machine}" if n else "—",
                ", ".join(n.libraries) if n else "—",
                (n.max_glibc or "—") if n else "—",
                isa,
                findings_cell(rep) if rep is not None else el("td", "not inspected", cls="fail"),
            ]
        )
    return rows


def lanes_section(release: Release) -> ET.Element:
    sizes = [(a.id, float(a.size), f"{a.size:,} B") for a in release.manifest.artifacts]
    sizes += [(a.id, float(a.size), f"{a.size:,} B") for a in release.manifest.native_artifacts]
    return section(
        "lanes",
        el("h2", "Lanes"),
        el(
            "p",
            "Each WebAssembly lane is its own module; the verifier read every opcode of the "
            "final bytes. The allowlist is the lane's policy; the features found are the "
            "module's target_features section; opcode counts are by proposal.",
        ),
        table(
            (
                "lane",
                "bytes",
                "SHA-256",
                "feature allowlist",
                "features found",
                "opcodes by proposal",
                "imports",
                "exports",
                "memory declared",
                "findings",
            ),
            wasm_rows(release),
            id="wasm-lanes",
        ),
        el("h3", "Native binaries"),
        table(
            (
                "target",
                "bytes",
                "SHA-256",
                "format",
                "libraries",
                "max glibc",
                "ISA groups",
                "findings",
            ),
            native_rows(release),
            id="native-lanes",
        ),
        bar_chart("Artifact sizes in bytes", sizes),
    )
