"""Steps 8-10: the provenance statement and the SBOM, each read by its model
(`verify.formats.provenance.ProvenanceClaims`, `verify.formats.cyclonedx.CycloneDxFiles`) and
held to the files; then no builder path in any signed document."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import ValidationError

from verify.bundle import errors as e
from verify.bundle.file_digests import differences, sha256_hex
from verify.bundle.layout import (
    ATTESTED_FIXED_FILES,
    MANIFEST,
    MANIFEST_SIGNATURE,
    OPTIONAL_ATTESTED_FILES,
    PROVENANCE_SIGNATURE,
    SBOM,
)
from verify.bundle.signature_check import Signed
from verify.canonical import MalformedJson, parse_json
from verify.formats.cyclonedx import CycloneDxFiles
from verify.formats.in_toto import SLSA_PREDICATE_TYPE, STATEMENT_TYPE
from verify.formats.manifest import ModuleManifest
from verify.formats.provenance import ProvenanceClaims
from verify.placeholders import absolute_paths_outside

SUBJECT_RULE = "subject needs a unique name and a sha256 digest"
FILE_COMPONENT_RULE = "file component needs a name and one SHA-256"

Loc = tuple[int | str, ...]


def _locations(exc: ValidationError) -> list[Loc]:
    return [tuple(error["loc"]) for error in exc.errors()]


def _item(loc: Loc, field: str) -> int | None:
    """i when `loc` is inside item i of the list `field`."""
    if len(loc) >= 2 and loc[0] == field and isinstance(loc[1], int):
        return loc[1]
    return None


# -- step 8 -------------------------------------------------------------------------------
def _statement_refusal(locations: Sequence[Loc], where: str) -> e.ProvenanceInvalid:
    """The first rule a statement breaks, in the order: in-toto frame, predicate type,
    subjects present, each subject (by index)."""
    if any(not loc or loc[0] not in ("predicateType", "subject") for loc in locations):
        return e.ProvenanceInvalid(f"not an in-toto Statement ({STATEMENT_TYPE})", where=where)
    if any(loc[0] == "predicateType" for loc in locations):
        return e.ProvenanceInvalid(f"predicateType is not {SLSA_PREDICATE_TYPE}", where=where)
    items = [_item(loc, "subject") for loc in locations]
    if None in items:
        return e.ProvenanceInvalid("no subjects", where=f"{where}: subject")
    first = min(i for i in items if i is not None)
    return e.ProvenanceInvalid(SUBJECT_RULE, where=f"{where}: subject[{first}]")


def read_provenance(payload: bytes, where: str) -> ProvenanceClaims:
    """The signed statement by its model; every subject names a different file."""
    try:
        doc = parse_json(payload, where)
    except MalformedJson as exc:
        raise e.ProvenanceInvalid(exc.message, where=where, offset=exc.offset) from exc
    try:
        claims = ProvenanceClaims.model_validate(doc)
    except ValidationError as exc:
        raise _statement_refusal(_locations(exc), where) from exc
    named: set[str] = set()
    for i, subject in enumerate(claims.subject):
        if subject.name in named:
            raise e.ProvenanceInvalid(SUBJECT_RULE, where=f"{where}: subject[{i}]")
        named.add(subject.name)
    return claims


def _attested(files: Mapping[str, bytes], manifest: ModuleManifest) -> dict[str, str]:
    names = [url for url, _ in manifest.listed_files()] + list(ATTESTED_FIXED_FILES)
    names += [name for name in OPTIONAL_ATTESTED_FILES if name in files]
    return {name: sha256_hex(files[name]) for name in names}


def check_provenance(signed: Signed, files: Mapping[str, bytes], manifest: ModuleManifest) -> str:
    where = f"{PROVENANCE_SIGNATURE}: payload"
    claims = read_provenance(signed.payload(PROVENANCE_SIGNATURE), where)
    problems = differences(claims.attested(), _attested(files, manifest))
    if problems:
        raise e.ProvenanceMismatch(f"subjects do not match the files: {problems}", where=where)
    revision = claims.source_revision
    if revision != manifest.source_revision:
        raise e.ProvenanceMismatch(
            f"provenance source revision {revision!r} is not the manifest's",
            where=f"{where}: predicate.buildDefinition.externalParameters.source.revision",
        )
    return f"{len(claims.subject)} subjects"


# -- step 9 -------------------------------------------------------------------------------
def _sbom_refusal(locations: Sequence[Loc]) -> e.SbomInvalid:
    """Not CycloneDX 1.6 before any component; else the first file component at fault."""
    items = [_item(loc, "components") for loc in locations]
    if None in items:
        return e.SbomInvalid("not a CycloneDX 1.6 JSON document", where=SBOM)
    first = min(i for i in items if i is not None)
    return e.SbomInvalid(FILE_COMPONENT_RULE, where=f"{SBOM}: components[{first}]")


def check_sbom(files: Mapping[str, bytes], manifest: ModuleManifest) -> str:
    try:
        doc = parse_json(files[SBOM], SBOM)
    except MalformedJson as exc:
        raise e.SbomInvalid(exc.message, where=SBOM, offset=exc.offset) from exc
    try:
        sbom = CycloneDxFiles.model_validate(doc)
    except ValidationError as exc:
        raise _sbom_refusal(_locations(exc)) from exc
    claimed = {component.name: component.sha256 for component in sbom.files()}
    actual = {url: sha256_hex(files[url]) for url, _ in manifest.listed_files()}
    problems = differences(claimed, actual)
    if problems:
        raise e.SbomMismatch(f"file components do not match the files: {problems}", where=SBOM)
    return f"{len(claimed)} file components"


# -- step 10 ------------------------------------------------------------------------------
def check_builder_paths(
    signed: Signed, files: Mapping[str, bytes], manifest: ModuleManifest
) -> str:
    documents = {
        MANIFEST: signed.payload(MANIFEST_SIGNATURE),
        PROVENANCE_SIGNATURE: signed.payload(PROVENANCE_SIGNATURE),
    }
    # every signed file that is a document (JSON), the ones above included once
    attested = sorted(_attested(files, manifest))
    documents.update({name: files[name] for name in attested if name.endswith(".json")})
    for name, data in documents.items():
        try:
            doc = parse_json(data, name)
        except MalformedJson as exc:
            raise e.BuilderPathLeaked(exc.message, where=name, offset=exc.offset) from exc
        leaked = absolute_paths_outside(doc)
        if leaked:
            first = leaked[0]
            raise e.BuilderPathLeaked(
                f"names the builder's absolute path {first.path!r} ({len(leaked)} in all); "
                "signed documents name locations as $WORKSPACE/... or $CARGO_HOME/...",
                where=f"{name}: {first.where.lstrip('.')}",
            )
    return f"{len(documents)} documents"
