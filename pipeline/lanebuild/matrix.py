"""`tinyrustlm-release lanes`: release.yml's job matrices, from manifests/lanes.toml.

The workflow never lists a lane: its plan job runs `lanes --github-output` and every build and
smoke job is a matrix entry of what this prints.

    build: {"include": [{"lane": id, "native_runner": label or ""}, ...]}  every lane, in order
    smoke: {"include": [{"lane": id, "runner": native_runner}, ...]}  lanes with a native_runner
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pipeline.errors import EXIT_OK
from pipeline.paths import LANES_FILE
from pipeline.tree.lanes import LanesFile, load_lanes


def matrices(lanes: LanesFile) -> dict[str, dict[str, Any]]:
    """The build matrix (every lane) and the native-hardware smoke matrix."""
    return {
        "build": {
            "include": [
                {"lane": lane.id, "native_runner": lane.native_runner or ""} for lane in lanes.lane
            ]
        },
        "smoke": {
            "include": [
                {"lane": lane.id, "runner": lane.native_runner}
                for lane in lanes.lane
                if lane.native_runner is not None
            ]
        },
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", type=Path, default=Path(), help="repository root")
    parser.add_argument(
        "--github-output",
        action="store_true",
        help="print `build=JSON` and `smoke=JSON` lines for $GITHUB_OUTPUT (default: one JSON)",
    )


def run(args: argparse.Namespace) -> int:
    found = matrices(load_lanes(args.repo / LANES_FILE))
    if args.github_output:
        for name, value in found.items():
            print(f"{name}={json.dumps(value, separators=(',', ':'))}")
    else:
        print(json.dumps(found, indent=2))
    return EXIT_OK
