"""release.yml's matrices come from lanes.toml alone; both CLIs answer --version."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.lanebuild.matrix import matrices
from pipeline.tree.lanes import load_lanes

REPO = Path(__file__).resolve().parents[2]
LANES = load_lanes(REPO / "manifests" / "lanes.toml")


def test_the_build_matrix_is_every_lane_in_order() -> None:
    build = matrices(LANES)["build"]["include"]
    assert [e["lane"] for e in build] == [lane.id for lane in LANES.lane]


def test_the_smoke_matrix_is_the_emulated_lanes_on_their_hardware() -> None:
    smoke = matrices(LANES)["smoke"]["include"]
    assert smoke == [
        {"lane": "aarch64-unknown-linux-gnu", "runner": "ubuntu-24.04-arm"},
        {"lane": "x86_64-pc-windows-gnu", "runner": "windows-2025"},
    ]
    emulated = {lane.id for lane in LANES.lane if lane.smoke in ("qemu-aarch64", "wine64")}
    assert {e["lane"] for e in smoke} == emulated


def test_github_output_lines_are_compact_json() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "lanes", "--github-output"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert [line.split("=", 1)[0] for line in lines] == ["build", "smoke"]
    assert all(" " not in line for line in lines)


def test_no_workflow_spells_a_lane_id() -> None:
    workflows = "".join(p.read_text() for p in (REPO / ".github" / "workflows").glob("*.yml"))
    assert [lane.id for lane in LANES.lane if lane.id in workflows] == []


@pytest.mark.parametrize(
    ("module", "prog"),
    [("pipeline.cli", "tinyrustlm-release"), ("verify.cli", "tinyrustlm-verify")],
)
def test_version_prints_version_and_revision(module: str, prog: str) -> None:
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    done = subprocess.run(
        [sys.executable, "-m", module, "--version"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(rf"{prog} \S+ \(revision {head}\)\n", done.stdout), done.stdout
