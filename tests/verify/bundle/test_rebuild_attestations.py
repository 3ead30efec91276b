"""K-of-N rebuild policy: `verify bundle --rebuilders --require-rebuilds K --rebuild-attestation`.

Attestations are made by the real `pipeline.documents.attest` code and signed with real keys,
over the pristine fake release; the verifier counts distinct trusted rebuilders, none of them
a release key, whose attestation reproduced every signed file (scope "bundle") or every
artifact (scope "artifacts", named by the user).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
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
from verify.bundle.layout import MANIFEST, PROVENANCE_SIGNATURE, PROVENANCE_STATEMENT
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
    # "", "digest", "release", "revision", "resign-other", "manifest" (the rebuilt manifest
    # differs: artifacts reproduced, documents not), "provenance" (the rebuilt provenance
    # statement differs, the manifest not), "no-documents" (documents not compared)
    tamper: str = ""


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _documents(bundle: Path) -> list[Compared]:
    """The bundle's signed documents as a rebuild that reproduced them compares them."""
    envelope = json.loads((bundle / PROVENANCE_SIGNATURE).read_text())["dsseEnvelope"]
    statement = _sha(base64.b64decode(envelope["payload"]))
    manifest = _sha((bundle / MANIFEST).read_bytes())
    return [
        Compared(MANIFEST, manifest, manifest),
        Compared(PROVENANCE_STATEMENT, statement, statement),
    ]


def _write(spec: Attest, bundle: Path, folder: Path, index: int) -> Path:
    manifest = ModuleManifest.model_validate_json((bundle / MANIFEST).read_bytes())
    digests = dict(manifest.listed_files())
    artifacts = [Compared(url, digests[url], digests[url]) for url, _ in manifest.lanes()]
    documents = [] if spec.tamper == "no-documents" else _documents(bundle)
    if spec.tamper == "digest":  # one artifact attested with other bytes' digest
        first = artifacts[0]
        artifacts[0] = Compared(first.name, "0" * 64, "0" * 64)
    if spec.tamper == "manifest":  # e.g. the release changed js/loader.js or disabled_lanes
        documents[0] = Compared(MANIFEST, documents[0].expected_sha256, "2" * 64)
    if spec.tamper == "provenance":  # the manifest reproduced, the provenance statement not
        documents[1] = Compared(PROVENANCE_STATEMENT, documents[1].expected_sha256, "2" * 64)
    statement = rebuild_statement(manifest, artifacts, documents, _key(spec.signer).keyid)
    if spec.tamper in ("release", "revision"):  # a rebuild of another build id / commit
        doc = statement.model_dump(mode="json", by_alias=True)
        release = doc["predicate"]["buildDefinition"]["externalParameters"]
        if spec.tamper == "release":
            release["buildId"] = "1" * 64
        else:
            release["source"]["revision"] = "3" * 40
        statement = RebuildStatement.model_validate(doc)
    out = folder / f"{index}-{spec.signer}.sigstore.json"
    write_attestation(statement, _key(spec.signer), out)
    if spec.tamper == "resign-other":  # alice's file with bob's keyid claimed
        doc = json.loads(out.read_text())
        doc["dsseEnvelope"]["signatures"][0]["keyid"] = _key("bob").keyid
        doc["verificationMaterial"]["publicKey"]["hint"] = _key("bob").keyid
        out.write_text(json.dumps(doc))
    return out


# name -> (attestations, K, extra flags, accepted?, how many count)
CASES: dict[str, tuple[tuple[Attest, ...], int, tuple[str, ...], bool, int]] = {
    "two valid, K=2": ((Attest("alice"), Attest("bob")), 2, (), True, 2),
    "one valid, K=1": ((Attest("carol"),), 1, (), True, 1),
    "duplicate key": ((Attest("alice"), Attest("alice")), 2, (), False, 1),
    "untrusted key": ((Attest("alice"), Attest("mallory")), 2, (), False, 1),
    "wrong digest": ((Attest("alice"), Attest("bob", "digest")), 2, (), False, 1),
    "another release": ((Attest("alice"), Attest("bob", "release")), 2, (), False, 1),
    "forged keyid": ((Attest("carol"), Attest("alice", "resign-other")), 2, (), False, 1),
    "none given": ((), 1, (), False, 0),
    "three of three": ((Attest("alice"), Attest("bob"), Attest("carol")), 3, (), True, 3),
    # a rebuild whose documents differ vouches for the artifacts, never for the bundle
    "manifest not reproduced": ((Attest("alice"), Attest("bob", "manifest")), 2, (), False, 1),
    "documents not compared": ((Attest("alice"), Attest("bob", "no-documents")), 2, (), False, 1),
    "manifest not reproduced, scope artifacts": (
        (Attest("alice"), Attest("bob", "manifest")), 2, ("--rebuild-scope", "artifacts"), True, 2
    ),
    "provenance not reproduced": ((Attest("alice"), Attest("bob", "provenance")), 2, (), False, 1),
    "provenance not reproduced, scope artifacts": (
        (Attest("alice"), Attest("bob", "provenance")), 2, ("--rebuild-scope", "artifacts"), True, 2
    ),
    # scope artifacts: the same commit's binaries, whatever the build id (a re-release) ...
    "another build id, scope artifacts": (
        (Attest("alice", "release"),), 1, ("--rebuild-scope", "artifacts"), True, 1
    ),
    # ... but never another commit's
    "another revision, scope artifacts": (
        (Attest("alice", "revision"),), 1, ("--rebuild-scope", "artifacts"), False, 0
    ),
    "wrong digest, scope artifacts": (
        (Attest("alice", "digest"),), 1, ("--rebuild-scope", "artifacts"), False, 0
    ),
    # independence: the release's own key is never a rebuilder, even in the rebuilders file
    "release key as rebuilder": ((Attest("alice"), Attest("release")), 2, (), False, 1),
    # a development-role rebuilder needs its own flag (--allow-dev-key is not it)
    "dev rebuilder": ((Attest("dave"),), 1, (), False, 0),
    "dev rebuilder, --allow-dev-key": ((Attest("dave"),), 1, ("--allow-dev-key",), False, 0),
    "dev rebuilder, --allow-dev-rebuilder": (
        (Attest("dave"),), 1, ("--allow-dev-rebuilder",), True, 1
    ),
}  # fmt: skip


def _rebuilders(harness: Harness, tmp_path: Path) -> Path:
    """alice, bob, carol (release role), dave (development role) and the release's own key."""
    later = datetime.now(UTC) + timedelta(days=30)
    entries = [
        trusted_key_entry(_key(name).private_key.public_key(), "release", later)
        for name in REBUILDERS
    ]
    entries.append(trusted_key_entry(_key("dave").private_key.public_key(), "development", later))
    entries.append(trusted_key_entry(_key("release").private_key.public_key(), "release", later))
    path = tmp_path / "rebuilders.json"
    path.write_bytes(trusted_keys_json(entries))
    return path


@pytest.mark.parametrize(
    ("specs", "k", "extra", "accepted", "counting"), CASES.values(), ids=CASES.keys()
)
def test_k_of_n_rebuilds(
    pristine: tuple[Harness, Path],
    tmp_path: Path,
    specs: tuple[Attest, ...],
    k: int,
    extra: tuple[str, ...],
    accepted: bool,
    counting: int,
) -> None:
    harness, bundle = pristine
    trusted = harness.trusted
    if any(spec.signer == "release" for spec in specs):  # the release's key is "release"
        trusted = _trusted_with(tmp_path, harness, _key("release"))
    rebuilders = _rebuilders(harness, tmp_path)
    files = [_write(spec, bundle, tmp_path, i) for i, spec in enumerate(specs)]
    args = ["--rebuilders", str(rebuilders), "--require-rebuilds", str(k), *extra]
    for path in files:
        args += ["--rebuild-attestation", str(path)]
    code, result, err = verify_json(bundle, trusted, *args)
    if accepted:
        assert (code, result["ok"]) == (0, True), err
        assert result["steps"][13]["detail"].startswith(f"{counting} of 5 rebuilders")
    else:
        assert (code, result["error"]["id"], result["error"]["step"]) == (
            1,
            "rebuilds.insufficient",
            14,
        )
        assert result["error"]["message"].startswith(f"{counting} independent")


def _trusted_with(tmp_path: Path, harness: Harness, extra: SigningKey) -> Path:
    """The release's trusted keys plus `extra` (a second maintainer key of the release)."""
    doc = json.loads(harness.trusted.read_text())
    later = datetime.now(UTC) + timedelta(days=30)
    doc["keys"] += json.loads(
        trusted_keys_json([trusted_key_entry(extra.private_key.public_key(), "release", later)])
    )["keys"]
    path = tmp_path / "release-and-extra.trusted-keys.json"
    path.write_text(json.dumps(doc))
    return path


def test_an_attestation_without_require_rebuilds_is_a_usage_error(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    harness, bundle = pristine
    attestation = _write(Attest("alice"), bundle, tmp_path, 0)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = verify_main(
            ["bundle", str(bundle), "--trusted-keys", str(harness.trusted),
             "--rebuild-attestation", str(attestation)]
        )  # fmt: skip
    assert code == 2 and "--require-rebuilds" in err.getvalue()


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
    # subjects: what reproduced (the SBOM did not); byproducts: every document's verdict
    assert statement.attested() == {a.name: a.expected_sha256 for a in artifacts}
    (match,) = statement.predicate.run_details.byproducts
    assert (match.name, match.annotations) == ("sbom.cdx.json", {"matched": False})


# name -> (attestations, K, extra flags, exit code, step 14's detail or the refusal's message)
WORDS: dict[str, tuple[tuple[Attest, ...], int, tuple[str, ...], int, str]] = {
    "two of five": (
        (Attest("alice"), Attest("bob")), 2, (), 0,
        "2 of 5 rebuilders ({alice}…, {bob}…) reproduced every signed file (scope bundle), "
        "2 required",
    ),
    "scope artifacts": (
        (Attest("alice", "release"),), 1, ("--rebuild-scope", "artifacts"), 0,
        "1 of 5 rebuilders ({alice}…) reproduced every artifact (scope artifacts), 1 required",
    ),
    "one short, with each file's reason": (
        (Attest("alice"), Attest("bob", "digest")), 2, (), 1,
        "1 independent trusted rebuild(s) reproduced every signed file, 2 required "
        "(0-alice.sigstore.json: counts: 6 signed files reproduced; 1-bob.sigstore.json: not "
        "reproduced or other digests: {wasm0})",
    ),
    "none given": ((), 1, (), 1,
                   "0 independent trusted rebuild(s) reproduced every signed file, 1 required "
                   "(none given)"),
    "another revision, scope artifacts": (
        (Attest("alice", "revision"),), 1, ("--rebuild-scope", "artifacts"), 1,
        "0 independent trusted rebuild(s) reproduced every artifact, 1 required "
        "(0-alice.sigstore.json: attests another source revision)",
    ),
}  # fmt: skip


@pytest.mark.parametrize(
    ("specs", "k", "extra", "exit_code", "words"), WORDS.values(), ids=WORDS.keys()
)
def test_rebuild_verdicts_word_for_word(
    pristine: tuple[Harness, Path],
    tmp_path: Path,
    specs: tuple[Attest, ...],
    k: int,
    extra: tuple[str, ...],
    exit_code: int,
    words: str,
) -> None:
    """Step 14 names who counted and what they reproduced; a refusal names the scope, the
    count and every attestation file with the reason it did or did not count."""
    harness, bundle = pristine
    manifest = ModuleManifest.model_validate_json((bundle / MANIFEST).read_bytes())
    files = [_write(spec, bundle, tmp_path, i) for i, spec in enumerate(specs)]
    args = ["--rebuilders", str(_rebuilders(harness, tmp_path)), "--require-rebuilds", str(k)]
    for path in files:
        args += ["--rebuild-attestation", str(path)]
    code, result, _ = verify_json(bundle, harness.trusted, *args, *extra)
    expected = words.format(
        alice=_key("alice").keyid[:16], bob=_key("bob").keyid[:16], wasm0=manifest.artifacts[0].url
    )
    if exit_code == 0:
        assert (code, result["steps"][13]["detail"]) == (0, expected)
    else:
        error = result["error"]
        assert (code, error["id"], error["step"], error["message"], error["where"]) == (
            1, "rebuilds.insufficient", 14, expected, "--rebuild-attestation"
        )  # fmt: skip
