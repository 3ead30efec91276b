"""`tinyrustlm-release toolchain install|check|lock`."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from pipeline import paths
from pipeline.errors import EXIT_CHECK_FAILED, EXIT_OK, EXIT_USAGE, PipelineError
from pipeline.toolchain.check import as_json, compare, drifted, render_table
from pipeline.toolchain.export import export, install_from
from pipeline.toolchain.install import install
from pipeline.toolchain.lockfile import load_lock, load_seed
from pipeline.toolchain.relock import relock
from verify.shell.result import Outcome


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action",
        choices=["install", "check", "lock", "export"],
        help="install: bring the machine to the lock; check: field-by-field drift; lock: "
        "re-lock from the seed; export DIR: write every pinned .deb, named by its SHA-256",
    )
    parser.add_argument(
        "folder",
        nargs="?",
        type=Path,
        default=None,
        help="export: the folder to write the pinned .debs into",
    )
    parser.add_argument(
        "--from",
        dest="from_dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="install: from a `toolchain export` folder only, with apt's sources pointing "
        "nowhere (no network)",
    )
    parser.add_argument(
        "--reinstall",
        action="store_true",
        help="install --from: reinstall every pinned package from the folder",
    )
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


class UsageError(PipelineError):
    """A `toolchain` option given to an action it does not belong to."""

    error_id = "toolchain.usage"
    default_hint = "see `tinyrustlm-release toolchain --help`"
    exit_code = EXIT_USAGE


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> Outcome:
    if (args.folder is not None) != (args.action == "export"):
        raise UsageError(
            "a folder goes with `toolchain export DIR` only",
            where="toolchain " + args.action,
        )
    if (args.from_dir is not None or args.reinstall) and args.action != "install":
        raise UsageError(
            "--from and --reinstall go with `toolchain install`",
            where="toolchain " + args.action,
        )
    if args.reinstall and args.from_dir is None:
        raise UsageError(
            "--reinstall needs --from DIR",
            where="toolchain install",
        )
    if args.action == "lock":
        changed = relock(load_seed(args.seed), args.lock)
        print(f"{args.lock}: {'rewritten' if changed else 'unchanged'}")
        return Outcome(EXIT_OK, {"lock": str(args.lock), "rewritten": changed})
    lock = load_lock(args.lock)
    if args.action == "export":
        started = time.monotonic()
        written = export(lock, args.folder, say)
        size = sum(p.stat().st_size for p in written)
        print(
            f"{args.folder}: {len(written)} pinned .deb(s), {size / 1e6:.1f} MB, each checked "
            f"against {args.lock.name} ({time.monotonic() - started:.1f}s)"
        )
        debs = [{"file": str(p), "size": p.stat().st_size} for p in written]
        return Outcome(EXIT_OK, {"folder": str(args.folder), "debs": debs, "bytes": size})
    if args.action == "install":
        started = time.monotonic()
        if args.from_dir is not None:
            count = install_from(lock, args.from_dir, say, reinstall=args.reinstall)
        else:
            count = install(lock, say)
        say(f"toolchain install: {count} package(s) installed in {time.monotonic() - started:.1f}s")
    diffs = compare(lock)
    print(render_table(diffs))  # with --json, the shell prints the document instead
    document = json.dumps(
        {"lock": str(args.lock), "ok": not drifted(diffs), "differences": as_json(diffs)},
        indent=2,
    )
    return Outcome(EXIT_CHECK_FAILED if drifted(diffs) else EXIT_OK, document=document)
