"""release.yml's matrices come from lanes.toml alone; both CLIs answer --version."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pipeline.lanebuild.job_matrix import matrices
from pipeline.tree.lanes import load_lanes
from pipeline.tree.sources import project_version

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


VERSION = project_version(REPO)
WORKFLOW = yaml.safe_load((REPO / ".github" / "workflows" / "release.yml").read_text())
(LANES_STEP,) = [s for s in WORKFLOW["jobs"]["plan"]["steps"] if s.get("id") == "lanes"]


def _lanes_step(tmp_path: Path, ref_type: str, ref_name: str) -> subprocess.CompletedProcess[str]:
    """The plan job's own `lanes` step script, run as the runner would (env from the step)."""
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    # the step calls .venv/bin/tinyrustlm-release: this interpreter's, on this repository
    (bin_dir / "tinyrustlm-release").write_text(
        f'#!/bin/sh\nexec {sys.executable} -m pipeline.cli "$@" --repo {REPO}\n'
    )
    (bin_dir / "tinyrustlm-release").chmod(0o755)
    output = tmp_path / "github_output"
    output.touch()
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "GITHUB_OUTPUT": str(output)}
    env |= {"REF_TYPE": ref_type, "REF_NAME": ref_name}
    assert LANES_STEP["env"] == {
        "REF_TYPE": "${{ github.ref_type }}",
        "REF_NAME": "${{ github.ref_name }}",
    }
    return subprocess.run(
        ["bash", "-e", "-c", LANES_STEP["run"]],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_tag_push_of_the_version_plans_the_release(tmp_path: Path) -> None:
    done = _lanes_step(tmp_path, "tag", f"v{VERSION}")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "github_output").read_text().startswith("build={")


@pytest.mark.parametrize(
    "tag", [VERSION, f"v{VERSION}.0", f"v{VERSION}rc1", f"V{VERSION}", f"v{VERSION} "]
)
def test_a_tag_that_is_not_v_version_stops_the_plan(tmp_path: Path, tag: str) -> None:
    done = _lanes_step(tmp_path, "tag", tag)
    assert done.returncode == 1, done.stdout
    assert done.stderr.splitlines()[0] == (
        f"error[release.tag-mismatch]: the tag {tag!r} does not name this tree's version "
        f"{VERSION!r} (expected 'v{VERSION}')"
    )
    assert (tmp_path / "github_output").read_text() == ""  # no matrix: no build job starts


def test_a_branch_dispatch_checks_no_tag(tmp_path: Path) -> None:
    done = _lanes_step(tmp_path, "branch", "not-a-version")
    assert done.returncode == 0, done.stderr
