"""The bundle's `js/` as an npm package: `crates/wasm/js/package.json`, generated from the
release version (pyproject `[project].version`) so the two never differ.

`python -m pipeline.js.package` rewrites it; tests/js/loader/test_package.py fails when it is stale.
"""

from __future__ import annotations

import json
import sys
import tempfile
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

from pipeline import paths
from pipeline.errors import TabledError
from pipeline.io import process
from pipeline.toolchain import nodejs


class LoaderPackageError(TabledError):
    """The loader's npm package cannot be read or packed."""

    table: ClassVar[Mapping[str, str]] = {
        "loader-package.version": (
            "python -m pipeline.js.package (crates/wasm/js/package.json needs a version)"
        ),
        "loader-package.pack": (
            "is crates/wasm/js/package.json current? `python -m pipeline.js.package`"
        ),
    }


REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGE_JSON = Path(paths.JS_SOURCE_DIR / "package.json")
PACKAGE_NAME = "tinyrustlm-loader"
# The package's files: every shipped module, its types and this manifest (npm adds README).
MODULES = (
    "abi.js",
    "choice.js",
    "coi-serviceworker.js",
    "constants.js",
    "errors.js",
    "fetch.js",
    "host.js",
    "loader.js",
    "probes.js",
    "receipt.js",
    "session.js",
    "sha256.js",
    "trust.js",
    "worker.js",
)
TYPES = "loader.d.ts"


def release_version(repo_root: Path = REPO_ROOT) -> str:
    doc = tomllib.loads((repo_root / "pyproject.toml").read_text(encoding="utf-8"))
    version: str = doc["project"]["version"]
    return version


def tarball_name(version: str) -> str:
    """What `npm pack` writes for this package."""
    return f"{PACKAGE_NAME}-{version}.tgz"


def pack(repo_root: Path) -> tuple[str, bytes]:
    """(file name, bytes) of `npm pack` of crates/wasm/js (see `pack_sources`)."""
    folder = repo_root / PACKAGE_JSON.parent
    return pack_sources([(p.name, p.read_bytes()) for p in sorted(folder.iterdir()) if p.is_file()])


def pack_sources(files: Sequence[tuple[str, bytes]]) -> tuple[str, bytes]:
    """`npm pack` (the pinned node's npm) of a package made of exactly `files` (name, bytes;
    its package.json's "files" selects what ships). npm writes every entry with mtime
    1985-10-26 and owner 0 but keeps each file's mode, which a umask changes: here every file
    is 0644, so the tarball is a function of the bytes alone (tests/js/loader/test_package.py
    packs twice, other mtimes and modes, and compares)."""
    by_name = dict(files)
    try:
        version = str(json.loads(by_name["package.json"])["version"])
    except (KeyError, ValueError, TypeError) as exc:
        raise LoaderPackageError(
            f"the loader package has no readable package.json version ({exc})",
            where=str(PACKAGE_JSON),
            hint="python -m pipeline.js.package",
            error_id="loader-package.version",
        ) from exc
    with tempfile.TemporaryDirectory(prefix="tinyrustlm-npm-") as tmp:
        package = Path(tmp) / "package"
        package.mkdir(mode=0o755)
        for name, data in files:
            (package / name).write_bytes(data)
            (package / name).chmod(0o644)
        npm_cli = nodejs.executable().parent.parent / "lib/node_modules/npm/bin/npm-cli.js"
        done = process.run(
            [str(nodejs.executable()), str(npm_cli), "pack", "--ignore-scripts", str(package)],
            cwd=tmp,
        )
        tarball = Path(tmp) / tarball_name(version)
        if done.returncode != 0 or not tarball.is_file():
            raise LoaderPackageError(
                f"npm pack of the loader package failed: {done.stderr.strip()[-2000:]}",
                where=str(PACKAGE_JSON),
                hint="is crates/wasm/js/package.json current? `python -m pipeline.js.package`",
                error_id="loader-package.pack",
            )
        return tarball.name, tarball.read_bytes()


def render(version: str) -> bytes:
    doc = {
        "name": PACKAGE_NAME,
        "version": version,
        "description": "TinyRustLM loader: verifies a signed release, picks the best Wasm lane, "
        "self-tests it and runs the model (browsers and node)",
        "license": "Apache-2.0",
        "type": "module",
        "main": "./loader.js",
        "types": f"./{TYPES}",
        "exports": {
            ".": {
                "types": f"./{TYPES}",
                "browser": "./loader.js",
                "node": "./loader.js",
                "default": "./loader.js",
            },
            "./coi-serviceworker.js": "./coi-serviceworker.js",
            "./worker.js": "./worker.js",
            "./package.json": "./package.json",
        },
        "files": [*MODULES, TYPES],
        "engines": {"node": ">=20"},
        "sideEffects": ["./worker.js", "./coi-serviceworker.js"],
    }
    return (json.dumps(doc, indent=2) + "\n").encode("utf-8")


def main() -> int:
    target = REPO_ROOT / PACKAGE_JSON
    target.write_bytes(render(release_version()))
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
