"""Native lanes: the bundle's `tinyrustlm run --json`, one process per case.

How a binary runs here follows from its target triple (the machine's own architecture runs
directly, another Linux architecture under qemu-user, Windows under wine), never from a lane
id. The x86_64 binary is also the oracle every other row is compared with.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pipeline.conformance.results import CaseResult
from pipeline.io import process
from pipeline.io.process import CommandTimedOut, CommandUnstartable
from pipeline.lanebuild.smoke import WINE
from verify.formats.conformance import SamplerCase

CASE_TIMEOUT_SECONDS = 120


@dataclass(frozen=True)
class NativeEngine:
    name: str  # native, qemu, wine
    prefix: tuple[str, ...]
    env: dict[str, str] | None


def engine_for(target: str, scratch: Path) -> NativeEngine | None:
    """How this machine runs a binary for `target`; None when it cannot."""
    arch, _, rest = target.partition("-")
    if "windows" in rest:
        prefix = scratch / "wine-prefix"
        prefix.mkdir(parents=True, exist_ok=True)
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(scratch),
            "WINEPREFIX": str(prefix),
            "WINEDEBUG": "-all",
            "DISPLAY": "",
        }
        return NativeEngine("wine", (WINE,), env) if Path(WINE).exists() else None
    if "linux" not in rest:
        return None
    if arch == platform.machine():
        return NativeEngine("native", (), None)
    qemu = Path(f"/usr/bin/qemu-{arch}-static")
    sysroot = Path(f"/usr/{arch}-linux-gnu")
    if not qemu.exists():
        return None
    return NativeEngine("qemu", (str(qemu), "-L", str(sysroot)), None)


def engine_version(engine: NativeEngine) -> str:
    if engine.name == "native":
        return f"{platform.system()} {platform.release()} {platform.machine()}"
    argv = [engine.prefix[0], "--version"]
    try:
        done = process.run(argv, timeout=60, env=engine.env)
    except (CommandUnstartable, CommandTimedOut) as exc:
        return f"unknown ({exc.caught})"
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[0] if lines else "unknown"


def _decimal(value: float) -> str:
    return repr(float(value))  # dyadic values only (cases.py): exact in f32


def run_case(engine: NativeEngine, binary: Path, model: Path, case: SamplerCase) -> CaseResult:
    argv = [
        *engine.prefix,
        str(binary),
        "run",
        "--model",
        str(model),
        "--prompt",
        case.prompt,
        "--seed",
        str(case.seed),
        "--stream",
        str(case.stream),
        "--max-tokens",
        str(case.max_tokens),
        "--temperature",
        _decimal(case.temperature),
        "--top-k",
        str(case.top_k),
        "--top-p",
        _decimal(case.top_p),
        "--repetition-penalty",
        _decimal(case.repetition_penalty),
        "--json",
    ]
    env = None if engine.env is None else {**engine.env}
    try:
        done = process.run(
            argv,
            timeout=CASE_TIMEOUT_SECONDS,
            env=env if env is not None else dict(os.environ),
        )
    except CommandTimedOut:
        return CaseResult.failed(
            case.id, f"no answer within {CASE_TIMEOUT_SECONDS}s", timed_out=True
        )
    except CommandUnstartable as exc:
        return CaseResult.failed(case.id, f"{argv[0]}: {exc.strerror}")
    if done.returncode != 0:
        why = (done.stderr.strip() or done.stdout.strip()).splitlines()
        return CaseResult.failed(case.id, f"exit {done.returncode}: {why[-1] if why else ''}")
    try:
        doc = json.loads(done.stdout)
        decode_ms = [float(v) for v in doc["decode_ms"]]
        return CaseResult(
            case.id,
            tuple(int(t) for t in doc["tokens"]),
            str(doc["final_rng_state"]),
            str(doc["stop"]),
            ttft_ms=float(doc["prefill_ms"]) + (decode_ms[0] if decode_ms else 0.0),
            decode_ms=tuple(decode_ms[1:]),
        )
    except (ValueError, KeyError, TypeError) as exc:
        return CaseResult.failed(case.id, f"unreadable run --json output: {exc}")


# A wineserver that outlives each case (and exits by itself SERVER_LINGER seconds after the
# last one): one start-up instead of one per case, ~2.5 s -> ~0.25 s per case here.
SERVER_LINGER = "-p30"


def _wineserver(engine: NativeEngine, flag: str) -> None:
    server = str(Path(engine.prefix[0]).parent / "wineserver")
    with contextlib.suppress(CommandUnstartable, CommandTimedOut):
        process.run([server, flag], env=engine.env, timeout=60, text=False)


def run_cases(
    engine: NativeEngine,
    binary: Path,
    model: Path,
    cases: list[SamplerCase],
    progress: Callable[[int], None] | None = None,
) -> list[CaseResult]:
    out = []
    if engine.name == "wine":
        # a fresh prefix is set up (and its server restarted) by the first program: do that
        # first, or each case would still start a server of its own
        with contextlib.suppress(CommandUnstartable, CommandTimedOut):
            process.run(
                [*engine.prefix, str(binary), "--help"],
                env=engine.env,
                timeout=CASE_TIMEOUT_SECONDS,
                text=False,
            )
        _wineserver(engine, SERVER_LINGER)
    try:
        for i, case in enumerate(cases):
            out.append(run_case(engine, binary, model, case))
            if progress is not None:
                progress(i + 1)
    finally:
        if engine.name == "wine":
            _wineserver(engine, "-k")  # stop the server this run started
    return out
