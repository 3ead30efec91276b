"""`reproduce` verifies the bundle before it reads the manifest: a forged signature stops it
before any clone or build (the source given here does not even exist)."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline.cli import main as release_main
from pipeline.reproduce import BundleNotVerified, reproduce
from tests.harness.release import Harness, fake_report
from verify.bundle import verifier


@pytest.fixture(autouse=True)
def _fake_inspection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verifier, "default_deriver", lambda: fake_report)


def _forge_manifest(bundle: Path) -> None:
    """A manifest naming another revision, with the old signature kept (a forgery)."""
    doc = json.loads((bundle / "manifest.json").read_text())
    doc["source_revision"] = "f" * 40
    payload = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    (bundle / "manifest.json").write_bytes(payload)
    signed = json.loads((bundle / "manifest.sigstore.json").read_text())
    signed["dsseEnvelope"]["payload"] = base64.b64encode(payload).decode()
    (bundle / "manifest.sigstore.json").write_text(json.dumps(signed))


def _flip_signature(bundle: Path) -> None:
    signed = json.loads((bundle / "manifest.sigstore.json").read_text())
    sig = bytearray(base64.b64decode(signed["dsseEnvelope"]["signatures"][0]["sig"]))
    sig[0] ^= 1
    signed["dsseEnvelope"]["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()
    (bundle / "manifest.sigstore.json").write_text(json.dumps(signed))


CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "forged manifest": (_forge_manifest, "signature.invalid"),
    "flipped signature": (_flip_signature, "signature.invalid"),
}


@pytest.mark.parametrize(("forge", "error_id"), CASES.values(), ids=CASES.keys())
def test_forged_bundle_is_refused_before_any_build(
    pristine: tuple[Harness, Path], tmp_path: Path, forge: Callable[[Path], None], error_id: str
) -> None:
    harness, pristine_bundle = pristine
    bundle = tmp_path / "bundle"
    shutil.copytree(pristine_bundle, bundle)
    forge(bundle)
    workdir = tmp_path / "work"
    lines: list[str] = []
    with pytest.raises(BundleNotVerified) as caught:
        reproduce(
            bundle,
            str(tmp_path / "no-such-repo"),
            workdir,
            lines.append,
            trusted_keys=harness.trusted,
        )
    assert caught.value.error_id == error_id
    assert lines == [] and not workdir.exists(), "a step after verification ran"


def test_cli_prints_the_error_id_and_exits_1(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    harness, pristine_bundle = pristine
    bundle = tmp_path / "bundle"
    shutil.copytree(pristine_bundle, bundle)
    _forge_manifest(bundle)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = release_main(
            [
                "reproduce",
                str(bundle),
                "--trusted-keys",
                str(harness.trusted),
                "--source",
                str(tmp_path / "none"),
                "--workdir",
                str(tmp_path / "w"),
            ]
        )
    assert code == 1
    assert "error[signature.invalid]" in err.getvalue() and "Traceback" not in err.getvalue()
    assert not (tmp_path / "w").exists()


def test_an_untampered_bundle_passes_verification_first(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    """The control: the same bundle unforged gets past step 1 (and fails at the clone)."""
    harness, bundle = pristine
    lines: list[str] = []
    with pytest.raises(Exception, match="git clone"):
        reproduce(
            bundle,
            str(tmp_path / "no-such-repo"),
            tmp_path / "work",
            lines.append,
            trusted_keys=harness.trusted,
        )
    assert lines[0].startswith("[1/6] bundle verified")


def _reproduce_cli(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = release_main(["reproduce", *argv])
    return code, err.getvalue()


def test_a_tarball_is_refused_before_anything_with_the_unpack_hint(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    harness, bundle = pristine
    tarball = next(bundle.glob("*.tar.gz"))
    code, err = _reproduce_cli(
        str(tarball), "--trusted-keys", str(harness.trusted), "--workdir", str(tmp_path / "w")
    )
    assert code == 3 and "not a file" in err and "tar -xzf" in err and "Traceback" not in err
    assert not (tmp_path / "w").exists()


def test_outside_a_checkout_the_hint_names_source(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    harness, bundle = pristine
    plain = tmp_path / "not-a-repo"
    plain.mkdir()
    code, err = _reproduce_cli(
        str(bundle), "--trusted-keys", str(harness.trusted), "--source", str(plain)
    )
    assert code == 3 and "not a git repository" in err and "--source REPO" in err
    assert "Traceback" not in err and "fatal:" not in err
