"""`tinyrustlm-release lanes`: release.yml's job matrices, from manifests/lanes.toml.

The workflow never lists a lane: its plan job runs `lanes --github-output` and every build and
smoke job is a matrix entry of what this prints.

    build: {"include": [{"lane": id, "native_runner": label or ""}, ...]}  every lane, in order
    smoke: {"include": [{"lane": id, "runner": native_runner}, ...]}  lanes with a native_runner

On a tag push the plan job also passes `--release-tag TAG`: a tag that is not `v` + the
project's version refuses before any lane builds (the bundle is named by the version, so a
`v0.2.0` tag would otherwise publish `tinyrustlm-0.1.0`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pipeline.errors import EXIT_OK, CheckFailed, TabledError
from pipeline.paths import LANES_FILE
from pipeline.tree.lanes import LanesFile, load_lanes
from pipeline.tree.sources import project_version
from verify.shell.result import Outcome

TAG_ERRORS: dict[str, str] = {
    "release.tag-mismatch": "tag the commit whose pyproject.toml [project].version the tag "
    "names (git tag vVERSION), or bump the version and tag again",
}


class TagMismatch(TabledError, CheckFailed):
    """The pushed tag does not name the version the release would carry."""

    table = TAG_ERRORS


def check_release_tag(tag: str, version: str) -> None:
    """A release tag is exactly `v` + the project version (no normalising: tags are names)."""
    if tag != f"v{version}":
        raise TagMismatch(
            f"the tag {tag!r} does not name this tree's version {version!r} "
            f"(expected 'v{version}')",
            error_id="release.tag-mismatch",
            where="pyproject.toml [project].version",
        )


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
    parser.add_argument(
        "--release-tag",
        metavar="TAG",
        help="refuse (exit 1) unless TAG is 'v' + pyproject's version (release.yml, tag pushes)",
    )


def run(args: argparse.Namespace) -> Outcome:
    if args.release_tag is not None:
        check_release_tag(args.release_tag, project_version(args.repo))
    found = matrices(load_lanes(args.repo / LANES_FILE))
    if args.github_output:
        for name, value in found.items():
            print(f"{name}={json.dumps(value, separators=(',', ':'))}")
    else:
        print(json.dumps(found, indent=2))
    return Outcome(EXIT_OK, found)
