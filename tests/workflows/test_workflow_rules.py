"""The workflows and the verify Action obey the supply-chain rules of `rules.py`, actionlint
accepts the workflows, and each rule (and actionlint) catches a planted breach."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .rules import violations

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))
ACTION = REPO / "verify-action" / "action.yml"
RELEASE = REPO / ".github" / "workflows" / "release.yml"
CHECKOUT = "uses: actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1 # v7.0.1"


def test_the_expected_workflows_exist() -> None:
    assert sorted(p.name for p in WORKFLOWS) == ["ci.yml", "release.yml", "reproduce.yml"]


@pytest.mark.parametrize("path", [*WORKFLOWS, ACTION], ids=lambda p: p.name)
def test_every_workflow_and_the_action_follow_the_rules(path: Path) -> None:
    assert violations(path.read_text(encoding="utf-8"), path.name) == []


# (name, text replaced in release.yml, its replacement, the rule that must fire)
PLANTED = [
    ("tag-not-sha", CHECKOUT, "uses: actions/checkout@v7 # v7", "uses.unpinned"),
    (
        "short-sha",
        CHECKOUT,
        "uses: actions/checkout@3d3c42e5aac5 # v7.0.1",
        "uses.unpinned",
    ),
    (
        "no-version-comment",
        CHECKOUT,
        "uses: actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1",
        "uses.unpinned",
    ),
    ("top-level-write", "permissions: {}\n", "permissions: write-all\n", "permissions.top-level"),
    (
        "top-level-missing",
        "\npermissions: {}\n",
        "\n",
        "permissions.top-level",
    ),
    (
        "job-without-permissions",
        "    needs: plan\n    runs-on: ubuntu-24.04\n    permissions:\n      contents: read\n",
        "    needs: plan\n    runs-on: ubuntu-24.04\n",
        "permissions.job-missing",
    ),
    (
        "id-token-in-assemble",
        "    environment: release\n    permissions:\n      contents: read\n",
        "    environment: release\n    permissions:\n      contents: read\n      id-token: write\n",
        "permissions.write",
    ),
    (
        "pull-request-target",
        "  workflow_dispatch: {}\n",
        "  workflow_dispatch: {}\n  pull_request_target: {}\n",
        "trigger.pull-request-target",
    ),
    (
        "event-in-run",
        'run: .venv/bin/tinyrustlm-release build --lane "$LANE"',
        'run: .venv/bin/tinyrustlm-release build --lane "${{ github.event.inputs.lane }}"',
        "run.expression",
    ),
    (
        "credentials-persisted",
        "        with:\n          persist-credentials: false\n      - name: virtualenv from "
        "requirements.lock\n        run: .ci/venv\n      - id: lanes",
        "      - name: virtualenv from requirements.lock\n        run: .ci/venv\n      - id: lanes",
        "checkout.credentials",
    ),
    (
        "secret-in-build-job",
        "    env:\n      LANE: ${{ matrix.lane }}\n",
        "    env:\n      LANE: ${{ matrix.lane }}\n      KEY: ${{ secrets.RELEASE_KEY }}\n",
        "secrets.in-build-job",
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "rule"), [c[1:] for c in PLANTED], ids=[c[0] for c in PLANTED]
)
def test_a_planted_breach_is_caught(old: str, new: str, rule: str) -> None:
    text = RELEASE.read_text(encoding="utf-8")
    assert text.count(old) >= 1, f"the planted case no longer matches release.yml: {old!r}"
    planted = text.replace(old, new, 1)
    found = violations(planted, RELEASE.name)
    assert any(v.startswith(rule + ":") for v in found), found


def _actionlint() -> str:
    found = shutil.which("actionlint", path=str(Path(sys.executable).parent))
    assert found, "actionlint is not installed: it is pinned in requirements.lock"
    return found


def test_actionlint_accepts_the_workflows() -> None:
    done = subprocess.run(
        [_actionlint(), "-color=false"], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_refuses_a_broken_workflow(tmp_path: Path) -> None:
    broken = RELEASE.read_text(encoding="utf-8").replace(
        "needs.plan.outputs.smoke", "needs.plan.outputs.no_such_output", 1
    )
    (tmp_path / "release.yml").write_text(broken, encoding="utf-8")
    done = subprocess.run(
        [_actionlint(), "-color=false", str(tmp_path / "release.yml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1 and "no_such_output" in done.stdout, done.stdout
