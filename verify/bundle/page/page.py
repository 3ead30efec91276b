"""report.html: a release a reviewer can see, from the bundle's signed documents only.

    render_page(inputs)                 the page every bundle ships (report.html), re-derived
                                        byte for byte by `verify bundle` (step 15)
    render_page(inputs, verified=view)  the same page with what THIS verifier established
                                        (signers against its trust policy, each step's
                                        verdict, when): `tinyrustlm-verify report`

The shipped page depends on nothing but the documents: no signature (co-signers add theirs
after the page is written), no clock, no path, no trust policy. One file; no script, no
request (a strict CSP in the page says so); inline SVG with text alternatives; dark mode and
print from the style sheet.
"""

from __future__ import annotations

import hashlib
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from verify.bundle.layout import ATTESTED_FIXED_FILES, OPTIONAL_ATTESTED_FILES, REPORT_PAGE
from verify.bundle.page.diff import diff_section
from verify.bundle.page.html import el, page_bytes, prose, section, style_sheet, table
from verify.bundle.page.inputs import PageInputs, Release
from verify.bundle.page.lanes import lanes_section
from verify.bundle.page.matrix import matrix_section
from verify.bundle.page.measured import memory_section, speed_section
from verify.bundle.page.previous import check_previous
from verify.bundle.page.style import CSP, CSS
from verify.bundle.page.supply import provenance_section, sbom_section
from verify.bundle.step_titles import ON_REQUEST_STEPS, STEP_TITLES

SECTIONS = (
    ("summary", "Summary"),
    ("verification", "Verification"),
    ("lanes", "Lanes"),
    ("diff", "Changes"),
    ("conformance", "Conformance"),
    ("speed", "Speed"),
    ("memory", "Memory"),
    ("sbom", "SBOM"),
    ("provenance", "Provenance"),
)


@dataclass(frozen=True)
class VerifiedView:
    """What one verifier established about the bundle (never part of the shipped page)."""

    at_epoch: int
    signers: Sequence[tuple[str, str]]  # (keyid, role) of every counted manifest signer
    threshold: int  # the trust policy's threshold for the manifest
    steps: Sequence[tuple[int, str, str]]  # (number, title, detail) of every step that ran


def utc(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def subjects_of(files: Mapping[str, bytes], release: Release) -> list[tuple[str, str]]:
    """The provenance statement's subjects but the page itself: every listed file (from the
    manifest) and every attested document present, with its SHA-256."""
    subjects = list(release.manifest.listed_files())
    for name in (*ATTESTED_FIXED_FILES, *OPTIONAL_ATTESTED_FILES):
        if name != REPORT_PAGE and name in files:
            subjects.append((name, hashlib.sha256(files[name]).hexdigest()))
    return subjects


def _facts(pairs: Sequence[tuple[str, ET.Element | str]]) -> ET.Element:
    dl = el("dl", cls="facts")
    for term, value in pairs:
        dl.append(el("dt", term))
        dl.append(el("dd", value))
    return dl


def summary_section(release: Release, verified: VerifiedView | None) -> ET.Element:
    m = release.manifest
    compiler = f"rustc {m.compiler.rustc}, LLVM {m.compiler.llvm}" if m.compiler else "not recorded"
    facts: list[tuple[str, ET.Element | str]] = [
        ("version", m.version),
        ("source revision", el("code", m.source_revision)),
        ("build id", el("code", m.build_id)),
        ("key class", el("span", m.key_class, cls="fail" if m.key_class == "development" else "")),
        ("built at (SOURCE_DATE_EPOCH)", utc(m.source_date_epoch)),
        ("expires", utc(m.expires_epoch)),
        ("compiler", compiler),
        ("toolchain.lock SHA-256", el("code", m.toolchain_lock_sha256)),
        (
            "artifacts",
            f"{len(m.artifacts)} wasm, {len(m.native_artifacts)} native, "
            f"{len(m.js_files)} JS files",
        ),
    ]
    if m.disabled_lanes:
        facts.append(("disabled lanes", ", ".join(m.disabled_lanes)))
    if m.unsmoked_lanes:
        facts.append(("shipped without a self-test", ", ".join(m.unsmoked_lanes)))
    if verified is None:
        signers: ET.Element = prose(
            "p",
            "Signatures are not on this page: co-signers add theirs after it is written. "
            "`tinyrustlm-verify bundle` counts them against your trust policy's threshold "
            "(step 2); `tinyrustlm-verify report` writes this page with the signers it counted.",
            id="signers-absent",
        )
    else:
        signers = el(
            "div",
            el(
                "p",
                f"{len(verified.signers)} distinct signer(s) of the manifest counted, the trust "
                f"policy's threshold is {verified.threshold}:",
            ),
            table(
                ("keyid", "role"), ([el("code", k), r] for k, r in verified.signers), id="signers"
            ),
        )
    return section("summary", el("h2", "Summary"), _facts(facts), signers)


def verification_section(inputs: PageInputs, verified: VerifiedView | None) -> ET.Element:
    report = inputs.release.report
    findings = sum(len(a.findings) for a in report.artifacts)
    failing = [f"{a.lane}: {f.id}" for a in report.artifacts for f in a.findings if not f.ok]
    release_checks = el(
        "p",
        f"The release's own inspection: {len(report.artifacts)} artifacts, {findings} findings, "
        + ("all pass." if not failing else f"failing: {', '.join(failing)}."),
        cls="pass" if not failing else "fail",
    )
    ran = {n: detail for n, _, detail in verified.steps} if verified is not None else {}
    rows: list[list[ET.Element | str]] = []
    for number, title in enumerate(STEP_TITLES, start=1):
        if verified is not None:
            verdict = (
                el("td", f"pass: {ran[number]}", cls="pass")
                if number in ran
                else el("td", "did not run", cls="muted")
            )
        elif number in ON_REQUEST_STEPS:
            verdict = el("td", "when asked for (--require-rebuilds)", cls="muted")
        else:
            verdict = el("td", "must pass before this page is accepted", cls="muted")
        rows.append([el("td", str(number), cls="num"), title, verdict])
    intro = (
        "`tinyrustlm-verify bundle` accepts this page only if it re-derives it byte for byte "
        "from the documents it has just verified (step 15), after every other step passed."
        if verified is None
        else f"Verified on the reader's machine at {utc(verified.at_epoch)}:"
    )
    return section(
        "verification",
        el("h2", "Verification"),
        release_checks,
        prose("p", intro),
        table(("step", "check", "verdict"), rows, id="steps"),
    )


def render_page(
    inputs: PageInputs, files: Mapping[str, bytes], verified: VerifiedView | None = None
) -> bytes:
    """The page's bytes (deterministic: a function of `inputs`, `files`' attested documents
    and `verified`)."""
    release = inputs.release
    title = f"tinyrustlm {release.manifest.version} — release report"
    head = el(
        "head",
        el("meta", charset="utf-8"),
        el("meta", http_equiv="Content-Security-Policy", content=CSP),
        el("meta", name="viewport", content="width=device-width, initial-scale=1"),
        el("meta", name="color-scheme", content="light dark"),
        el("title", title),
        style_sheet(CSS),
    )
    nav = el("nav", el("ul", *(el("li", el("a", text, href=f"#{i}")) for i, text in SECTIONS)))
    body = el(
        "body",
        el("header", el("h1", title), nav),
        el(
            "main",
            summary_section(release, verified),
            verification_section(inputs, verified),
            lanes_section(release),
            diff_section(release, inputs.previous),
            matrix_section(release, inputs.conformance),
            speed_section(inputs.conformance),
            memory_section(inputs.memory_plan),
            sbom_section(release),
            provenance_section(subjects_of(files, release), REPORT_PAGE),
        ),
    )
    return page_bytes(el("html", head, body, lang="en"))


def shipped_page(inputs: PageInputs, files: Mapping[str, bytes]) -> bytes:
    """report.html as a bundle ships it, from `inputs` (`page_inputs(files)`): the release
    writes it (`pipeline.documents.assemble`) and `verify bundle` step 15 renders it again to
    compare. A carried previous release that is not an earlier one whose documents belong
    together is refused here (`PreviousInvalid`)."""
    if inputs.previous is not None:
        check_previous(inputs.previous, inputs.release)
    return render_page(inputs, files)
