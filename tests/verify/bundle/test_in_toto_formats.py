"""One home for the signed statements' and the SBOM's models (`verify.formats.in_toto`,
`provenance`, `cyclonedx`): the release writes through them, the verifier reads with them, and
the bytes a release wrote read back through them to the same bytes."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from tests.harness.release import Harness
from verify.bundle.layout import PROVENANCE_SIGNATURE, SBOM
from verify.canonical import canonical_json
from verify.formats import in_toto
from verify.formats.cyclonedx import CycloneDxFiles, FileComponent
from verify.formats.provenance import ProvenanceClaims, ReleaseProvenance

REPO_ROOT = Path(__file__).resolve().parents[3]
# the fact -> the one file allowed to spell it (every other reads the constant)
ONE_HOME = {
    in_toto.STATEMENT_TYPE: "verify/formats/in_toto.py",
    in_toto.SLSA_PREDICATE_TYPE: "verify/formats/in_toto.py",
    in_toto.IN_TOTO_PAYLOAD_TYPE: "verify/formats/in_toto.py",
}


def _statement(bundle: Path) -> bytes:
    envelope = json.loads((bundle / PROVENANCE_SIGNATURE).read_bytes())["dsseEnvelope"]
    return base64.b64decode(envelope["payload"])


@pytest.mark.parametrize("fact", list(ONE_HOME), ids=list(ONE_HOME))
def test_each_in_toto_fact_is_spelled_in_one_file(fact: str) -> None:
    spelled = sorted(
        p.relative_to(REPO_ROOT).as_posix()
        for package in ("pipeline", "verify", "slim_verifier")
        for p in (REPO_ROOT / package).rglob("*.py")
        if fact in p.read_text(encoding="utf-8")
    )
    assert spelled == [ONE_HOME[fact]]


def test_the_release_provenance_reads_back_to_its_own_bytes(
    pristine: tuple[Harness, Path],
) -> None:
    """The producer's model is the whole statement: strict validation of the signed bytes,
    dumped again, gives those bytes (no field it writes is unknown to the model, none lost)."""
    payload = _statement(pristine[1])
    statement = ReleaseProvenance.model_validate_json(payload)
    assert canonical_json(statement.document()) == payload
    claims = ProvenanceClaims.model_validate_json(payload)
    assert claims.attested() == statement.attested()
    assert claims.source_revision == (
        statement.predicate.build_definition.external_parameters.source.revision
    )


def test_the_sbom_file_components_read_back_as_written(pristine: tuple[Harness, Path]) -> None:
    doc = json.loads((pristine[1] / SBOM).read_bytes())
    written = [c for c in doc["components"] if c["type"] == "file"]
    read = CycloneDxFiles.model_validate(doc).files()
    assert [c.document() for c in read] == written
    assert [FileComponent.of(c.name, c.sha256).document() for c in read] == written


# a type URI's string constant is its model's Literal, not a second spelling
@pytest.mark.parametrize(
    ("constant", "literal"),
    [
        (in_toto.STATEMENT_TYPE, in_toto.StatementTypeUri),
        (in_toto.SLSA_PREDICATE_TYPE, in_toto.SlsaProvenanceUri),
    ],
)
def test_the_constants_are_the_literals(constant: str, literal: object) -> None:
    assert re.fullmatch(r"https://\S+/v1", constant)
    assert (constant,) == getattr(literal, "__args__", None)
