"""report.html (issue 34): what the page shows, that it shows it as text, that it behaves
(one file, no script, no request, a CSP that allows only its own style sheet), and that the
verifier refuses a page that is not the one it derives."""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.harness.release import Harness, copy_pristine, fake_report
from tests.verify.page.bundles import PREVIOUS, carry_previous, edit_page
from tests.verify.page.dom import Node, parse
from verify.bundle import verifier
from verify.bundle.errors import PageMismatch
from verify.bundle.layout import REPORT_PAGE
from verify.bundle.opened import read_bundle_folder
from verify.bundle.page.inputs import PageInputInvalid, PageInputs, page_inputs
from verify.bundle.page.page import VerifiedView, render_page
from verify.bundle.page.previous import PreviousInvalid
from verify.bundle.step_titles import STEP_TITLES
from verify.errors import VerifyError

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>&amp;'
SIZE_LIMIT = 500_000


@pytest.fixture(autouse=True)
def _fake_inspection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verifier, "default_deriver", lambda: fake_report)


def _page(bundle: Path) -> tuple[bytes, Node]:
    data = (bundle / REPORT_PAGE).read_bytes()
    return data, parse(data)


def _rows(table: Node) -> list[str]:
    """The text of each body row's first cell."""
    (body,) = table.find("tbody")
    return [tr.children[0].all_text() for tr in body.children]


# -- what the page shows ------------------------------------------------------------------
def test_every_lane_has_its_row(pristine: tuple[Harness, Path]) -> None:
    bundle = pristine[1]
    files = read_bundle_folder(bundle)
    inputs = page_inputs(files)
    _, dom = _page(bundle)
    assert _rows(dom.by_id("wasm-lanes")) == [a.id for a in inputs.release.manifest.artifacts]
    assert _rows(dom.by_id("native-lanes")) == [
        a.id for a in inputs.release.manifest.native_artifacts
    ]
    for art in inputs.release.manifest.artifacts:
        assert art.sha256 in (bundle / REPORT_PAGE).read_text()


def test_the_summary_and_the_steps(pristine: tuple[Harness, Path]) -> None:
    bundle = pristine[1]
    manifest = page_inputs(read_bundle_folder(bundle)).release.manifest
    _, dom = _page(bundle)
    summary = dom.by_id("summary")
    text = dom.all_text()
    for fact in (manifest.version, manifest.source_revision, manifest.build_id, "release"):
        assert fact in text
    assert summary is not None
    assert _rows(dom.by_id("steps")) == [str(n) for n in range(1, len(STEP_TITLES) + 1)]
    # the shipped page claims no signer and no verdict: those are the reader's verifier's
    assert dom.by_id("signers-absent") is not None
    assert "pass:" not in dom.by_id("steps").all_text()


def test_the_sbom_rows_carry_versions_and_licences(pristine: tuple[Harness, Path]) -> None:
    """The crate's Cargo.toml licence reaches the SBOM and the page; one without says so."""
    _, dom = _page(pristine[1])
    (body,) = dom.by_id("sbom-components").find("tbody")
    rows = {
        tr.children[1].all_text(): [td.all_text() for td in tr.children] for tr in body.children
    }
    assert rows["tinyrustlm-core"][2:4] == ["0.1.0", "Apache-2.0"]
    assert rows["rustc-web"][3] == "not declared"


def test_what_the_release_does_not_carry_is_said(pristine: tuple[Harness, Path]) -> None:
    _, dom = _page(pristine[1])
    for absent in ("diff-absent", "conformance-absent", "bench-absent", "memory-absent"):
        assert dom.by_id(absent).all_text()


def test_the_page_is_one_quiet_file(pristine: tuple[Harness, Path]) -> None:
    """No script, no request (nothing with src, no link but in-page anchors), no style
    attribute, one <style> whose hash is the CSP's only style source; well under 500 KB."""
    data, dom = _page(pristine[1])
    assert len(data) < SIZE_LIMIT
    tags = {n.tag for n in dom.walk()}
    assert not tags & {"script", "iframe", "object", "embed", "img", "link", "form"}
    for node in dom.walk():
        assert "style" not in node.attrs and "src" not in node.attrs, node.tag
        assert not any(k.startswith("on") for k in node.attrs), node.attrs
        if "href" in node.attrs:
            assert (node.attrs["href"] or "").startswith("#"), node.attrs
    (style,) = dom.find("style")
    css = style.all_text()
    digest = base64.b64encode(hashlib.sha256(css.encode()).digest()).decode()
    (csp,) = [m for m in dom.find("meta") if m.attrs.get("http-equiv") == "Content-Security-Policy"]
    policy = csp.attrs["content"] or ""
    assert "default-src 'none'" in policy and "script-src 'none'" in policy
    assert re.findall(r"style-src ([^;]+)", policy) == [f"'sha256-{digest}'"]


def test_two_renders_are_the_same_bytes(pristine: tuple[Harness, Path]) -> None:
    files = read_bundle_folder(pristine[1])
    assert render_page(page_inputs(files), files) == files[REPORT_PAGE]
    assert render_page(page_inputs(dict(reversed(files.items()))), files) == files[REPORT_PAGE]


# -- hostile fields are text --------------------------------------------------------------
def _hostile(inputs: PageInputs) -> PageInputs:
    """Markup in a lane id (manifest and report), an evidence string and an SBOM name."""
    rel = inputs.release
    art = rel.manifest.artifacts[0]
    manifest = rel.manifest.model_copy(
        update={"artifacts": [art.model_copy(update={"id": HOSTILE}), *rel.manifest.artifacts[1:]]}
    )
    rep = rel.report.artifacts[0]
    finding = rep.findings[0].model_copy(update={"ok": False, "id": HOSTILE})
    report = rel.report.model_copy(
        update={
            "artifacts": [
                rep.model_copy(update={"lane": HOSTILE, "findings": [finding]}),
                *rel.report.artifacts[1:],
            ]
        }
    )
    part = rel.sbom.components[-1]
    sbom = rel.sbom.model_copy(
        update={
            "components": [
                *rel.sbom.components,
                part.model_copy(update={"name": HOSTILE, "type": "library"}),
            ]
        }
    )
    release = type(rel)(manifest=manifest, report=report, sbom=sbom)
    return PageInputs(release=release, conformance=inputs.conformance, previous=release)


def test_hostile_strings_render_as_text(pristine: tuple[Harness, Path]) -> None:
    files = read_bundle_folder(pristine[1])
    view = VerifiedView(1, [(HOSTILE, HOSTILE)], 1, [(1, "read", HOSTILE)])
    page = render_page(_hostile(page_inputs(files)), files, view)
    dom = parse(page)
    assert not {n.tag for n in dom.walk()} & {"script", "img"}
    texts = [n.all_text() for n in dom.walk() if n.tag in ("code", "td")]
    # lane row (wasm-lanes), failing finding, SBOM row, signer (key hint) and step verdict
    assert sum(HOSTILE in t for t in texts) >= 5
    assert b"<script>" not in page and b"&lt;script&gt;" in page


# -- the diff -----------------------------------------------------------------------------
def test_the_diff_shows_what_changed_and_folds_the_rest(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    h, _ = pristine
    bundle = copy_pristine(pristine, tmp_path)
    carry_previous(bundle, h)
    verdict = h.verify(bundle)
    assert verdict.steps[-1].detail.endswith("diff against 9.9.8")
    _, dom = _page(bundle)
    changed = [tr.all_text() for tr in dom.by_id("diff-changed").find("tr")[1:]]
    lane = page_inputs(read_bundle_folder(bundle)).release.report.artifacts[0]
    assert any("version" in t and "9.9.8" in t and "9.9.9" in t for t in changed), changed
    assert any(
        lane.lane in t and "bytes" in t and f"{lane.size + 1000:,}" in t and "−1,000" not in t
        for t in changed
    ), changed
    assert len(changed) == 2  # the version and that size: nothing else differs
    assert dom.by_id("diff-unchanged").find("tr")[1:]  # folded, but there


def test_a_toolchain_bump_is_in_the_diff(pristine: tuple[Harness, Path], tmp_path: Path) -> None:
    h, _ = pristine
    bundle = copy_pristine(pristine, tmp_path)

    def older_rustc(docs: dict[str, dict[str, Any]]) -> None:
        for c in docs["sbom.cdx.json"]["components"]:
            if c.get("name") == "rustc-web":
                c["version"] = "1.95.0+dfsg1-1~deb12u1"

    carry_previous(bundle, h, older_rustc)
    h.verify(bundle)
    changed = _page(bundle)[1].by_id("diff-changed").all_text()
    assert "rustc-web" in changed and "1.95.0+dfsg1-1~deb12u1" in changed


# -- the verifier refuses a page that is not the derived one -------------------------------
def _refused(h: Harness, bundle: Path) -> VerifyError:
    steps: list[Any] = []
    with pytest.raises(VerifyError) as caught:
        h.verify(bundle, progress=steps.append)
    assert len(steps) == len(STEP_TITLES) - 1, "refused at step 15, after every other passed"
    return caught.value


def test_one_character_edited_is_refused(pristine: tuple[Harness, Path], tmp_path: Path) -> None:
    h, _ = pristine
    bundle = copy_pristine(pristine, tmp_path)
    page = (bundle / REPORT_PAGE).read_bytes()
    at = page.index(b"release report") + 1
    edit_page(bundle, h, lambda p: p[:at] + b"E" + p[at + 1 :])
    error = _refused(h, bundle)
    assert isinstance(error, PageMismatch)
    assert (error.error_id, error.where, error.offset) == ("page.mismatch", REPORT_PAGE, at)


def test_a_page_without_a_lane_is_refused(pristine: tuple[Harness, Path], tmp_path: Path) -> None:
    h, _ = pristine
    bundle = copy_pristine(pristine, tmp_path)
    lane = page_inputs(read_bundle_folder(bundle)).release.manifest.artifacts[1].id

    def drop_lane(page: bytes) -> bytes:
        rows = re.findall(
            rb"<tr><th scope=\"row\"><code>" + lane.encode() + rb"</code>.*?</tr>", page
        )
        assert rows
        return page.replace(rows[0], b"", 1)

    edit_page(bundle, h, drop_lane)
    assert isinstance(_refused(h, bundle), PageMismatch)


def test_a_previous_release_that_is_not_earlier_is_refused(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    h, _ = pristine
    bundle = copy_pristine(pristine, tmp_path)
    with pytest.raises(PreviousInvalid, match=r"9\.9\.9 does not come before 9\.9\.9"):
        # the release writer refuses it already
        carry_previous(bundle, h, lambda d: d["manifest.json"].update(version="9.9.9"))


def test_previous_documents_of_two_releases_are_refused(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    h, _ = pristine
    bundle = copy_pristine(pristine, tmp_path)

    def other_report(docs: dict[str, dict[str, Any]]) -> None:
        docs["verification-report.json"]["artifacts"][1]["sha256"] = "0" * 64

    with pytest.raises(PreviousInvalid, match="not about its manifest's artifacts") as caught:
        carry_previous(bundle, h, other_report)
    assert caught.value.error_id == "page.previous-invalid"


def test_previous_documents_come_together(pristine: tuple[Harness, Path], tmp_path: Path) -> None:
    h, _ = pristine
    bundle = copy_pristine(pristine, tmp_path)
    carry_previous(bundle, h)
    files = dict(read_bundle_folder(bundle))
    del files[PREVIOUS[2]]
    with pytest.raises(PageInputInvalid, match="come together") as caught:
        page_inputs(files)
    assert caught.value.where == PREVIOUS[2]


# -- the release --------------------------------------------------------------------------
def test_release_previous_rides_in_the_bundle(harness: Harness, tmp_path: Path) -> None:
    """`release --previous DIR` with the same version is refused before anything is written;
    with an earlier one its documents ride under previous/ and the page diffs against it."""
    first = harness.release().bundle
    with pytest.raises(PreviousInvalid):
        harness.release(dist=tmp_path / "d2", previous=first)
    assert not (tmp_path / "d2" / first.name).exists()
    older = tmp_path / "older"
    shutil.copytree(first, older)
    text = (older / "manifest.json").read_text().replace('"version":"9.9.9"', '"version":"9.9.8"')
    (older / "manifest.json").write_text(text)
    done = harness.release(dist=tmp_path / "d3", previous=older)
    for name in PREVIOUS:
        assert (done.bundle / name).is_file()
    assert harness.verify(done.bundle).steps[-1].detail.endswith("diff against 9.9.8")
