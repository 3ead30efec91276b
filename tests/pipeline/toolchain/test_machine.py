"""The lock against this machine: real check, drift naming, .deb hash refusal, re-lock.

These need the pinned toolchain installed (`tinyrustlm-release toolchain install`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.toolchain.check import compare, drifted
from pipeline.toolchain.install import DebHashMismatch, deb_filename, verify_debs
from pipeline.toolchain.lockfile import load_lock, load_seed, render_lock
from pipeline.toolchain.relock import build_lock

REPO = Path(__file__).resolve().parents[3]
LOCK = REPO / "toolchain.lock"
needs_toolchain = pytest.mark.skipif(
    not Path(load_lock(LOCK).rustc.binary).exists(),
    reason="pinned toolchain not installed: run `tinyrustlm-release toolchain install`",
)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pipeline.cli", *args], capture_output=True, text=True, cwd=REPO
    )


@needs_toolchain
def test_real_check_passes_on_this_machine() -> None:
    done = _cli("toolchain", "check", "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 0, report
    assert report["ok"] is True


EDITS = {
    "rustc-release": ('release = "1.96.0"', 'release = "1.96.1"', "rustc.release"),
    "rustc-commit": ('commit_hash = "a', 'commit_hash = "b', "rustc.commit_hash"),
    "llvm": ('llvm_version = "22.1.8"', 'llvm_version = "22.1.9"', "rustc.llvm_version"),
    "package-version": (
        'version = "1.96.0+dfsg1-1~deb12u2"',
        'version = "1.96.0+dfsg1-1~deb12u3"',
        "package.rustc-web:amd64.version",
    ),
    "sysroot-digest": (
        'target = "aarch64-unknown-linux-gnu"\npath = "/usr/lib/rustlib/'
        'aarch64-unknown-linux-gnu/lib"\nfiles = ',
        None,
        "sysroot.aarch64-unknown-linux-gnu.files",
    ),
    "std-source-files": ('vendor"\nfiles = ', None, "std_source.files"),
    "std-source-digest": (
        '[std_source]\npath = "/usr/src/rustc-1.96.0/library"\nvendor = '
        '"/usr/src/rustc-1.96.0/library/vendor"\nfiles = 3351\nsha256 = "7',
        '[std_source]\npath = "/usr/src/rustc-1.96.0/library"\nvendor = '
        '"/usr/src/rustc-1.96.0/library/vendor"\nfiles = 3351\nsha256 = "6',
        "std_source.sha256",
    ),
    "tool-version": ('version = "1.262.0"', 'version = "1.261.0"', "tool.wasm-tools.version"),
}


@needs_toolchain
@pytest.mark.parametrize("edit", EDITS.values(), ids=EDITS.keys())
def test_drift_in_a_copy_of_the_lock_is_named(
    edit: tuple[str, str | None, str], tmp_path: Path
) -> None:
    old, new, field = edit
    text = LOCK.read_text(encoding="utf-8")
    assert old in text
    if new is None:  # bump the number that follows `old`
        head, _, tail = text.partition(old)
        count, _, rest = tail.partition("\n")
        new = old + str(int(count) + 1)
        text = head + new + "\n" + rest
    else:
        text = text.replace(old, new, 1)
    lock_copy = tmp_path / "toolchain.lock"
    lock_copy.write_text(text, encoding="utf-8")
    assert [d.field for d in drifted(compare(load_lock(lock_copy)))] == [field]
    done = _cli("toolchain", "check", "--lock", str(lock_copy))
    assert done.returncode == 1
    assert field in done.stdout


@needs_toolchain
def test_relock_reproduces_the_committed_lock() -> None:
    seed = load_seed(REPO / "manifests" / "toolchain.toml")
    assert render_lock(build_lock(seed)) == LOCK.read_text(encoding="utf-8")


@pytest.mark.skipif(shutil.which("apt-get") is None, reason="needs apt-get (Debian)")
def test_a_corrupted_deb_is_refused_and_deleted(tmp_path: Path) -> None:
    lock = load_lock(LOCK)
    pkg = next(p for p in lock.package if p.name == "gcc-aarch64-linux-gnu")  # ~1 KiB
    tmp_path.chmod(0o777)  # apt's sandbox user downloads into it
    done = subprocess.run(
        ["apt-get", "download", f"{pkg.spec}={pkg.version}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"archive not reachable: {done.stderr.strip()[-200:]}")
    deb = tmp_path / deb_filename(pkg)
    assert verify_debs(tmp_path, [pkg]) == [deb]  # the real file passes
    data = bytearray(deb.read_bytes())
    data[len(data) // 2] ^= 0x01
    deb.write_bytes(bytes(data))
    with pytest.raises(DebHashMismatch, match="differs from the lock"):
        verify_debs(tmp_path, [pkg])
    assert not deb.exists()


@needs_toolchain
def test_not_root_prints_the_commands_and_installs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipeline.toolchain import install as install_module

    text = LOCK.read_text(encoding="utf-8").replace(
        'version = "1.96.0+dfsg1-1~deb12u2"', 'version = "1.96.0+dfsg1-1~deb12u9"', 1
    )
    lock_copy = tmp_path / "toolchain.lock"
    lock_copy.write_text(text, encoding="utf-8")
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    ran: list[list[str]] = []
    monkeypatch.setattr(install_module, "run_apt", lambda argv, cwd, say: ran.append(argv))
    with pytest.raises(install_module.NotInstallable) as info:
        install_module.install(load_lock(lock_copy), lambda _: None)
    message = info.value.diagnostics()
    assert "needs root" in message
    assert "apt-get download 'rustc-web:amd64=1.96.0+dfsg1-1~deb12u9'" in message
    assert ran == []
