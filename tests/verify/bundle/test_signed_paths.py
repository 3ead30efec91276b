"""No builder path is signed: the rule, the release's refusal, and `verify bundle` step 10."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from pipeline.documents.sign import sign_to_sigstore_bundle
from pipeline.errors import CheckFailed
from pipeline.tree.lanes import load_lanes
from tests.harness.release import REPO_ROOT, Harness, fake_report
from verify.bundle import verifier
from verify.bundle.errors import BuilderPathLeaked
from verify.formats.in_toto import IN_TOTO_PAYLOAD_TYPE
from verify.placeholders import absolute_paths_in, to_placeholders

# text -> the leaked paths the rule must find in it
RULE_CASES = {
    "pinned rustc": ("/usr/bin/rustc", []),
    "PATH list": ("/usr/bin:/bin", []),
    "linker flag": ("linker=/usr/bin/wasm-ld-14", []),
    "remap targets": ("--remap-path-prefix\x1f$WORKSPACE/crates=/src/tinyrustlm", []),
    "cargo remap": ("$CARGO_HOME=/cargo", []),
    "placeholder": ("$WORKSPACE/build/.scratch/home", []),
    "url": ("https://slsa.dev/provenance/v1", []),
    "purl": ("pkg:deb/debian/rustc-web@1.96.0%2Bdfsg1-1~deb12u2?arch=amd64", []),
    "relative": ("build/scalar-wasm32/runtime.wasm", []),
    "home": ("/home/alice/src/tinyrustlm", ["/home/alice/src/tinyrustlm"]),
    "tmp in a flag": ("--remap-path-prefix\x1f/tmp/x/crates=/src/tinyrustlm", ["/tmp/x/crates"]),
    "env value": ("HOME=/root/.scratch", ["/root/.scratch"]),
    "after a colon": ("/usr/bin:/opt/tools/bin", ["/opt/tools/bin"]),
    "usr lookalike": ("/usrlocal/bin", ["/usrlocal/bin"]),
}


@pytest.mark.parametrize(("text", "leaked"), RULE_CASES.values(), ids=RULE_CASES.keys())
def test_absolute_path_rule(text: str, leaked: list[str]) -> None:
    assert absolute_paths_in(text) == leaked


def test_lanes_toml_remap_targets_are_machine_independent() -> None:
    lanes = load_lanes(REPO_ROOT / "manifests/lanes.toml")
    assert absolute_paths_in(lanes.remap_workspace) == []
    assert absolute_paths_in(lanes.remap_cargo_home) == []


def test_placeholders_take_the_longest_path_first() -> None:
    places = [("/w/repo", "$WORKSPACE"), ("/w/repo/build/.scratch/cargo-home", "$CARGO_HOME")]
    text = "/w/repo/build/.scratch/cargo-home=/cargo /w/repo/crates=/src/tinyrustlm"
    assert to_placeholders(text, places) == "$CARGO_HOME=/cargo $WORKSPACE/crates=/src/tinyrustlm"


def _plant_home(harness: Harness) -> None:
    for record_path in (harness.repo / "build/records").glob("*.json"):
        record = json.loads(record_path.read_text())
        record["env"]["HOME"] = "/home/alice/tinyrustlm/build/.scratch/home"
        record_path.write_text(json.dumps(record))


def test_release_refuses_to_sign_a_builder_path(harness: Harness) -> None:
    _plant_home(harness)
    with pytest.raises(CheckFailed, match="/home/alice/tinyrustlm") as caught:
        harness.release()
    assert caught.value.where.startswith("sbom.cdx.json")
    assert not (harness.tmp / "dist" / "tinyrustlm-9.9.9").exists()


def test_verifier_refuses_a_signed_builder_path(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    """A provenance re-signed by the trusted key with a planted path: steps 1-9 pass, 10 not."""
    harness, pristine_bundle = pristine
    bundle = tmp_path / "bundle"
    shutil.copytree(pristine_bundle, bundle)
    name = "provenance.sigstore.json"
    statement = json.loads(
        base64.b64decode(json.loads((bundle / name).read_text())["dsseEnvelope"]["payload"])
    )
    commands = statement["predicate"]["buildDefinition"]["internalParameters"]["commands"]
    next(iter(commands.values()))["env"]["CARGO_HOME"] = "/home/alice/.cargo"
    key = load_pem_private_key(harness.key.private_pem.read_bytes(), None)
    signed = sign_to_sigstore_bundle(
        key,  # type: ignore[arg-type]
        IN_TOTO_PAYLOAD_TYPE,
        json.dumps(statement, sort_keys=True, separators=(",", ":")).encode(),
    )
    (bundle / name).write_bytes(signed)
    sums = (bundle / "SHA256SUMS").read_text()
    old = hashlib.sha256((pristine_bundle / name).read_bytes()).hexdigest()
    (bundle / "SHA256SUMS").write_text(sums.replace(old, hashlib.sha256(signed).hexdigest()))
    with pytest.raises(BuilderPathLeaked, match=r"/home/alice/\.cargo") as caught:
        harness.verify(bundle, derive=fake_report)
    assert caught.value.error_id == "paths.builder-path"
    assert "internalParameters.commands" in caught.value.where
    assert verifier.STEP_TITLES[9] == "no builder paths in signed documents"
