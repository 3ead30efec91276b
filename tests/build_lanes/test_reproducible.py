"""Third-party reproduction: rebuild a release's revision elsewhere and compare byte for byte.

The rebuild runs in a clone at another path, with another HOME, TZ, locale and umask, and at
another time of day than the release's build; every one of the six artifacts must match.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipeline.lanebuild.records import BuildIndex
from pipeline.reproduce import compare_bundle
from tests.clones import run_build
from verify.formats.manifest import ModuleManifest

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Reproduction:
    workdir: Path
    done: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def reproduction(
    built_clone: Path, released_bundle: Path, tmp_path_factory: pytest.TempPathFactory
) -> Reproduction:
    workdir = tmp_path_factory.mktemp("third-party") / "a" / "much" / "deeper" / "place"
    home = tmp_path_factory.mktemp("home")
    env = {**os.environ, "PYTHONPATH": str(built_clone), "HOME": str(home),
           "TZ": "Pacific/Kiritimati", "LANG": "de_DE.UTF-8", "LC_ALL": "de_DE.UTF-8"}
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "reproduce", str(released_bundle),
         "--source", str(built_clone), "--workdir", str(workdir)],
        capture_output=True, text=True, env=env, umask=0o077, cwd=home,
    )
    return Reproduction(workdir, done)


def test_every_lane_reproduces_bit_for_bit(reproduction: Reproduction) -> None:
    assert reproduction.done.returncode == 0, reproduction.done.stderr[-3000:]
    assert "6/6 artifact(s) reproduced bit for bit" in reproduction.done.stdout


def test_an_artifact_not_built_from_the_source_is_named_with_its_section(
    reproduction: Reproduction, released_bundle: Path, tmp_path: Path
) -> None:
    # A bundle whose simd128 module was swapped for other bytes (and the manifest re-stated to
    # match them): the rebuild from source must expose it, naming the lane and the section.
    bundle = tmp_path / "bundle"
    shutil.copytree(released_bundle, bundle)
    manifest = ModuleManifest.model_validate_json((bundle / "manifest.json").read_bytes())
    url, lane = manifest.lanes()[1]
    data = bytearray((bundle / url).read_bytes())
    data[len(data) // 2] ^= 0x40
    (bundle / url).write_bytes(bytes(data))
    claimed = hashlib.sha256(bytes(data)).hexdigest()
    manifest = manifest.model_copy(update={"artifacts": [
        a.model_copy(update={"sha256": claimed}) if a.url == url else a
        for a in manifest.artifacts]})
    rebuilt_root = reproduction.workdir / "tinyrustlm"
    index = BuildIndex.model_validate_json((rebuilt_root / "build" / "index.json").read_bytes())
    verdicts = compare_bundle(bundle, manifest, index, rebuilt_root)
    assert [v.lane for v in verdicts if not v.identical] == [lane]
    difference = next(v.difference for v in verdicts if v.lane == lane) or ""
    assert "in section" in difference


def test_a_noop_rebuild_is_served_from_the_cache(built_clone: Path) -> None:
    done = run_build(built_clone)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.count("cached (inputs unchanged)") == 6
