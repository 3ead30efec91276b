"""Smoke-run each artifact right after it is built: its startup self-test in a real engine.

Runners by name, in a table; each lane names its runner in manifests/lanes.toml (`smoke`).
A runner that cannot run here says so (`not-run`) and never claims the artifact ran.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from pipeline.io import process
from pipeline.io.inputs import parse_output
from pipeline.io.process import CommandTimedOut, CommandUnstartable
from pipeline.lanebuild.records import SmokeResult
from pipeline.toolchain import nodejs
from pipeline.tree.lanes import SmokeRunner
from pipeline.wasmhost import engine_name

TIMEOUT_SECONDS = 120
QEMU = "/usr/bin/qemu-aarch64-static"
AARCH64_SYSROOT = "/usr/aarch64-linux-gnu"
WINE = "/usr/lib/wine/wine64"
NODE_HOST_SELFTEST = Path("crates/wasm/js/selftest.mjs")
# The engine names the runners write into a SmokeResult (`ENGINE_NAMES` lists them per runner).
WASMTIME = "wasmtime-py"
NODE = "node"
NODE_WORKERS = "node worker_threads x2"
NATIVE = "native x86_64"
QEMU_ENGINE = "qemu-aarch64-static"
WINE_ENGINE = "wine64"


def _run(
    argv: list[str], engine: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> SmokeResult:
    try:
        done = process.run(argv, timeout=TIMEOUT_SECONDS, env=env, cwd=cwd)
    except CommandUnstartable as exc:
        if not exc.missing:
            raise
        return SmokeResult(status="not-run", engine=engine, detail=f"{argv[0]} is not installed")
    except CommandTimedOut:
        return SmokeResult(
            status="fail", engine=engine, detail=f"no answer within {TIMEOUT_SECONDS}s"
        )
    # The program's own last line; stderr (e.g. wine's prefix chatter) only if stdout is empty.
    output = (done.stdout.strip() or done.stderr.strip()).splitlines()
    detail = output[-1][:300] if output else ""
    if done.returncode == 0:
        return SmokeResult(status="pass", engine=engine, detail=detail)
    return SmokeResult(status="fail", engine=engine, detail=f"exit {done.returncode}: {detail}")


def _wasmtime(features: str) -> Callable[[Path, Path, Path], SmokeResult]:
    """`features`: smoke_wasmtime's --features (mvp, simd128, relaxed-simd: the self-test runs
    once with wasmtime's relaxed SIMD deterministic and once with its native semantics)."""

    def runner(artifact: Path, repo_root: Path, scratch: Path) -> SmokeResult:
        result = _run(
            [
                sys.executable,
                "-m",
                "pipeline.lanebuild.smoke_wasmtime",
                str(artifact),
                "--features",
                features,
            ],
            WASMTIME,
            cwd=repo_root,
        )
        if result.status == "pass":
            out = dict(parse_output(result.detail, "wasmtime-py output"))
            runs = " and ".join(dict(out.get("codes", {})))
            detail = "tr_self_test() == 0" + (f" (relaxed SIMD {runs})" if runs else "")
            return SmokeResult(status="pass", engine=str(out.get("engine")), detail=detail)
        return result

    return runner


def _node_threads(artifact: Path, repo_root: Path, scratch: Path) -> SmokeResult:
    host = repo_root / NODE_HOST_SELFTEST
    if not host.is_file():
        return SmokeResult(
            status="not-run", engine=NODE, detail=f"{NODE_HOST_SELFTEST} does not exist yet"
        )
    try:
        node = nodejs.executable()
    except nodejs.NodeMissing as exc:
        return SmokeResult(status="not-run", engine=NODE, detail=exc.message)
    return _run([str(node), str(host), str(artifact), "--workers", "2"], NODE_WORKERS)


def _native(artifact: Path, repo_root: Path, scratch: Path) -> SmokeResult:
    return _run([str(artifact), "self-test"], NATIVE)


def _qemu(artifact: Path, repo_root: Path, scratch: Path) -> SmokeResult:
    return _run([QEMU, "-L", AARCH64_SYSROOT, str(artifact), "self-test"], QEMU_ENGINE)


def _wine(artifact: Path, repo_root: Path, scratch: Path) -> SmokeResult:
    prefix = scratch / "wine-prefix"
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(scratch / "home"),
        "WINEPREFIX": str(prefix),
        "WINEDEBUG": "-all",
        "DISPLAY": "",
    }
    if not (prefix / "system.reg").is_file():
        # Make the prefix first and wait until wineserver has written it: a first run that
        # makes it on the fly was seen to fail ("could not load kernel32.dll") on a busy machine.
        prefix.mkdir(parents=True, exist_ok=True)
        made = _run([WINE, "wineboot", "--init"], WINE_ENGINE, env=env)
        if made.status != "pass":
            return made
        _run([str(Path(WINE).parent / "wineserver"), "-w"], WINE_ENGINE, env=env)
    return _run([WINE, str(artifact), "self-test"], WINE_ENGINE, env=env)


Runner = Callable[[Path, Path, Path], SmokeResult]
RUNNERS: dict[SmokeRunner, Runner] = {
    "wasmtime-mvp": _wasmtime("mvp"),
    "wasmtime-simd128": _wasmtime("simd128"),
    "wasmtime-relaxed-simd": _wasmtime("relaxed-simd"),
    "node-workers": _node_threads,
    "native": _native,
    "qemu-aarch64": _qemu,
    "wine64": _wine,
}


def engine_names(runner: SmokeRunner) -> tuple[str, ...]:
    """Every engine name `runner` can write into a SmokeResult, the one of a passing run
    first (a handed-over record naming another engine is refused: lanebuild.agreement).
    wasmtime's passing run names the pinned wasmtime-py (`engine_name`)."""
    wasmtime = (engine_name(), WASMTIME)
    names: dict[SmokeRunner, tuple[str, ...]] = {
        "wasmtime-mvp": wasmtime,
        "wasmtime-simd128": wasmtime,
        "wasmtime-relaxed-simd": wasmtime,
        "node-workers": (NODE_WORKERS, NODE),
        "native": (NATIVE,),
        "qemu-aarch64": (QEMU_ENGINE,),
        "wine64": (WINE_ENGINE,),
    }
    return names[runner]


def smoke(runner: SmokeRunner, artifact: Path, repo_root: Path, scratch: Path) -> SmokeResult:
    """Run `artifact`'s self-test with the named runner (lanes.toml validated the name)."""
    return RUNNERS[runner](artifact, repo_root, scratch)
