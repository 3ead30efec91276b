"""Every real artifact of the last build in build/<lane>/ passes its lane's policy."""

from __future__ import annotations

from pathlib import Path

import pytest

from verify.inspect import LANES, inspect_artifact

BUILD = Path(__file__).resolve().parents[2] / "build"
SUFFIXES = {"": "native (Linux)", ".exe": "native (Windows)", ".wasm": "wasm"}


def _artifacts() -> list[tuple[Path, str]]:
    found = []
    for lane in LANES:
        folder = BUILD / lane
        if not folder.is_dir():
            continue
        wasm = lane.endswith("wasm32")
        for path in sorted(folder.iterdir()):
            if not path.is_file():
                continue
            head = path.read_bytes()[:4]
            if (wasm and head == b"\0asm") or (not wasm and head[:2] in (b"\x7fE", b"MZ")):
                found.append((path, lane))
    return found


ARTIFACTS = _artifacts()


@pytest.mark.integration
@pytest.mark.skipif(not ARTIFACTS, reason="no real artifacts in build/<lane>/: run the build first")
@pytest.mark.parametrize(("path", "lane"), ARTIFACTS,
                         ids=[f"{lane}-{p.name}" for p, lane in ARTIFACTS])  # fmt: skip
def test_real_artifact_passes_its_lane(path: Path, lane: str) -> None:
    report = inspect_artifact(path, lane)
    assert [f for f in report.findings if not f.ok] == []
