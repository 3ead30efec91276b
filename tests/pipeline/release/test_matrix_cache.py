"""The default release's conformance report is reused by an unchanged re-release only
(pipeline/release/matrix_cache.py): same bundle files, harness, toolchain lock, engines and
cases; anything else, or a damaged kept report, runs the matrix again."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline import paths
from pipeline.conformance.cli import report_bytes
from pipeline.release import matrix_cache
from pipeline.release.matrix_cache import Matrixed, matrix_once
from tests.harness.conformance import report_v3

REPO = Path(__file__).resolve().parents[3]
FILES = {"manifest.json": b"{}", "manifest.sigstore.json": b"sig", "artifacts/a.wasm": b"\0asm"}


def sample_report_bytes() -> bytes:
    """A real v3 report (the harness's), as the matrix writes it."""
    return report_bytes(report_v3("0.1.0", "a" * 40, [("scalar-wasm32", "b" * 64)], [], "c" * 64))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A copy of the harness files the key reads (the real ones, so their layout is real)."""
    root = tmp_path / "repo"
    for folder in matrix_cache.HARNESS_FOLDERS:
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for name in matrix_cache.HARNESS_FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, root / name)
    return root


class Runs:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> bytes:
        self.count += 1
        return sample_report_bytes()


Inputs = tuple[dict[str, bytes], tuple[str, ...], int]  # bundle files, engines, cases
SAME: Inputs = (FILES, ("node",), 100)


def _twice(repo: Path, change: Callable[[Path], Inputs]) -> tuple[Runs, Matrixed]:
    """The matrix for SAME, then for what `change` makes of it: (runs made, second result)."""
    runs = Runs()
    first = matrix_once(repo, *SAME, runs)
    assert not first.reused and runs.count == 1
    files, engines, cases = change(repo)
    return runs, matrix_once(repo, files, engines, cases, runs)


def test_an_unchanged_release_reuses_the_report(repo: Path) -> None:
    runs, again = _twice(repo, lambda repo: SAME)
    assert again.reused and runs.count == 1
    assert again.report == sample_report_bytes()


def _harness_changed(repo: Path) -> Inputs:
    matrix = repo / "pipeline/conformance/matrix.py"
    matrix.write_text(matrix.read_text() + "\n# changed\n")
    return SAME


def _lock_changed(repo: Path) -> Inputs:
    lock = repo / "toolchain.lock"
    lock.write_bytes(lock.read_bytes() + b"\n")
    return SAME


def _kept_damaged(repo: Path) -> Inputs:
    for kept in (repo / paths.BUILD_DIR / matrix_cache.CACHE_FOLDER).iterdir():
        kept.write_bytes(kept.read_bytes().replace(b'"schema"', b'"schema": 1, "schema"', 1))
    return SAME


CHANGES: dict[str, Callable[[Path], Inputs]] = {
    "a bundle file changed": lambda r: ({**FILES, "artifacts/a.wasm": b"\0asm\1"}, *SAME[1:]),
    "a bundle file added": lambda r: ({**FILES, "js/extra.js": b""}, *SAME[1:]),
    "the harness changed": _harness_changed,
    "the toolchain lock changed": _lock_changed,
    "other engines": lambda r: (FILES, ("node", "chromium"), 100),
    "another case count": lambda r: (FILES, ("node",), 20),
    "the kept report damaged": _kept_damaged,
}


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_any_change_runs_the_matrix_again(repo: Path, change: Callable[[Path], Inputs]) -> None:
    runs, again = _twice(repo, change)
    assert not again.reused and runs.count == 2
