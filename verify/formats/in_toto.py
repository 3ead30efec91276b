"""The in-toto Statement v1 every signed statement of a release is: the one home of its type
URIs, its payload type, and the Subject and Digest models.

Two statements are written, both with a SLSA Provenance v1 predicate: the release's provenance
(`verify.formats.provenance`) and a rebuilder's attestation (`verify.formats.rebuild`). Each is
a `Statement` with its own `predicate`; the producer builds the model and signs its canonical
JSON, the verifier validates the same model.

    Statement v1: https://github.com/in-toto/attestation/blob/main/spec/v1/statement.md
    SLSA Provenance v1: https://slsa.dev/spec/v1.0/provenance
"""

from __future__ import annotations

from typing import Annotated, Final, Literal, get_args

from pydantic import ConfigDict, Field
from pydantic.alias_generators import to_camel

from verify.formats.base import Frozen, Sha256Hex

# The DSSE payloadType of an in-toto statement.
IN_TOTO_PAYLOAD_TYPE: Final = "application/vnd.in-toto+json"
# The two type URIs, spelled once: as the models' Literal types, and as strings for messages.
StatementTypeUri = Literal["https://in-toto.io/Statement/v1"]
SlsaProvenanceUri = Literal["https://slsa.dev/provenance/v1"]
STATEMENT_TYPE: Final[StatementTypeUri] = get_args(StatementTypeUri)[0]
SLSA_PREDICATE_TYPE: Final[SlsaProvenanceUri] = get_args(SlsaProvenanceUri)[0]


class Camel(Frozen):
    """A Frozen format whose JSON keys are in-toto's camelCase."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)  # + Frozen's


class Digest(Camel):
    sha256: Sha256Hex


class Subject(Camel):
    name: str
    digest: Digest

    @classmethod
    def of(cls, name: str, sha256: str) -> Subject:
        return cls(name=name, digest=Digest(sha256=sha256))


class Statement(Camel):
    """The statement's frame; a subclass adds `predicate: <its predicate model>`."""

    type_: StatementTypeUri = Field(alias="_type")
    subject: Annotated[list[Subject], Field(min_length=1)]
    predicate_type: SlsaProvenanceUri

    def attested(self) -> dict[str, str]:
        """subject name -> sha256."""
        return {s.name: s.digest.sha256 for s in self.subject}

    def document(self) -> dict[str, object]:
        """The JSON document (in-toto's key names), as canonical JSON signs it."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)
