"""A full release on a fake build: it verifies, and it reproduces byte for byte."""

from __future__ import annotations

import gzip
import hashlib
import os
import shlex
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from pipeline.errors import CheckFailed
from pipeline.release.cli import summary, verify_program
from pipeline.release.steps import STEP_TITLES
from tests.harness.release import LANES, VERSION, Harness


def _tree(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_full_release_verifies(harness: Harness) -> None:
    done = harness.release()
    assert done.bundle == harness.tmp / "dist" / f"tinyrustlm-{VERSION}"
    verdict = harness.verify(done.bundle)
    assert verdict.version == VERSION
    assert verdict.key_class == "release"
    assert verdict.build_id == done.manifest.build_id
    assert [s.number for s in verdict.steps] == list(range(1, 16))
    names = set(_tree(done.bundle))
    assert {
        "manifest.json",
        "SHA256SUMS",
        f"tinyrustlm-{VERSION}.tar.gz",
        "js/host.js",
        "js/loader.js",
        "report.html",
    } <= names
    assert sum(n.startswith("artifacts/") for n in names) == len(LANES)


def test_tarball_verifies_on_its_own(harness: Harness) -> None:
    done = harness.release()
    verdict = harness.verify(done.bundle / f"tinyrustlm-{VERSION}.tar.gz")
    assert verdict.steps[0].detail.endswith("(tarball)")


def test_numbered_progress_and_steps(harness: Harness) -> None:
    harness.release()
    done = [line for line in harness.log if ": ok (" in line]
    n = len(STEP_TITLES)
    assert [line.split("]")[0] for line in done] == [f"[{i}/{n}" for i in range(1, n + 1)]
    # the order the documents need: manifest signed, conformance on it, provenance after
    titles = [line.split("] ")[1].split(":")[0] for line in done]
    assert titles == list(STEP_TITLES)
    assert titles.index("sign manifest") < titles.index("conformance")
    assert titles.index("conformance") < titles.index("sign provenance")


def test_releasing_twice_gives_identical_bundles(harness: Harness) -> None:
    first = harness.release(dist=harness.tmp / "a").bundle
    second = harness.release(dist=harness.tmp / "b").bundle
    one, two = _tree(first), _tree(second)
    assert one == two
    assert len(one) >= 12


def test_tarball_is_deterministic(harness: Harness) -> None:
    bundle = harness.release().bundle
    data = (bundle / f"tinyrustlm-{VERSION}.tar.gz").read_bytes()
    assert data[3] & 0x08 == 0, "gzip FNAME flag set: the header carries a file name"
    assert data[4:8] == b"\0\0\0\0", "gzip header carries a time"
    with tarfile.open(fileobj=gzip.GzipFile(fileobj=__import__("io").BytesIO(data))) as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    assert names == sorted(names)
    assert {m.mtime for m in members} == {harness.commit_time}
    assert {(m.uid, m.gid, m.uname, m.gname) for m in members} == {(0, 0, "", "")}
    modes = {m.name.split("/", 1)[-1]: m.mode for m in members if m.isfile()}
    native = {n for n in modes if n.startswith("artifacts/tinyrustlm.")}
    assert len(native) == 1
    assert {n for n, mode in modes.items() if mode == 0o755} == native
    assert (bundle / next(iter(native))).stat().st_mode & 0o777 == 0o755
    files = {m.name.split("/", 1)[1] for m in members if m.isfile()}
    assert files == set(_tree(bundle)) - {f"tinyrustlm-{VERSION}.tar.gz"}


def test_dev_key_release_verifies_only_when_allowed(harness: Harness) -> None:
    done = harness.release(key_path=None, env={})
    assert done.key.key_class == "development"
    trusted = harness.repo / ".dev-keys/development.trusted-keys.json"
    assert harness.verify(done.bundle, trusted, allow_dev_key=True).key_class == "development"
    again = harness.release(dist=harness.tmp / "again", key_path=None, env={})
    assert again.key.keyid == done.key.keyid, "dev key made twice"


def test_disable_lane_is_signed_into_the_manifest(harness: Harness) -> None:
    """`release --disable-lane` switches a lane off in the signed manifest (the loader then
    skips it) without a rebuild; the bundle still verifies."""
    done = harness.release(disabled_lanes=("simd128-threads-wasm32", "simd128-wasm32"))
    assert done.manifest.disabled_lanes == ["simd128-threads-wasm32", "simd128-wasm32"]
    assert harness.verify(done.bundle).build_id == done.manifest.build_id
    plain = harness.release(dist=harness.tmp / "plain")
    assert plain.manifest.disabled_lanes is None


def test_disable_lane_refuses_a_lane_that_is_not_a_wasm_lane(harness: Harness) -> None:
    with pytest.raises(
        CheckFailed, match="names no wasm lane of this release: no-such-lane"
    ) as caught:
        harness.release(disabled_lanes=("no-such-lane",))
    assert caught.value.error_id == "documents.disable-lane-unknown"
    assert not (harness.tmp / "dist").exists() or not any((harness.tmp / "dist").iterdir())


def test_the_printed_verify_command_runs_as_printed(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The summary's last line is a command a fresh machine can run from the checkout: the
    verifier beside this interpreter (not on PATH there), the bundle and the dev trust file."""
    monkeypatch.chdir(harness.repo)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # a fresh machine: the venv is not on PATH
    done = harness.release(key_path=None, key_class="development")
    line = summary(done).splitlines()[-1]
    assert line.startswith("verify it:  ")
    argv = shlex.split(line.removeprefix("verify it:  "))
    program = Path(argv[0])
    assert program.is_file() and os.access(program, os.X_OK), argv[0]
    assert argv[1] == "bundle" and Path(argv[2]).resolve() == done.bundle.resolve()
    assert Path(argv[argv.index("--trusted-keys") + 1]).is_file() and "--allow-dev-key" in argv
    ran = subprocess.run([*argv, "--help"], capture_output=True, text=True, check=False)
    assert ran.returncode == 0 and "--trusted-keys" in ran.stdout


def test_the_verify_command_names_the_session_venv_that_nox_put_on_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`./nox -s release` runs with its session's venv bin first on PATH and VIRTUAL_ENV set;
    the user's shell afterwards has neither, so the printed program is the script's path."""
    script = Path(sys.executable).parent / "tinyrustlm-verify"
    assert script.is_file()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}/usr/bin:/bin")
    monkeypatch.setenv("VIRTUAL_ENV", str(script.parent.parent))
    assert verify_program() == str(script)
    monkeypatch.delenv("VIRTUAL_ENV")  # the user's own PATH holds it: the bare name runs
    assert verify_program() == "tinyrustlm-verify"
