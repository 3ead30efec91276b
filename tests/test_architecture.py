"""The architecture contracts of pyproject.toml hold, and each one can fail.

`lint-imports` (import-linter) runs in `nox -s lint`; here it runs on the tree, then on a copy
with one planted back-edge per contract, which must break exactly that contract.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from pipeline.lanebuild.smoke import RUNNERS
from pipeline.tree.lanes import SmokeRunner

REPO_ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=root, capture_output=True, text=True, check=False
    )


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    ignore = shutil.ignore_patterns("__pycache__", "*.mjs", "*.html", "*.json", "*.toml")
    for package in ("pipeline", "verify"):
        shutil.copytree(REPO_ROOT / package, root / package, ignore=ignore)
    shutil.copy(REPO_ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


def test_the_tree_keeps_every_contract() -> None:
    done = _lint(REPO_ROOT)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "BROKEN" not in done.stdout


# (contract that must break, file to edit, the import planted at its end)
PLANTED = [
    ("verify never imports pipeline", "verify/canonical.py", "import pipeline.errors"),
    ("verify.formats is the shared model layer: it imports nothing of verify.bundle",
     "verify/formats/in_toto.py", "import verify.bundle.layout"),
    ("pipeline is layered", "pipeline/io/atomic.py", "import pipeline.release.steps"),
    ("pipeline is layered", "pipeline/tree/snapshot.py", "import pipeline.lanebuild.driver"),
    ("pipeline is layered", "pipeline/fetch/client.py", "import pipeline.publish.repo"),
    ("no cycles among the siblings of any package", "pipeline/lanebuild/records.py",
     "import pipeline.lanebuild.driver"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("contract", "file", "planted"), PLANTED, ids=[f"{c}:{f}" for c, f, _ in PLANTED]
)
def test_a_planted_back_edge_breaks_its_contract(
    tmp_path: Path, contract: str, file: str, planted: str
) -> None:
    root = _copy(tmp_path)
    target = root / file
    target.write_text(target.read_text() + f"\n{planted}  # planted\n")
    done = _lint(root)
    assert done.returncode == 1, done.stdout[-2000:]
    assert f"{contract} BROKEN" in done.stdout


def test_every_smoke_runner_name_has_exactly_one_runner() -> None:
    assert set(RUNNERS) == set(typing.get_args(SmokeRunner))
