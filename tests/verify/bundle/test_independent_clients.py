"""Our outputs, checked by clients that share no code with us.

securesystemslib verifies the DSSE envelopes with the public key; cyclonedx-python-lib
validates the SBOM against strict CycloneDX 1.6; in-toto-attestation parses the statement
and the SLSA predicate (protobuf JSON parsing rejects unknown fields); sigstore's own models
parse the v0.3 bundles and the in-toto statement.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    PublicFormat,
    load_pem_public_key,
)
from google.protobuf import json_format  # type: ignore[import-untyped]
from in_toto_attestation.predicates.provenance.v1 import provenance_pb2
from in_toto_attestation.v1 import statement_pb2
from in_toto_attestation.v1.statement import Statement as ItaStatement
from securesystemslib.dsse import Envelope as SslEnvelope
from securesystemslib.exceptions import VerificationError
from securesystemslib.signer._key import SSlibKey

from tests.harness.release import Harness

SIGNED = ["manifest.sigstore.json", "provenance.sigstore.json"]


def _bundle_json(bundle: Path, name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((bundle / name).read_text())
    return doc


def _public_key(h: Harness) -> Any:
    return load_pem_public_key(h.key.public_pem.read_bytes())


@pytest.mark.parametrize("name", SIGNED, ids=["manifest", "provenance"])
def test_securesystemslib_verifies_envelope(pristine: tuple[Harness, Path], name: str) -> None:
    h, bundle = pristine
    public_key = _public_key(h)
    spki = public_key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    keyid = hashlib.sha256(spki).hexdigest()  # computed here, not by our code
    envelope = SslEnvelope.from_dict(_bundle_json(bundle, name)["dsseEnvelope"])
    key = SSlibKey.from_crypto(public_key, keyid=keyid)
    assert keyid in envelope.verify([key], 1)


@pytest.mark.parametrize("name", SIGNED, ids=["manifest", "provenance"])
def test_securesystemslib_rejects_changed_payload(
    pristine: tuple[Harness, Path], name: str
) -> None:
    h, bundle = pristine
    envelope = SslEnvelope.from_dict(_bundle_json(bundle, name)["dsseEnvelope"])
    envelope.payload = envelope.payload.replace(b"9.9.9", b"9.9.8")
    keyid = next(iter(envelope.signatures))
    with pytest.raises(VerificationError):
        envelope.verify([SSlibKey.from_crypto(_public_key(h), keyid=keyid)], 1)


@pytest.mark.parametrize("name", SIGNED, ids=["manifest", "provenance"])
def test_sigstore_models_parse_bundle_v03(pristine: tuple[Harness, Path], name: str) -> None:
    from sigstore_models.bundle.v1 import Bundle

    _, bundle = pristine
    parsed = Bundle.from_json((bundle / name).read_text())
    assert parsed.media_type == "application/vnd.dev.sigstore.bundle.v0.3+json"
    assert parsed.verification_material.tlog_entries == []
    assert parsed.verification_material.public_key is not None
    assert parsed.dsse_envelope is not None
    assert parsed.verification_material.public_key.hint == parsed.dsse_envelope.signatures[0].keyid


def test_cyclonedx_strict_16_validates_sbom(pristine: tuple[Harness, Path]) -> None:
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    _, bundle = pristine
    text = (bundle / "sbom.cdx.json").read_text()
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    doc = json.loads(text)
    purls = {c.get("purl", "") for c in doc["components"]}
    assert any(p.startswith("pkg:deb/debian/rustc-web@") and "arch=amd64" in p for p in purls)
    assert "pkg:cargo/tinyrustlm-core@0.1.0" in purls
    assert "pkg:pypi/pydantic@2.14.4" in purls
    tasks = doc["formulation"][0]["workflows"][0]["tasks"]
    assert all(
        t["steps"][0]["commands"][0]["executed"].startswith("/usr/bin/cargo build") for t in tasks
    )


def test_cyclonedx_strict_rejects_unknown_field(pristine: tuple[Harness, Path]) -> None:
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    _, bundle = pristine
    doc = json.loads((bundle / "sbom.cdx.json").read_text())
    doc["components"][0]["sha256"] = "nope"
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(json.dumps(doc)) is not None


def _statement_payload(bundle: Path) -> bytes:
    import base64

    doc = _bundle_json(bundle, "provenance.sigstore.json")
    return base64.b64decode(doc["dsseEnvelope"]["payload"])


def test_in_toto_attestation_parses_statement_and_slsa(pristine: tuple[Harness, Path]) -> None:
    _, bundle = pristine
    payload = _statement_payload(bundle)
    pb = json_format.Parse(payload, statement_pb2.Statement())  # unknown fields raise
    ItaStatement.copy_from_pb(pb).validate()
    assert pb.predicate_type == "https://slsa.dev/provenance/v1"
    predicate = json.loads(payload)["predicate"]
    provenance = json_format.ParseDict(predicate, provenance_pb2.Provenance())
    deps = {d.name: d for d in provenance.build_definition.resolved_dependencies}
    assert deps["source"].digest["gitCommit"] == pristine[0].repo_head()
    assert deps["rustc-web"].digest["sha256"]
    subjects = {s.name for s in pb.subject}
    on_disk = {p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file()}
    assert subjects == on_disk - {
        "manifest.sigstore.json",
        "provenance.sigstore.json",
        "SHA256SUMS",
        "tinyrustlm-9.9.9.tar.gz",
    }


def test_in_toto_attestation_rejects_unknown_predicate_field(
    pristine: tuple[Harness, Path],
) -> None:
    _, bundle = pristine
    predicate = json.loads(_statement_payload(bundle))["predicate"]
    predicate["buildDefinition"]["surprise"] = 1
    with pytest.raises(json_format.ParseError):
        json_format.ParseDict(predicate, provenance_pb2.Provenance())


def test_sigstore_statement_model_accepts_payload(pristine: tuple[Harness, Path]) -> None:
    from sigstore.dsse import Statement

    _, bundle = pristine
    payload = _statement_payload(bundle)
    assert Statement(payload)._contents == payload
