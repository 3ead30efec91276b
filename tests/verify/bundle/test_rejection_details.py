"""Rejections word for word, with their place: a SHA256SUMS that is not checksum lines or
lists other digests, a tarball whose top folder is not the release's, and the report step
when re-inspection disagrees with the shipped report (the deriver is an input of
`verify_bundle`, so a test can make it disagree)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.harness.release import Harness, copy_pristine, fake_report, verify_json
from verify.bundle import verifier
from verify.bundle.layout import CHECKSUMS, REPORT, bundle_name, tarball_name
from verify.bundle.tarball import deterministic_tarball
from verify.bundle.trusted_keys import load_trusted_keys, trust_root_from_keys
from verify.bundle.verifier import BundleVerifier, Requirements
from verify.errors import VerifyError
from verify.formats.manifest import ModuleManifest
from verify.formats.report import VerificationReport


@pytest.fixture(autouse=True)
def _fake_inspection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verifier, "default_deriver", lambda: fake_report)


def _error(bundle: Path, trusted: Path) -> dict[str, Any]:
    code, result, _ = verify_json(bundle, trusted)
    assert code == 1
    error: dict[str, Any] = result["error"]
    return error


def test_sha256sums_that_are_not_checksum_lines(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    bundle = copy_pristine(pristine, tmp_path)
    (bundle / CHECKSUMS).write_text("these are not checksums\n")
    error = _error(bundle, pristine[0].trusted)
    assert (error["id"], error["message"], error["where"], error["step"]) == (
        "checksums.mismatch", "not `<sha256>  <path>` lines", CHECKSUMS, 11
    )  # fmt: skip


def test_sha256sums_missing_a_file_says_which(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    bundle = copy_pristine(pristine, tmp_path)
    lines = (bundle / CHECKSUMS).read_text().splitlines(keepends=True)
    dropped = lines.pop(0).split("  ", 1)[1].strip()
    (bundle / CHECKSUMS).write_text("".join(lines))
    error = _error(bundle, pristine[0].trusted)
    assert (error["id"], error["where"]) == ("checksums.mismatch", CHECKSUMS)
    assert dropped in error["message"]


def test_a_tarball_with_another_top_folder(pristine: tuple[Harness, Path], tmp_path: Path) -> None:
    h, bundle = pristine
    manifest = ModuleManifest.model_validate_json((bundle / "manifest.json").read_bytes())
    tarball = tarball_name(manifest.version)
    files = {
        p.relative_to(bundle).as_posix(): p.read_bytes()
        for p in bundle.rglob("*")
        if p.is_file() and p.name != tarball
    }
    native = frozenset(a.url for a in manifest.native_artifacts)
    path = tmp_path / tarball
    path.write_bytes(
        deterministic_tarball("other-folder", files, manifest.source_date_epoch, native)
    )
    error = _error(path, h.trusted)
    # the place is the tarball the user gave, never the temporary folder it was unpacked into
    assert (error["id"], error["where"]) == ("tarball.mismatch", str(path))
    assert error["message"] == f"top folder 'other-folder' is not {bundle_name(manifest.version)!r}"


def _verify_with(h: Harness, bundle: Path, derive: Any) -> VerifyError:
    with pytest.raises(VerifyError) as caught:
        checker = BundleVerifier(trust_root_from_keys(load_trusted_keys(h.trusted)), derive)
        checker.verify(bundle, Requirements(now=h.commit_time + 3600))
    return caught.value


def test_a_lane_only_re_inspection_finds(pristine: tuple[Harness, Path]) -> None:
    """A lane in the derived report but not in the shipped one is a difference too."""
    h, bundle = pristine

    def derive(artifacts: Any) -> VerificationReport:
        report = fake_report(artifacts)
        extra = report.artifacts[0].model_copy(update={"lane": "zz-extra-lane"})
        return report.model_copy(update={"artifacts": [*report.artifacts, extra]})

    err = _verify_with(h, bundle, derive)
    assert (err.error_id, err.where) == ("report.mismatch", f"{REPORT}: zz-extra-lane")
    assert err.message == (
        "lane zz-extra-lane: the bundle's findings differ from re-inspection with the "
        "verifier's policy"
    )
