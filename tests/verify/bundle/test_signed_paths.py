"""No builder path is signed: the rule, the release's refusal, and `verify bundle` step 10."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from pipeline.documents import assemble
from pipeline.documents.sign import sign_to_sigstore_bundle
from pipeline.errors import CheckFailed
from pipeline.release import steps
from pipeline.tree.lanes import load_lanes
from tests.harness.conformance import Row, report_v3
from tests.harness.release import REPO_ROOT, Harness, fake_report
from verify.bundle import step_titles
from verify.bundle.errors import BuilderPathLeaked
from verify.bundle.layout import CONFORMANCE, MANIFEST
from verify.formats.conformance import MODEL_TIERS
from verify.formats.in_toto import IN_TOTO_PAYLOAD_TYPE
from verify.placeholders import absolute_paths_in, builder_urls_in, to_placeholders

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
    assert step_titles.STEP_TITLES[9] == "no builder paths in signed documents"


# text -> the builder URLs the rule must find in it (a file: URL or a loopback server's)
URL_CASES = {
    "node's bundle folder": (
        "file:///tmp/tinyrustlm-conformance-x/node-1/artifacts/a.wasm",
        ["file:///tmp/tinyrustlm-conformance-x/node-1/artifacts/a.wasm"],
    ),
    "the page server": (
        "http://127.0.0.1:39213/artifacts/a.wasm",
        ["http://127.0.0.1:39213/artifacts/a.wasm"],
    ),
    "localhost": ("https://localhost:8443/x", ["https://localhost:8443/x"]),
    "ipv6 loopback": ("http://[::1]:8080/", ["http://[::1]:8080/"]),
    "a public url": ("https://slsa.dev/provenance/v1", []),
    "a lookalike host": ("http://127.0.0.1.example.com/x", []),
    "a relative file reference (SBOM)": ("file:artifacts/runtime.wasm", []),
    "a bundle path": ("artifacts/runtime.scalar-wasm32.0123456789abcdef.wasm", []),
}


@pytest.mark.parametrize(("text", "leaked"), URL_CASES.values(), ids=URL_CASES.keys())
def test_builder_url_rule(text: str, leaked: list[str]) -> None:
    assert builder_urls_in(text) == leaked


LEAKS = {
    "a receipt's file: url": "file:///tmp/node-abc/artifacts/runtime.wasm",
    "a receipt's page server": "http://127.0.0.1:41234/artifacts/runtime.wasm",
    "a temporary folder": "/tmp/tinyrustlm-conformance-bundle-x/artifacts/runtime.wasm",
}


@pytest.mark.parametrize("leak", LEAKS.values(), ids=LEAKS.keys())
def test_step_10_reads_the_signed_conformance_report(
    harness: Harness, leak: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A conformance.json naming a builder location: the release refuses to sign it, and a
    bundle signed anyway (the release's own check off) is refused by step 10, on that file."""

    def report(signed: steps.ManifestSigned) -> steps.Conformed:
        built = signed.tested.verified.built
        manifest_sha = hashlib.sha256(signed.documents.files[MANIFEST]).hexdigest()
        lanes = [(entry.lane, entry.sha256) for entry in built.index.lanes]
        rows: list[Row] = [("node", None, "pass", tier) for tier in MODEL_TIERS]
        doc = report_v3(built.tree.version, built.tree.git.revision, lanes, rows, manifest_sha)
        data = json.loads(doc.model_dump_json(by_alias=True))
        data["notes"] = [f"fetched from {leak}"]
        return steps.Conformed(signed, json.dumps(data).encode(), "hand-made")

    with_report = replace(harness, steps=replace(harness.steps, conformance=report))
    with pytest.raises(CheckFailed, match="builder") as refused:
        with_report.release()
    assert refused.value.where.startswith(CONFORMANCE)
    monkeypatch.setattr(assemble, "_refuse_builder_paths", lambda documents: None)
    bundle = with_report.release().bundle
    with pytest.raises(BuilderPathLeaked) as caught:
        with_report.verify(bundle, derive=fake_report)
    assert caught.value.where == f"{CONFORMANCE}: notes[0]"
