"""`tinyrustlm-release golden`: regenerate tests/golden/ from the native scalar oracle.

The oracle is the native scalar release binary of the lane marked `golden_oracle` in
manifests/lanes.toml (the same bytes a release ships), run on the `small` model packed with
seed 7, and on its integer-tier twin `small-int8` (crates/core/CONTRACT.md, sections 7 and 10).
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from pipeline.errors import EXIT_OK, PipelineError
from pipeline.io import process
from pipeline.io.atomic import write_atomic
from pipeline.lanebuild.driver import build_lanes
from pipeline.modelpack import PRESETS, pack
from pipeline.tree.snapshot import read_tree
from verify.shell.result import Outcome


class OracleFailed(PipelineError):
    """The native oracle did not run to the end."""

    error_id = "golden.oracle-failed"
    default_hint = (
        "build the golden oracle lane of lanes.toml first (tinyrustlm-release build --lane ID) "
        "and read its stderr in the message"
    )


SMALL_SEED = 7


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", type=Path, default=Path(), help="repository root")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("tests/golden"),
        help="folder of golden vectors (default: tests/golden)",
    )


def run(args: argparse.Namespace) -> Outcome:
    repo: Path = args.repo.resolve()
    say = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    tree = read_tree(repo)
    oracle_lane = tree.lanes.golden_oracle.id
    index = build_lanes(tree, [oracle_lane], False, say)
    oracle = repo / next(e.artifact for e in index.lanes if e.lane == oracle_lane)
    model = repo / "build" / "models" / "small.trlm"
    model.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(model, pack(PRESETS["small"], SMALL_SEED))
    int8_model = repo / "build" / "models" / "small-int8.trlm"
    write_atomic(int8_model, pack(PRESETS["small-int8"], SMALL_SEED))
    revision = tree.git.revision
    generated = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    argv = [
        str(oracle),
        "golden",
        "--out",
        str(args.out),
        "--small-model",
        str(model),
        "--int8-model",
        str(int8_model),
        "--source-revision",
        revision,
        "--generated-utc",
        generated,
    ]
    done = process.run(argv, cwd=repo)
    if done.returncode != 0:
        raise OracleFailed(
            f"the oracle failed (exit {done.returncode}): {done.stderr.strip()[-500:]}",
            where=" ".join(argv),
        )
    print(done.stdout.strip())
    return Outcome(EXIT_OK, {"out": str(args.out), "oracle": oracle_lane, "revision": revision})
