"""The bundle's `js/` as an npm package: `crates/wasm/js/package.json`, generated from the
release version (pyproject `[project].version`) so the two never differ.

`python -m pipeline.jspackage` rewrites it; tests/loader/test_package.py fails when it is stale.
"""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

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
