"""What `verify bundle` says, word for word: each step's detail on the pristine bundle, the
version floor's messages, and the K-of-N rebuild count's verdict and refusal. Scripts and
people read these; a check that still passes but reports the wrong thing is a bug too."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.harness.release import Harness, copy_pristine, fake_report, verify_json
from tests.verify.bundle.test_rebuild_attestations import Attest, _key, _write
from verify.bundle import errors as e
from verify.bundle import verifier
from verify.bundle.layout import MANIFEST
from verify.bundle.trusted_keys import trusted_key_entry, trusted_keys_json


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
        2: f"{result['keyid'][:16]}… (release)",
        3: "hint == keyid for both",
        4: "manifest + in-toto",
        5: f"version {manifest['version']}, revision {manifest['source_revision'][:12]}",
        6: f"6 files, build id {manifest['build_id'][:16]}…",
        7: f"{len(files)} files",
        8: "9 subjects",
        9: "6 file components",
        10: "4 documents",
        11: f"{len(files) - 2} checksums, tarball rebuilt byte for byte "
        f"({tarball.stat().st_size} bytes)",
        12: details[12],  # the report step belongs to the report model's own tests
        13: "no conformance report (none required)",
        14: "not required",
    }
    assert (result["version"], result["build_id"], result["key_class"]) == (
        manifest["version"],
        manifest["build_id"],
        "release",
    )


# -- the version floor ---------------------------------------------------------------------
@pytest.mark.parametrize("floor", ["9.9.9", "9.9.9.0", "9.9.8", "9", "0.1"])
def test_a_floor_at_or_below_the_version_is_accepted(
    pristine: tuple[Harness, Path], floor: str
) -> None:
    h, bundle = pristine
    code, result, _ = verify_json(bundle, h.trusted, "--not-before-version", floor)
    assert (code, result["ok"]) == (0, True)


@pytest.mark.parametrize("floor", ["9.9.10", "9.10", "10"])
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


def test_floor_comparison_needs_dotted_numbers() -> None:
    check = verifier._check_version_floor
    with pytest.raises(e.VersionBelowFloor) as caught:
        check("1.0rc1", "1.0")
    assert (
        caught.value.message == "version '1.0rc1' is not dotted numbers: cannot compare it to 1.0"
    )
    assert caught.value.where == "manifest.json: version"
    with pytest.raises(ValueError, match=r"^--not-before-version 'x.y' is not dotted numbers$"):
        check("1.0", "x.y")
    check("1.0", "1")


# -- K of N rebuilds -----------------------------------------------------------------------
def _rebuilders(tmp_path: Path) -> Path:
    later = datetime.now(UTC) + timedelta(days=30)
    path = tmp_path / "rebuilders.json"
    path.write_bytes(
        trusted_keys_json(
            [trusted_key_entry(_key(n).private_key.public_key(), "release", later)
             for n in ("alice", "bob")]
        )
    )  # fmt: skip
    return path


def _args(rebuilders: Path, k: int, files: list[Path], *extra: str) -> list[str]:
    args = ["--rebuilders", str(rebuilders), "--require-rebuilds", str(k), *extra]
    for path in files:
        args += ["--rebuild-attestation", str(path)]
    return args


def test_counted_rebuilds_are_named(pristine: tuple[Harness, Path], tmp_path: Path) -> None:
    h, bundle = pristine
    files = [_write(Attest(n), bundle, tmp_path, i) for i, n in enumerate(("alice", "bob"))]
    code, result, err = verify_json(bundle, h.trusted, *_args(_rebuilders(tmp_path), 2, files))
    assert code == 0, err
    alice, bob = _key("alice").keyid[:16], _key("bob").keyid[:16]
    assert result["steps"][13]["detail"] == (
        f"2 of 2 rebuilders ({alice}…, {bob}…) reproduced every signed file (scope bundle), "
        "2 required"
    )
    code, result, err = verify_json(
        bundle, h.trusted,
        *_args(_rebuilders(tmp_path), 1, files[:1], "--rebuild-scope", "artifacts"),
    )  # fmt: skip
    assert result["steps"][13]["detail"] == (
        f"1 of 2 rebuilders ({alice}…) reproduced every artifact (scope artifacts), 1 required"
    )


def test_too_few_rebuilds_name_every_reason(pristine: tuple[Harness, Path], tmp_path: Path) -> None:
    h, bundle = pristine
    files = [
        _write(Attest("alice"), bundle, tmp_path, 0),
        _write(Attest("mallory"), bundle, tmp_path, 1),
    ]
    code, result, _ = verify_json(bundle, h.trusted, *_args(_rebuilders(tmp_path), 2, files))
    assert (code, result["error"]["id"], result["error"]["where"]) == (
        1,
        "rebuilds.insufficient",
        "--rebuild-attestation",
    )
    assert result["error"]["message"] == (
        "1 independent trusted rebuild(s) reproduced every signed file, 2 required "
        "(0-alice.sigstore.json: counts: 6 signed files reproduced; "
        "1-mallory.sigstore.json: key is not in the rebuilders file)"
    )
