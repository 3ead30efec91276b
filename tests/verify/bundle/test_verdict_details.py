"""What `verify bundle` says, word for word: each step's detail on the pristine bundle, the
version floor's messages, and the K-of-N rebuild count's verdict and refusal. Scripts and
people read these; a check that still passes but reports the wrong thing is a bug too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness.release import Harness, copy_pristine, fake_report, verify_json
from verify.bundle import errors as e
from verify.bundle import verifier
from verify.bundle.layout import MANIFEST
from verify.bundle.manifest_check import check_version_floor


@pytest.fixture(autouse=True)
def _fake_inspection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verifier, "default_deriver", lambda: fake_report)


def test_every_step_says_what_it_checked(pristine: tuple[Harness, Path], tmp_path: Path) -> None:
    h, _ = pristine
    bundle = copy_pristine(pristine, tmp_path)
    code, result, _ = verify_json(bundle, h.trusted)
    assert code == 0
    manifest = json.loads((bundle / MANIFEST).read_text())
    files = sorted(p for p in bundle.rglob("*") if p.is_file())
    tarball = next(p for p in files if p.name.endswith(".tar.gz"))
    details = {s["number"]: s["detail"] for s in result["steps"]}
    assert details == {
        1: f"{len(files)} files (directory)",
        2: f"manifest 1 of 1: {result['keyid'][:16]}… (release); "
        f"provenance 1 of 1: {result['keyid'][:16]}… (release)",
        3: "each hint names one of its signatures",
        4: "manifest + in-toto",
        5: f"version {manifest['version']}, revision {manifest['source_revision'][:12]}",
        6: f"6 files, build id {manifest['build_id'][:16]}…",
        7: f"{len(files)} files",
        8: "10 subjects",
        9: "6 file components",
        10: "4 documents",
        11: f"{len(files) - 2} checksums, tarball rebuilt byte for byte "
        f"({tarball.stat().st_size} bytes)",
        12: details[12],  # the report step belongs to the report model's own tests
        13: "no conformance report (none required); no memory plan",
        14: "not required",
        15: f"{(bundle / 'report.html').stat().st_size:,} bytes, identical to the re-derived page",
    }
    assert (result["version"], result["build_id"], result["key_class"]) == (
        manifest["version"],
        manifest["build_id"],
        "release",
    )


# -- the version floor ---------------------------------------------------------------------
@pytest.mark.parametrize("floor", ["9.9.9", "9.9.9rc1", "9.9.8", "9.0.0", "0.1.0"])
def test_a_floor_at_or_below_the_version_is_accepted(
    pristine: tuple[Harness, Path], floor: str
) -> None:
    h, bundle = pristine
    code, result, _ = verify_json(bundle, h.trusted, "--not-before-version", floor)
    assert (code, result["ok"]) == (0, True)


@pytest.mark.parametrize("floor", ["9.9.10", "9.10.0", "10.0.0"])
def test_a_floor_above_the_version_is_refused(pristine: tuple[Harness, Path], floor: str) -> None:
    h, bundle = pristine
    code, result, _ = verify_json(bundle, h.trusted, "--not-before-version", floor)
    assert (code, result["error"]) == (
        1,
        {
            "exit_code": 1,
            "id": "manifest.version-floor",
            "message": f"version 9.9.9 is older than the accepted floor {floor} (a rollback?)",
            "step": 5,
            "where": "manifest.json: version",
        },
    )


def test_floor_comparison_is_the_release_version_order() -> None:
    check = check_version_floor
    with pytest.raises(e.VersionBelowFloor) as caught:
        check("1.0.0rc1", "1.0.0")  # a release candidate is older than its release
    assert caught.value.message == (
        "version 1.0.0rc1 is older than the accepted floor 1.0.0 (a rollback?)"
    )
    assert caught.value.where == "manifest.json: version"
    for other in ("not a version", "1.0.0-rc1", "v1.0.0", "1.0"):
        with pytest.raises(e.VersionBelowFloor) as caught:
            check(other, "1.0.0")
        assert caught.value.message == (
            f"version {other!r} is not a release version: cannot compare it to 1.0.0"
        )
        assert caught.value.where == "manifest.json: version"
    with pytest.raises(ValueError, match=r"^--not-before-version 'x\.y' is not a release version$"):
        check("1.0.0", "x.y")
    check("1.0.0", "1.0.0")
    check("1.0.0", "1.0.0rc1")
