"""Every real artifact of a clean build (every lane of the policy) passes its lane's policy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verify.inspect import inspect_artifact
from verify.policy import lane_kinds

LANES = list(lane_kinds())


@pytest.mark.integration
@pytest.mark.parametrize("lane", LANES)
def test_real_artifact_passes_its_lane(built_clone: Path, lane: str) -> None:
    index = json.loads((built_clone / "build" / "index.json").read_text(encoding="utf-8"))
    entry = next(e for e in index["lanes"] if e["lane"] == lane)
    report = inspect_artifact(built_clone / entry["artifact"], lane)
    assert [f for f in report.findings if not f.ok] == []
    assert report.findings, "a lane with no checks would pass vacuously"
