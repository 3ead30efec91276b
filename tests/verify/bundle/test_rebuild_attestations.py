"""K-of-N rebuild policy: `verify bundle --rebuilders --require-rebuilds K --rebuild-attestation`.

Attestations are made by the real `pipeline.documents.attest` code and signed with real keys,
over the pristine fake release; the verifier counts distinct trusted rebuilders whose
attestation names every artifact with the manifest's digest.
"""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pipeline.documents.attest import Compared, rebuild_statement, write_attestation
from pipeline.documents.keys import SigningKey
from tests.harness.release import Harness, fake_report, verify_json
from verify.bundle import verifier
from verify.bundle.dsse import keyid_of
from verify.bundle.trusted_keys import trusted_key_entry, trusted_keys_json
from verify.cli import main as verify_main
from verify.formats.manifest import ModuleManifest
from verify.formats.rebuild import RebuildStatement

# A fixed seed per rebuilder name, so every test run uses the same keys.
REBUILDERS = ("alice", "bob", "carol")  # trusted; "mallory" is not


@pytest.fixture(autouse=True)
def _fake_inspection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verifier, "default_deriver", lambda: fake_report)


def _key(name: str) -> SigningKey:
    private = Ed25519PrivateKey.from_private_bytes(name.encode().ljust(32, b"\0"))
    return SigningKey(private, keyid_of(private.public_key()), "release", name)


@dataclass(frozen=True)
class Attest:
    """One attestation file: who signs it, and how its content departs from the truth."""

    signer: str
    tamper: str = ""  # "", "digest", "release", "resign-other"


def _write(spec: Attest, manifest: ModuleManifest, folder: Path, index: int) -> Path:
    digests = dict(manifest.listed_files())
    artifacts = [Compared(url, digests[url], digests[url]) for url, _ in manifest.lanes()]
    if spec.tamper == "digest":  # one artifact attested with other bytes' digest
        first = artifacts[0]
        artifacts[0] = Compared(first.name, "0" * 64, "0" * 64)
    statement = rebuild_statement(manifest, artifacts, [], _key(spec.signer).keyid)
    if spec.tamper == "release":  # a rebuild of another release (other build id)
        doc = statement.model_dump(mode="json", by_alias=True)
        doc["predicate"]["buildDefinition"]["externalParameters"]["buildId"] = "1" * 64
        statement = RebuildStatement.model_validate(doc)
    out = folder / f"{index}-{spec.signer}.sigstore.json"
    write_attestation(statement, _key(spec.signer), out)
    if spec.tamper == "resign-other":  # alice's file with bob's keyid claimed
        doc = json.loads(out.read_text())
        doc["dsseEnvelope"]["signatures"][0]["keyid"] = _key("bob").keyid
        doc["verificationMaterial"]["publicKey"]["hint"] = _key("bob").keyid
        out.write_text(json.dumps(doc))
    return out


# name -> (attestations, K, accepted?, how many count)
CASES: dict[str, tuple[tuple[Attest, ...], int, bool, int]] = {
    "two valid, K=2": ((Attest("alice"), Attest("bob")), 2, True, 2),
    "one valid, K=1": ((Attest("carol"),), 1, True, 1),
    "duplicate key": ((Attest("alice"), Attest("alice")), 2, False, 1),
    "untrusted key": ((Attest("alice"), Attest("mallory")), 2, False, 1),
    "wrong digest": ((Attest("alice"), Attest("bob", "digest")), 2, False, 1),
    "another release": ((Attest("alice"), Attest("bob", "release")), 2, False, 1),
    "forged keyid": ((Attest("carol"), Attest("alice", "resign-other")), 2, False, 1),
    "none given": ((), 1, False, 0),
    "three of three": ((Attest("alice"), Attest("bob"), Attest("carol")), 3, True, 3),
}


@pytest.mark.parametrize(("specs", "k", "accepted", "counting"), CASES.values(), ids=CASES.keys())
def test_k_of_n_rebuilds(
    pristine: tuple[Harness, Path],
    tmp_path: Path,
    specs: tuple[Attest, ...],
    k: int,
    accepted: bool,
    counting: int,
) -> None:
    harness, bundle = pristine
    manifest = ModuleManifest.model_validate_json((bundle / "manifest.json").read_bytes())
    later = datetime.now(UTC) + timedelta(days=30)
    rebuilders = tmp_path / "rebuilders.json"
    rebuilders.write_bytes(
        trusted_keys_json(
            [
                trusted_key_entry(_key(name).private_key.public_key(), "release", later)
                for name in REBUILDERS
            ]
        )
    )
    files = [_write(spec, manifest, tmp_path, i) for i, spec in enumerate(specs)]
    args = ["--rebuilders", str(rebuilders), "--require-rebuilds", str(k)]
    for path in files:
        args += ["--rebuild-attestation", str(path)]
    code, result, err = verify_json(bundle, harness.trusted, *args)
    if accepted:
        assert (code, result["ok"]) == (0, True), err
        assert result["steps"][13]["detail"].startswith(f"{counting} of 3 rebuilders")
    else:
        assert (code, result["error"]["id"], result["error"]["step"]) == (
            1,
            "rebuilds.insufficient",
            14,
        )
        assert result["error"]["message"].startswith(f"{counting} independent")


def test_require_rebuilds_needs_a_rebuilders_file(pristine: tuple[Harness, Path]) -> None:
    harness, bundle = pristine
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = verify_main(
            [
                "bundle",
                str(bundle),
                "--trusted-keys",
                str(harness.trusted),
                "--require-rebuilds",
                "1",
            ]
        )
    assert code == 2 and "--rebuilders" in err.getvalue()


def test_attestation_shape(pristine: tuple[Harness, Path], tmp_path: Path) -> None:
    """The statement carries every artifact's upstream and rebuilt digest and the documents."""
    manifest = ModuleManifest.model_validate_json((pristine[1] / "manifest.json").read_bytes())
    digests = dict(manifest.listed_files())
    artifacts = [Compared(url, digests[url], digests[url]) for url, _ in manifest.lanes()]
    documents = [Compared("sbom.cdx.json", "a" * 64, "b" * 64)]
    statement = rebuild_statement(manifest, artifacts, documents, _key("alice").keyid)
    deps = {d.name for d in statement.predicate.build_definition.resolved_dependencies}
    assert {f"upstream:{a.name}" for a in artifacts} <= deps
    assert {f"rebuilt:{a.name}" for a in artifacts} <= deps
    assert statement.attested() == {a.name: a.expected_sha256 for a in artifacts}
    (match,) = statement.predicate.run_details.byproducts
    assert (match.name, match.annotations) == ("sbom.cdx.json", {"matched": False})
