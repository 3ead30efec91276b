"""The `file` components of a CycloneDX 1.6 JSON SBOM: the part of sbom.cdx.json the verifier
holds against the bundle's bytes, and the part the release writes through this model.

A view, not the whole format: the rest of the document (metadata, the other components,
dependencies, formulation) is CycloneDX's, written by `pipeline.documents.sbom` and checked
there with cyclonedx-python-lib's strict schema; here it is ignored. A component that is not
a JSON object of type "file" is not this view's either, nor is a hash of another algorithm.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, get_args

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

BomFormat = Literal["CycloneDX"]
BOM_FORMAT: Final[BomFormat] = get_args(BomFormat)[0]
SpecVersion = Literal["1.6"]
SPEC_VERSION: Final[SpecVersion] = get_args(SpecVersion)[0]
SHA256_ALG: Final = "SHA-256"


class _View(BaseModel):
    """Frozen, and tolerant of what CycloneDX allows beyond the view."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)


class Sha256Hash(_View):
    alg: Literal["SHA-256"] = SHA256_ALG
    content: str


def _hash_kind(value: Any) -> str:
    is_sha256 = isinstance(value, dict | Sha256Hash) and _get(value, "alg") == SHA256_ALG
    return "sha256" if is_sha256 else "other"


def _component_kind(value: Any) -> str:
    is_file = isinstance(value, dict | FileComponent) and _get(value, "type") == "file"
    return "file" if is_file else "other"


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else getattr(value, key, None)


class FileComponent(_View):
    """A `file` component: the bundle path and exactly one SHA-256 of its bytes."""

    type: Literal["file"] = "file"
    bom_ref: str | None = Field(default=None, alias="bom-ref")
    name: str
    hashes: list[
        Annotated[
            Annotated[Sha256Hash, Tag("sha256")] | Annotated[Any, Tag("other")],
            Discriminator(_hash_kind),
        ]
    ]

    @model_validator(mode="after")
    def _one_sha256(self) -> FileComponent:
        if len(self.sha256s) != 1:
            raise ValueError("a file component has exactly one SHA-256")
        return self

    @property
    def sha256s(self) -> list[str]:
        return [h.content for h in self.hashes if isinstance(h, Sha256Hash)]

    @property
    def sha256(self) -> str:
        """The one SHA-256 (a valid component has exactly one)."""
        (digest,) = self.sha256s
        return digest

    @classmethod
    def of(cls, name: str, sha256: str) -> FileComponent:
        """The component the release writes for one bundle file."""
        return cls(bom_ref=f"file:{name}", name=name, hashes=[Sha256Hash(content=sha256)])

    def document(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class CycloneDxFiles(_View):
    """A CycloneDX 1.6 JSON document, as far as its file components go."""

    bom_format: BomFormat = Field(alias="bomFormat")
    spec_version: SpecVersion = Field(alias="specVersion")
    components: list[
        Annotated[
            Annotated[FileComponent, Tag("file")] | Annotated[Any, Tag("other")],
            Discriminator(_component_kind),
        ]
    ]

    def files(self) -> list[FileComponent]:
        return [c for c in self.components if isinstance(c, FileComponent)]
