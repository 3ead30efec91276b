"""Supply chain: the SBOM's components (versions, licences), the provenance's subjects, and
where rebuild attestations are judged."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from verify.bundle.page.html import el, prose, section, table
from verify.bundle.page.inputs import Release

NOT_DECLARED = "not declared"


def sbom_section(release: Release) -> ET.Element:
    parts = [c for c in release.sbom.components if c.type != "file"]
    files = [c for c in release.sbom.components if c.type == "file"]
    rows = [
        [
            c.type,
            el("code", c.name),
            c.version or "—",
            el("td", c.licence_text() or NOT_DECLARED, cls="" if c.licence_text() else "muted"),
            c.scope or "required",
            el("code", c.purl) if c.purl else "—",
        ]
        for c in parts
    ]
    return section(
        "sbom",
        el("h2", "SBOM"),
        el(
            "p",
            f"CycloneDX 1.6: {len(parts)} components (the crates, the pinned toolchain's Debian "
            f"packages with scope excluded, the Python tools) and {len(files)} files.",
        ),
        table(("type", "name", "version", "licence", "scope", "purl"), rows, id="sbom-components"),
        el(
            "details",
            el("summary", f"{len(files)} file components"),
            el("ul", *(el("li", el("code", c.name)) for c in files)),
        ),
    )


def provenance_section(subjects: Sequence[tuple[str, str]], page: str) -> ET.Element:
    rows = [[el("code", path), el("code", sha)] for path, sha in subjects]
    rows.append(
        [el("code", page), el("td", "this page (its digest is in the statement)", cls="muted")]
    )
    return section(
        "provenance",
        el("h2", "Provenance and rebuilds"),
        el(
            "p",
            f"The in-toto statement (SLSA Provenance v1) in provenance.sigstore.json names "
            f"{len(rows)} subjects: every signed file of the bundle.",
        ),
        el(
            "details",
            el("summary", f"{len(rows)} subjects"),
            table(("file", "SHA-256"), rows, id="subjects"),
        ),
        prose(
            "p",
            "Rebuild attestations are not part of the bundle: third parties publish them and "
            "`tinyrustlm-verify bundle --rebuilders FILE --require-rebuilds K "
            "--rebuild-attestation FILE ...` counts them (step 14); the page "
            "`tinyrustlm-verify report` writes lists what it counted.",
        ),
    )
