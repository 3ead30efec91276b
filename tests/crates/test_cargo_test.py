"""`cargo test` over the crates/ workspace (crates/core/tests/*.rs and every `#[cfg(test)]`
module) with the pinned toolchain: toolchain.lock's cargo and rustc by absolute path, never a
rustup shim from PATH, in an environment of its own. Part of pytest so that `./nox -s tests`
and CI run the Rust tests."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from pipeline.toolchain.lockfile import load_lock

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKSPACE = REPO_ROOT / "crates"
# cached between runs (an unchanged workspace re-runs in seconds); never read by builds
SCRATCH = REPO_ROOT / "build" / ".scratch" / "cargo-test"
TIMEOUT_S = 1800
# Every integration-test target of the core crate must have run (a deleted or renamed file
# would otherwise just make the run shorter).
CORE_TEST_TARGETS = sorted(p.stem for p in (WORKSPACE / "core" / "tests").glob("*.rs"))
RESULT = re.compile(r"^test result: (\w+)\. (\d+) passed; (\d+) failed", re.MULTILINE)
RUNNING = re.compile(r"^\s+Running (\S+)", re.MULTILINE)


def cargo_test() -> subprocess.CompletedProcess[str]:
    lock = load_lock(REPO_ROOT / "toolchain.lock")
    if not Path(lock.rustc.cargo).is_file():
        pytest.fail(
            f"the pinned cargo {lock.rustc.cargo} is missing: run "
            "`tinyrustlm-release toolchain install`"
        )
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(SCRATCH / "home"),
        "CARGO_HOME": str(SCRATCH / "cargo-home"),
        "CARGO_TARGET_DIR": str(SCRATCH / "target"),
        "RUSTC": lock.rustc.binary,
        "CARGO_NET_OFFLINE": "true",
        "CARGO_TERM_COLOR": "never",
        "CARGO_INCREMENTAL": "0",
        "LC_ALL": "C",
    }
    return subprocess.run(
        [lock.rustc.cargo, "test", "--workspace", "--locked", "--offline", "--no-fail-fast"],
        cwd=WORKSPACE,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


@pytest.mark.integration
def test_cargo_test_passes_for_the_whole_workspace() -> None:
    done = cargo_test()
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"cargo test failed (exit {done.returncode}):\n{output[-6000:]}"
    results = [(status, int(p), int(f)) for status, p, f in RESULT.findall(output)]
    assert results and all(status == "ok" and f == 0 for status, _, f in results), results
    assert sum(p for _, p, _ in results) > 0
    ran = {Path(target).stem for target in RUNNING.findall(output)}
    missing = [t for t in CORE_TEST_TARGETS if t not in ran]
    assert not missing, f"core test targets that did not run: {missing}\n{sorted(ran)}"
