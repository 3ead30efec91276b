"""Third-party reproduction: rebuild a release's revision elsewhere and compare byte for byte.

The rebuild runs in a clone at another path, with another HOME (so another std cache: every
std the release rebuilds for wasm32 and Windows is compiled again from scratch), TZ, locale and
umask, and at another time of day than the release's build; it verifies the bundle first,
then every one of the six artifacts and every unsigned document (manifest, SBOM, report, provenance
statement, SHA256SUMS, tarball) must match, and it signs a rebuild attestation that
`verify bundle --require-rebuilds 1` accepts.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipeline.documents.keys import generate_key_files
from pipeline.lanebuild.built import built_from_index
from pipeline.lanebuild.records import BuildIndex
from pipeline.lanebuild.stdbuild import CACHE_ENV as STD_CACHE_ENV
from pipeline.reproduce import compare_bundle, explain
from pipeline.tree.lanes import load_lanes
from pipeline.tree.snapshot import read_tree
from tests.clones import run_build
from verify.bundle.rebuilds import RebuildPolicy
from verify.bundle.trusted_keys import load_trust_root, load_trusted_keys, trust_root_from_keys
from verify.bundle.verifier import BundleVerifier, Requirements
from verify.formats.manifest import ModuleManifest

REPO_ROOT = Path(__file__).resolve().parents[3]
LANES = len(load_lanes(REPO_ROOT / "manifests" / "lanes.toml").lane)  # every artifact
# manifest, SBOM, both reports (verification-report.json, report.html), the memory plan,
# SHA256SUMS, the tarball and the provenance statement
DOCUMENTS = 8

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Reproduction:
    workdir: Path
    done: subprocess.CompletedProcess[str]
    attestation: Path
    rebuilders: Path
    trusted: Path


@pytest.fixture(scope="module")
def reproduction(
    built_clone: Path, released_bundle: Path, tmp_path_factory: pytest.TempPathFactory
) -> Reproduction:
    workdir = tmp_path_factory.mktemp("third-party") / "a" / "much" / "deeper" / "place"
    home = tmp_path_factory.mktemp("home")
    rebuilder = generate_key_files(home / "keys", "rebuilder", "release")
    trusted = built_clone / ".dev-keys" / "development.trusted-keys.json"
    attestation = home / "attestations" / "rebuild.json"
    attestation.parent.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if k != STD_CACHE_ENV},
        "PYTHONPATH": str(built_clone),
        "HOME": str(home),
        "TZ": "Pacific/Kiritimati",
        "LANG": "de_DE.UTF-8",
        "LC_ALL": "de_DE.UTF-8",
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipeline.cli",
            "reproduce",
            str(released_bundle),
            "--trusted-keys",
            str(trusted),
            "--allow-dev-key",
            "--source",
            str(built_clone),
            "--workdir",
            str(workdir),
            "--attest",
            "--key",
            str(rebuilder.private_pem),
            "--attest-out",
            str(attestation),
        ],
        capture_output=True,
        text=True,
        env=env,
        umask=0o077,
        cwd=home,
    )
    return Reproduction(workdir, done, attestation, rebuilder.trusted_keys, trusted)


def test_every_lane_reproduces_bit_for_bit(reproduction: Reproduction) -> None:
    assert reproduction.done.returncode == 0, reproduction.done.stderr[-3000:]
    assert f"{LANES}/{LANES} artifact(s) reproduced bit for bit" in reproduction.done.stdout
    assert f"{DOCUMENTS}/{DOCUMENTS} document(s) reproduced bit for bit" in reproduction.done.stdout
    assert "[1/6] bundle verified" in reproduction.done.stderr


def test_the_rebuild_attestation_satisfies_a_one_of_one_policy(
    reproduction: Reproduction, released_bundle: Path
) -> None:
    rebuilders = load_trust_root(reproduction.rebuilders)
    policy = RebuildPolicy(
        rebuilders.keys,
        1,
        (reproduction.attestation,),
        rebuilders.revoked,
        allow_dev_rebuilder=True,
    )
    verdict = BundleVerifier(trust_root_from_keys(load_trusted_keys(reproduction.trusted))).verify(
        released_bundle, Requirements(now=int(time.time()), allow_dev_key=True, rebuilds=policy)
    )
    (rebuilds,) = [s for s in verdict.steps if s.title == "independent rebuilds (K of N)"]
    assert rebuilds.detail.startswith("1 of 1 rebuilders")
    statement = json.loads(
        base64.b64decode(
            json.loads(reproduction.attestation.read_text())["dsseEnvelope"]["payload"]
        )
    )
    names = {s["name"] for s in statement["subject"]}  # every artifact and every document
    assert len(names) == LANES + DOCUMENTS
    assert {"manifest.json", "report.html", "memory-plan.json", "provenance statement"} <= names
    matched = statement["predicate"]["runDetails"]["byproducts"]
    assert all(m["annotations"]["matched"] for m in matched) and len(matched) == DOCUMENTS


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
    manifest = manifest.model_copy(
        update={
            "artifacts": [
                a.model_copy(update={"sha256": claimed}) if a.url == url else a
                for a in manifest.artifacts
            ]
        }
    )
    rebuilt_root = reproduction.workdir / "tinyrustlm"
    index = BuildIndex.model_validate_json((rebuilt_root / "build" / "index.json").read_bytes())
    verdicts = compare_bundle(bundle, manifest, built_from_index(read_tree(rebuilt_root), index))
    assert [v.lane for v in verdicts if not v.identical] == [lane]
    difference = next(v.difference for v in verdicts if v.lane == lane) or ""
    assert "in section" in difference
    # diffoscope's HTML report of the changed lane lands in the diff folder
    if shutil.which("diffoscope") is None:
        pytest.fail("Debian's diffoscope is not installed (.ci/run installs diffoscope-minimal)")
    rebuilt = {
        v.name: rebuilt_root / e.artifact for v in verdicts for e in index.lanes if e.lane == v.lane
    }
    explained = explain(verdicts, bundle, rebuilt, tmp_path / "diffs")
    (report,) = [v.diffoscope for v in explained if v.diffoscope]
    assert report is not None and Path(report).name == f"diffoscope.{Path(url).name}.html"
    assert b"diffoscope" in Path(report).read_bytes()


def test_a_noop_rebuild_is_served_from_the_cache(built_clone: Path) -> None:
    done = run_build(built_clone)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.count("cached (inputs unchanged)") == LANES
