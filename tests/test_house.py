"""The walls of the house: what the linters see, which way imports go, where lanes live.

Each test reads the tree as it is (git ls-files), so a new folder or file is covered the day
it lands: a linter that silently skips a folder, an import from verify/ into pipeline/, or a
lane id written into code fails here.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from pipeline.tree.lanes import load_lanes

REPO_ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def tracked_python() -> list[str]:
    done = subprocess.run(["git", "-C", str(REPO_ROOT), "ls-files", "*.py"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    files = sorted(done.stdout.split())
    assert files, "git ls-files found no Python file"
    return files


def test_ruff_sees_every_tracked_python_file() -> None:
    ruff = Path(sys.executable).parent / "ruff"
    done = subprocess.run([str(ruff), "check", "--show-files", "."], cwd=REPO_ROOT,
                          capture_output=True, text=True, check=True)  # fmt: skip
    seen = {Path(line).resolve().relative_to(REPO_ROOT).as_posix()
            for line in done.stdout.split() if line.endswith(".py")}  # fmt: skip
    assert sorted(set(tracked_python()) - seen) == []


def test_mypy_sees_every_tracked_python_file() -> None:
    config = PYPROJECT["tool"]["mypy"]
    roots, excludes = config["files"], [re.compile(x) for x in config.get("exclude", [])]

    def covered(path: str) -> bool:
        under = any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)
        return under and not any(x.search(path) for x in excludes)

    assert [p for p in tracked_python() if not covered(p)] == []


BLOCK_PIPELINE = """
import importlib, pkgutil, sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "pipeline" or name.startswith("pipeline."):
            raise ImportError(f"verify imported {name}")
sys.meta_path.insert(0, Block())
import verify
names = [m.name for m in pkgutil.walk_packages(verify.__path__, "verify.")]
for name in names:
    importlib.import_module(name)
print(len(names))
"""


def test_verify_imports_with_pipeline_blocked() -> None:
    done = subprocess.run([sys.executable, "-c", BLOCK_PIPELINE], cwd=REPO_ROOT,
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout) > 20  # every module of the package was imported


def test_no_lane_id_in_code_outside_tests() -> None:
    ids = [lane.id for lane in load_lanes(REPO_ROOT / "manifests/lanes.toml").lane]
    pattern = re.compile("|".join(re.escape(i) for i in ids))
    spelled = [
        f"{path}:{number}"
        for path in tracked_python()
        if not path.startswith("tests/")
        for number, line in enumerate((REPO_ROOT / path).read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert spelled == []


def hand_canonical_json(source: str) -> list[int]:
    """Lines of `json.dumps(..., sort_keys=True, separators=(",", ":"))`: canonical JSON
    written by hand (sorted, compact) instead of through `verify.canonical` (RFC 8785)."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "dumps"
        and any(k.arg == "sort_keys" for k in node.keywords)
        and any(
            k.arg == "separators" and ast.literal_eval(k.value) == (",", ":") for k in node.keywords
        )
    ]


def test_one_canonical_json_outside_tests() -> None:
    """Every digest or signature over sorted, compact JSON goes through verify.canonical."""
    spelled = [
        f"{path}:{line}"
        for path in tracked_python()
        if not path.startswith("tests/") and path != "verify/canonical.py"
        for line in hand_canonical_json((REPO_ROOT / path).read_text(encoding="utf-8"))
    ]
    assert spelled == []


@pytest.mark.slow
def test_wheel_ships_the_lane_policy(tmp_path: Path) -> None:
    """An installed tinyrustlm-verify finds its policy: the JSON files are package data."""
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if uv is None:
        pytest.fail("uv (pinned in requirements.lock) is not installed")
    source = tmp_path / "src"  # the tracked files only: setuptools leaves build/lib behind
    for path in subprocess.run(["git", "-C", str(REPO_ROOT), "ls-files"], capture_output=True,
                               text=True, check=True).stdout.split():  # fmt: skip
        if (REPO_ROOT / path).is_file():
            (source / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_ROOT / path, source / path)
    wheels = tmp_path / "wheels"
    done = subprocess.run([uv, "build", "--wheel", "--out-dir", str(wheels), str(source)],
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = wheels.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"verify/policy/wasm.json", "verify/policy/native.json"} <= names
    assert "pipeline/bench/lanes.mjs" in names  # the bench's node runner is package data
    assert {"pipeline/bench/page/index.html", "pipeline/bench/page/main.mjs"} <= names
