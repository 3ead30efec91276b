"""`tinyrustlm-verify report` (issue 34): verify, then write the page with this verifier's
view; --previous diffs against another verified bundle; an unverified bundle gets no page."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.harness.release import Harness, copy_pristine, fake_report, write_build
from tests.verify.page.dom import parse
from verify.bundle import verifier
from verify.bundle.layout import REPORT_PAGE
from verify.bundle.step_titles import STEP_TITLES
from verify.cli import main as verify_main


@pytest.fixture(autouse=True)
def _fake_inspection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verifier, "default_deriver", lambda: fake_report)


def _report(bundle: Path, h: Harness, out: Path, *extra: str) -> int:
    return verify_main(
        ["report", str(bundle), "--trusted-keys", str(h.trusted), "--out", str(out), *extra]
    )


def _release(h: Harness, version: str, dist: Path) -> Path:
    (h.repo / "pyproject.toml").write_text(f'[project]\nname = "fake"\nversion = "{version}"\n')
    stamp = f"@{h.commit_time} +0000"
    subprocess.run(
        [
            "git",
            "-C",
            str(h.repo),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qam",
            version,
        ],
        check=True,
        env={**os.environ, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp},
    )
    write_build(h.repo, h.commit_time)  # the fake build of the new revision
    return h.release(dist=dist).bundle


def test_the_page_with_this_verifiers_view(pristine: tuple[Harness, Path], tmp_path: Path) -> None:
    h, bundle = pristine
    out = tmp_path / "r.html"
    assert _report(bundle, h, out) == 0
    mine, shipped = parse(out.read_bytes()), parse((bundle / REPORT_PAGE).read_bytes())
    steps = mine.by_id("steps").find("tbody")[0].children
    assert len(steps) == len(STEP_TITLES)
    assert all(tr.children[2].all_text().startswith("pass: ") for tr in steps)
    signers = mine.by_id("signers").find("tbody")[0].children
    keyid = h.key.trusted_keys.read_text().split('"keyid": "')[1][:64]
    assert [tr.children[0].all_text() for tr in signers] == [keyid]
    # what the documents show is the shipped page's, section for section
    for section in ("lanes", "diff", "conformance", "sbom", "provenance"):
        assert mine.by_id(section).all_text() == shipped.by_id(section).all_text()


def test_previous_is_verified_and_diffed(harness: Harness, tmp_path: Path) -> None:
    old = _release(harness, "9.9.8", tmp_path / "d1")
    new = _release(harness, "9.9.9", tmp_path / "d2")
    out = tmp_path / "r.html"
    assert _report(new, harness, out, "--previous", str(old)) == 0
    changed = parse(out.read_bytes()).by_id("diff-changed").all_text()
    assert "9.9.8" in changed and "source revision" in changed
    # the other way round is refused: 9.9.9 does not come before 9.9.8
    assert _report(old, harness, tmp_path / "x.html", "--previous", str(new)) == 1
    assert not (tmp_path / "x.html").exists()


def test_an_unverified_bundle_gets_no_page(
    pristine: tuple[Harness, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    h, _ = pristine
    bundle = copy_pristine(pristine, tmp_path)
    (bundle / REPORT_PAGE).write_bytes((bundle / REPORT_PAGE).read_bytes() + b" ")
    out = tmp_path / "r.html"
    out.write_bytes(b"the old page")
    assert _report(bundle, h, out) == 1
    assert "error[provenance.subjects]" in capsys.readouterr().err
    assert out.read_bytes() == b"the old page"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".r.html")] == []
