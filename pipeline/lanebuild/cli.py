"""`tinyrustlm-release build [--lane ID ...] [--force]`."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from pipeline import paths
from pipeline.errors import EXIT_CHECK_FAILED, EXIT_OK
from pipeline.lanebuild.driver import build_lanes
from pipeline.lanebuild.handoff import export_records
from pipeline.lanebuild.records import BuildIndex
from pipeline.toolchain.check import check_installed
from pipeline.tree.snapshot import read_tree
from verify.shell.progress import progress_bar, step_lines
from verify.shell.result import Outcome


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--lane",
        action="append",
        dest="lanes",
        metavar="ID",
        help="build only this lane (repeatable; default: every lane)",
    )
    parser.add_argument("--force", action="store_true", help="rebuild even if inputs are unchanged")
    parser.add_argument("--repo", type=Path, default=Path(), help="repository root")
    parser.add_argument(
        "--records-out",
        type=Path,
        default=None,
        metavar="DIR",
        help="also write the built lanes (artifact, record, index) into DIR "
        "for `release --from-records`",
    )


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def summary_table(index: BuildIndex) -> str:
    rows = [("lane", "size", "sha256", "smoke", "engine")]
    rows += [
        (e.lane, f"{e.size:,}", e.sha256[:16], e.smoke.status, e.smoke.engine) for e in index.lanes
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def lane_rows(index: BuildIndex) -> list[dict[str, object]]:
    """The --json rows of a build: each lane's artifact, size, digest and self-test."""
    return [
        {
            "lane": e.lane,
            "artifact": e.artifact,
            "size": e.size,
            "sha256": e.sha256,
            "smoke": e.smoke.status,
            "engine": e.smoke.engine,
        }
        for e in index.lanes
    ]


def run(args: argparse.Namespace) -> Outcome:
    started = time.monotonic()
    tree = read_tree(args.repo)
    tree.lanes.select(args.lanes)  # bad input first, before the toolchain probe
    check_installed(tree.lock, tree.lock_path, tree.build_dir)
    with progress_bar(args, "build") as bar:
        index = build_lanes(tree, args.lanes, args.force, step_lines(say, bar))
    print(summary_table(index))
    print(f"build/index.json: {len(index.lanes)} lane(s) in {time.monotonic() - started:.2f}s")
    records = None
    if args.records_out is not None:
        wanted = args.lanes or [e.lane for e in index.lanes]
        out = export_records(tree.root, index, wanted, args.records_out.resolve())
        print(f"records for {', '.join(wanted)}: {out}")
        records = str(out)
    failed = [e for e in index.lanes if e.smoke.status == "fail"]
    result = {"index": str(paths.BUILD_INDEX), "lanes": lane_rows(index), "records": records}
    return Outcome(EXIT_CHECK_FAILED if failed else EXIT_OK, result)
