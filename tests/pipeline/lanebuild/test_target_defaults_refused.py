"""The drift the inspector exists for, built for real with the pinned rustc 1.96.

Since Rust 1.82/1.87 and LLVM 22, `wasm32-unknown-unknown`'s generic CPU enables multivalue,
reference-types, bulk-memory(-opt), nontrapping-fptoint, sign-ext and call-indirect-overlong.
Two real ways a "Wasm 1.0" lane gets them, each built from this repository's crates:

- the lane without its allowlist (no `-C target-cpu=mvp`, std rebuilt the same way);
- the lane's own mvp flags, but linked against a std built on the target's defaults: fat LTO
  merges std's bitcode and the features come back (rust#130604's mechanism).

verify must refuse both as the scalar lane, naming every unexpected feature and the first
instruction that needs it. (The release's own scalar artifact passes: test_build_artifacts.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.lanebuild.cargo import plan_run, run_cargo
from pipeline.lanebuild.stdbuild import ensure_sysroot
from pipeline.toolchain.lockfile import load_lock
from pipeline.tree.lanes import Lane, load_lanes
from verify.inspect import inspect_artifact

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
LANES = load_lanes(REPO / "manifests" / "lanes.toml")
SCALAR = next(lane for lane in LANES.lane if lane.id == "scalar-wasm32")
# What the generic CPU of LLVM 22 brings that Wasm 1.0 does not have, as verify names them.
DEFAULT_PROPOSALS = ("sign-extension", "bulk-memory-opt")


def _on_defaults(lane: Lane) -> Lane:
    flags = list(lane.rustflags)
    i = flags.index("target-cpu=mvp")
    return lane.model_copy(update={"rustflags": flags[: i - 1] + flags[i + 1 :]})


def _build(lane: Lane, std_of: Lane, tmp: Path) -> Path:
    if not Path("/usr/bin/rustc").exists():
        pytest.skip("pinned toolchain not installed: run `tinyrustlm-release toolchain install`")
    lock = load_lock(REPO / "toolchain.lock")
    sysroot = ensure_sysroot(std_of, lock).root
    run = plan_run(lane, LANES, lock, REPO / LANES.workspace, tmp / "scratch", 0, sysroot)
    run_cargo(lane, run, lambda _line: None)
    return run.final


def _refusals(artifact: Path) -> dict[str, str]:
    report = inspect_artifact(artifact, "scalar-wasm32")
    assert not report.ok
    return {f.id: f.evidence for f in report.findings if not f.ok}


def test_the_scalar_lane_without_its_allowlist_is_refused(tmp_path: Path) -> None:
    defaults = _on_defaults(SCALAR)
    failed = _refusals(_build(defaults, defaults, tmp_path))
    allowed = failed["wasm.proposals.allowed"]
    for proposal in DEFAULT_PROPOSALS:
        assert f"{proposal}: first " in allowed, allowed  # names the first instruction
    assert "function" in allowed and "offset 0x" in allowed
    assert "wasm.target_features.agree" in failed  # the section claims the defaults too


def test_mvp_code_linked_with_a_default_std_is_refused_after_lto(tmp_path: Path) -> None:
    failed = _refusals(_build(SCALAR, _on_defaults(SCALAR), tmp_path))
    allowed = failed["wasm.proposals.allowed"]
    assert any(f"{p}: first " in allowed for p in DEFAULT_PROPOSALS), allowed
