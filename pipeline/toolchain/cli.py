"""`tinyrustlm-release toolchain install|check|lock`."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from pipeline import paths
from pipeline.errors import EXIT_CHECK_FAILED, EXIT_OK
from pipeline.toolchain.check import as_json, compare, drifted, render_table
from pipeline.toolchain.install import install
from pipeline.toolchain.lockfile import load_lock, load_seed
from pipeline.toolchain.relock import relock


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["install", "check", "lock"])
    parser.add_argument(
        "--lock",
        type=Path,
        default=Path(paths.LOCK_FILE),
        help="lock file (default: ./toolchain.lock)",
    )
    parser.add_argument(
        "--seed",
        type=Path,
        default=Path("manifests/toolchain.toml"),
        help="what `lock` pins (default: ./manifests/toolchain.toml)",
    )
    parser.add_argument("--json", action="store_true", help="check: machine-readable differences")


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    if args.action == "lock":
        changed = relock(load_seed(args.seed), args.lock)
        print(f"{args.lock}: {'rewritten' if changed else 'unchanged'}")
        return EXIT_OK
    lock = load_lock(args.lock)
    if args.action == "install":
        started = time.monotonic()
        count = install(lock, say)
        say(f"toolchain install: {count} package(s) installed in {time.monotonic() - started:.1f}s")
    diffs = compare(lock)
    if args.json:
        print(
            json.dumps(
                {"lock": str(args.lock), "ok": not drifted(diffs), "differences": as_json(diffs)},
                indent=2,
            )
        )
    else:
        print(render_table(diffs))
    return EXIT_CHECK_FAILED if drifted(diffs) else EXIT_OK
