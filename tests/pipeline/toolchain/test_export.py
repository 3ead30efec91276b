"""`toolchain export DIR` and `toolchain install --from DIR`: old releases stay installable
when the archive moves on.

The offline install is real: two small pinned packages are exported, then reinstalled from
the folder with apt's sources pointing nowhere (`--reinstall`, so the machine's toolchain is
left exactly as it was). A tampered or missing file refuses before anything is installed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from pipeline.toolchain import export as export_module
from pipeline.toolchain import install as install_module
from pipeline.toolchain.export import OFFLINE_APT, ExportError, checked_debs, export, install_from
from pipeline.toolchain.lockfile import ToolchainLock, load_lock

REPO = Path(__file__).resolve().parents[3]
LOCK = load_lock(REPO / "toolchain.lock")
SMALL = ("gcc-aarch64-linux-gnu", "binutils")  # 1.4 KB and 65 KB .debs
needs_apt_root = pytest.mark.skipif(
    shutil.which("apt-get") is None or os.geteuid() != 0,
    reason="needs apt-get as root (Debian)",
)


def _small_lock() -> ToolchainLock:
    return LOCK.model_copy(update={"package": [p for p in LOCK.package if p.name in SMALL]})


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("apt-get") is None:
        pytest.skip("needs apt-get (Debian)")
    folder = tmp_path_factory.mktemp("debs")
    export(_small_lock(), folder, lambda _line: None)
    return folder


def test_export_names_each_deb_by_its_digest_and_indexes_it(exported: Path) -> None:
    lock = _small_lock()
    for pkg in lock.package:
        data = (exported / f"{pkg.sha256}.deb").read_bytes()
        assert hashlib.sha256(data).hexdigest() == pkg.sha256 and len(data) == pkg.size
    index = json.loads((exported / "debs.json").read_text())
    assert index["schema"] == "tinyrustlm.toolchain-debs.v1"
    assert [(r["name"], r["version"], r["file"]) for r in index["packages"]] == [
        (p.name, p.version, f"{p.sha256}.deb") for p in lock.package
    ]
    assert sorted(p.name for p in exported.iterdir()) == sorted(
        ["debs.json", *(f"{p.sha256}.deb" for p in lock.package)]
    )


def test_export_refuses_a_deb_that_is_not_the_pinned_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A served (or cached) file whose digest differs from the lock is never written."""
    pkg = _small_lock().package[0]
    forged = tmp_path / "served.deb"
    forged.write_bytes(b"not the pinned package")
    monkeypatch.setattr(export_module, "_fetch", lambda p, work, say: forged)
    out = tmp_path / "out"
    with pytest.raises(ExportError) as info:
        export(_small_lock(), out, lambda _line: None)
    assert info.value.error_id == "toolchain.export-mismatch"
    assert not (out / f"{pkg.sha256}.deb").exists() and not (out / "debs.json").exists()


def test_a_tampered_export_is_refused_before_anything_is_installed(
    exported: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "copy"
    shutil.copytree(exported, folder)
    pkg = _small_lock().package[1]
    data = bytearray((folder / f"{pkg.sha256}.deb").read_bytes())
    data[len(data) // 2] ^= 1
    (folder / f"{pkg.sha256}.deb").write_bytes(bytes(data))
    with pytest.raises(ExportError) as info:
        checked_debs(_small_lock(), folder, list(_small_lock().package))
    assert info.value.error_id == "toolchain.export-mismatch"
    assert pkg.sha256 in str(info.value)


def test_a_missing_deb_names_the_package(exported: Path, tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    shutil.copytree(exported, folder)
    pkg = _small_lock().package[0]
    (folder / f"{pkg.sha256}.deb").unlink()
    with pytest.raises(ExportError) as info:
        checked_debs(_small_lock(), folder, list(_small_lock().package))
    assert info.value.error_id == "toolchain.export-missing"
    assert f"{pkg.spec}={pkg.version}" in str(info.value)


@needs_apt_root
def test_install_from_the_export_works_with_apt_pointing_nowhere(
    exported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real reinstall from the folder alone: every apt call has no source list at all."""
    seen: list[list[str]] = []
    real = install_module.run_apt

    def spy(argv: list[str], cwd: Path | None, say: install_module.Say) -> None:
        seen.append(argv)
        real(argv, cwd, say)

    monkeypatch.setattr(install_module, "run_apt", spy)
    lines: list[str] = []
    count = install_from(_small_lock(), exported, lines.append, reinstall=True)
    assert count == len(SMALL)
    apt_calls = [argv for argv in seen if argv[0] == "apt-get"]
    assert apt_calls and all(argv[1 : 1 + len(OFFLINE_APT)] == OFFLINE_APT for argv in apt_calls)
    assert not any("update" in argv or "download" in argv for argv in apt_calls)
    assert any("verified 2 .deb file(s)" in line for line in lines)
