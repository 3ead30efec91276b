"""Where things are in a checkout: each path spelled once (relative to the repository root)."""

from __future__ import annotations

from pathlib import PurePosixPath

LOCK_FILE = PurePosixPath("toolchain.lock")
LANES_FILE = PurePosixPath("manifests/lanes.toml")
PYPROJECT = PurePosixPath("pyproject.toml")
REQUIREMENTS_LOCK = PurePosixPath("requirements.lock")
CRATES_DIR = PurePosixPath("crates")
JS_SOURCE_DIR = PurePosixPath("crates/wasm/js")
BUILD_DIR = PurePosixPath("build")
BUILD_INDEX = BUILD_DIR / "index.json"
DEV_KEYS_DIR = PurePosixPath(".dev-keys")
