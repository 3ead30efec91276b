"""The bundle's `js/` as an npm package: `crates/wasm/js/package.json`, generated from the
release version (pyproject `[project].version`) so the two never differ.

`python -m pipeline.jspackage` rewrites it; tests/loader/test_package.py fails when it is stale.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.toolchain import nodejs

REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGE_JSON = Path("crates/wasm/js/package.json")
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
    """(file name, bytes) of `npm pack` of crates/wasm/js (see `pack_folder`)."""
    return pack_folder(repo_root / PACKAGE_JSON.parent, release_version(repo_root))


def pack_folder(folder: Path, version: str) -> tuple[str, bytes]:
    """`npm pack` of `folder` with the pinned node's npm. npm writes every entry with mtime
    1985-10-26 and owner 0 but keeps the file's mode, which a umask changes: the copy packed
    here is 0644 throughout, so the tarball is a function of the files' bytes alone
    (tests/loader/test_package.py packs twice, other mtimes and modes, and compares)."""
    with tempfile.TemporaryDirectory(prefix="tinyrustlm-npm-") as tmp:
        package = Path(tmp) / "package"
        shutil.copytree(folder, package)
        for path in package.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        npm_cli = nodejs.executable().parent.parent / "lib/node_modules/npm/bin/npm-cli.js"
        done = subprocess.run(
            [str(nodejs.executable()), str(npm_cli), "pack", "--ignore-scripts", str(package)],
            cwd=tmp,
            capture_output=True,
            text=True,
            check=False,
        )
        tarball = Path(tmp) / tarball_name(version)
        if done.returncode != 0 or not tarball.is_file():
            raise PipelineError(
                f"npm pack of the loader package failed: {done.stderr.strip()[-2000:]}",
                where=str(PACKAGE_JSON),
                hint="is crates/wasm/js/package.json current? `python -m pipeline.jspackage`",
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
