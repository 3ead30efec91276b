"""A smoke verdict kept for the next build: an artifact's self-test passed with a runner is not
run again while the artifact's bytes and the runner are both the same (issue 36).

A lane whose inputs changed (a commit touching crates/ that leaves an artifact's bytes as they
were, as a reproducible build does) is rebuilt, and before this every rebuilt lane was
smoke-run again, wine included. Now the build keeps, beside each lane's record,
`smoke-verdict.json`: the artifact's SHA-256, the runner's name and identity, and the verdict.
The next build reuses it only when all three match and the verdict was `pass`, and says so;
a changed artifact, a changed runner, a `fail` or a `not-run` (the runner may be installed
now) runs the self-test again.

A runner's identity is what decides its verdict besides the artifact: its pinned version
(toolchain.lock for node, qemu and wine; the installed wasmtime wheel for wasmtime-py; the host
for a native run), the digests of the harness files it runs (the JS host for node, the
wasmtime driver), and `PROTOCOL`, bumped when what a smoke run checks changes.
"""

from __future__ import annotations

import hashlib
import platform
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from pydantic import ValidationError

from pipeline.io.atomic import write_atomic
from pipeline.io.digest import sha256_file
from pipeline.lanebuild.records import SmokeResult
from pipeline.toolchain.lockfile import ToolchainLock
from pipeline.tree.lanes import SmokeRunner
from verify.formats.base import Frozen, Sha256Hex

PROTOCOL = 1
VERDICT_FILE = "smoke-verdict.json"
VERDICT_LIMIT_BYTES = 64 << 10

# runner -> the toolchain.lock tool whose pinned version it is (None: not a locked tool)
LOCKED_TOOL: dict[SmokeRunner, str | None] = {
    "wasmtime-mvp": None,
    "wasmtime-simd128": None,
    "wasmtime-relaxed-simd": None,
    "node-workers": "node",
    "native": None,
    "qemu-aarch64": "qemu-aarch64-static",
    "wine64": "wine64",
}
# runner -> the repository files it runs besides the artifact (their digests are its identity);
# every runner also runs pipeline/lanebuild/smoke.py (RUNNER_CODE), which decides pass or fail
RUNNER_CODE = "pipeline/lanebuild/smoke.py"
HARNESS: dict[SmokeRunner, tuple[str, ...]] = {
    "wasmtime-mvp": ("pipeline/lanebuild/smoke_wasmtime.py", "pipeline/wasmhost.py"),
    "wasmtime-simd128": ("pipeline/lanebuild/smoke_wasmtime.py", "pipeline/wasmhost.py"),
    "wasmtime-relaxed-simd": ("pipeline/lanebuild/smoke_wasmtime.py", "pipeline/wasmhost.py"),
    "node-workers": (
        "crates/wasm/js/selftest.mjs",
        "crates/wasm/js/host.js",
        "crates/wasm/js/worker.js",
        "crates/wasm/js/abi.js",
    ),
    "native": (),
    "qemu-aarch64": (),
    "wine64": (),
}


class SmokeVerdict(Frozen):
    artifact_sha256: Sha256Hex
    runner: str
    identity: str
    result: SmokeResult


def runner_identity(runner: SmokeRunner, lock: ToolchainLock, repo_root: Path) -> str:
    """One line naming the runner, its pinned version and its harness files' digests."""
    parts = [f"smoke protocol {PROTOCOL}", runner]
    tool = LOCKED_TOOL[runner]
    if tool is not None:
        versions = [t.version for t in lock.tool if t.name == tool]
        parts.append(f"{tool} {versions[0] if versions else 'unpinned'}")
    elif runner.startswith("wasmtime"):
        try:
            parts.append(f"wasmtime-py {metadata.version('wasmtime')}")
        except metadata.PackageNotFoundError:
            parts.append("wasmtime-py missing")
    else:
        parts.append(f"host {platform.system()} {platform.machine()} {platform.release()}")
    for rel in (RUNNER_CODE, *HARNESS[runner]):
        path = repo_root / rel
        digest = sha256_file(path)[:16] if path.is_file() else "missing"
        parts.append(f"{rel}@{digest}")
    return "; ".join(parts)


def _kept(path: Path) -> SmokeVerdict | None:
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > VERDICT_LIMIT_BYTES:
            return None
        return SmokeVerdict.model_validate_json(path.read_bytes())
    except (OSError, ValidationError, ValueError):
        return None  # damaged: run the self-test again


def smoke_once(
    lane_dir: Path,
    artifact_sha256: str,
    runner: SmokeRunner,
    identity: str,
    run: Callable[[], SmokeResult],
) -> tuple[SmokeResult, bool]:
    """(the verdict, whether it was reused): the kept one when the artifact and the runner are
    unchanged and it passed, else `run()`'s, which is then kept."""
    path = lane_dir / VERDICT_FILE
    kept = _kept(path)
    if (
        kept is not None
        and kept.artifact_sha256 == artifact_sha256
        and kept.runner == runner
        and kept.identity == identity
        and kept.result.status == "pass"
    ):
        return kept.result, True
    result = run()
    verdict = SmokeVerdict(
        artifact_sha256=artifact_sha256, runner=runner, identity=identity, result=result
    )
    write_atomic(path, verdict.model_dump_json(indent=2).encode("utf-8") + b"\n")
    return result, False


def identity_digest(identity: str) -> str:
    """A short name for an identity in the build's output."""
    return hashlib.sha256(identity.encode("utf-8")).hexdigest()[:12]
