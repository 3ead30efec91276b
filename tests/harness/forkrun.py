"""Run many CLI command lines in child processes, cheaply: a zygote imports both CLIs once and
forks one child per command line (a fresh interpreter per line would spend ~2 s importing).

Each child is its own process group with an address-space limit, stdout and stderr in files;
the zygote runs `parallel` children at a time, kills a child (and its group) that outlives the
timeout, and reports each child's exit code and peak memory (wait4's ru_maxrss, which counts
the child's reaped descendants too).

    python -m tests.harness.forkrun CASES.json RESULTS.json --parallel 2 --timeout 20
CASES.json: [{"name", "cli": "release"|"verify", "argv": [...], "cwd", "out", "err"}, ...]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ADDRESS_SPACE = 4 << 30  # a safety net: an unbounded read dies here, long before the machine


def _child(case: dict[str, Any]) -> None:
    os.setpgid(0, 0)
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    out = os.open(case["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err = os.open(case["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(out, 1)
    os.dup2(err, 2)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.chdir(case["cwd"])
    code = 1
    try:
        from pipeline import cli as release_cli
        from verify import cli as verify_cli

        main = release_cli.main if case["cli"] == "release" else verify_cli.main
        code = main(case["argv"])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # what the interpreter would print on an uncaught exception
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


def run_all(cases: list[dict[str, Any]], parallel: int, timeout: float) -> list[dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    waiting = list(cases)
    running: dict[int, tuple[dict[str, Any], float]] = {}
    while waiting or running:
        while waiting and len(running) < parallel:
            case = waiting.pop(0)
            pid = os.fork()
            if pid == 0:
                _child(case)
            running[pid] = (case, time.monotonic())
        pid, status, usage = os.wait4(-1, os.WNOHANG)
        if pid == 0:
            now = time.monotonic()
            for child, (case, started) in running.items():
                if now - started > timeout and not case.get("killed"):
                    case["killed"] = True
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(child, signal.SIGKILL)
            time.sleep(0.02)
            continue
        case, started = running.pop(pid)
        results[case["name"]] = {
            "name": case["name"],
            "exit_code": os.waitstatus_to_exitcode(status),
            "timed_out": bool(case.get("killed")),
            "max_rss_kib": usage.ru_maxrss,
            "seconds": time.monotonic() - started,
        }
    return [results[c["name"]] for c in cases]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("cases", type=Path)
    parser.add_argument("results", type=Path)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=20.0)
    args = parser.parse_args()
    # imported before forking: each child starts with both CLIs loaded
    from pipeline import cli as release_cli  # noqa: F401
    from verify import cli as verify_cli  # noqa: F401

    cases = json.loads(args.cases.read_text(encoding="utf-8"))
    results = run_all(cases, args.parallel, args.timeout)
    args.results.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
