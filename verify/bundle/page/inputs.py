"""What a report page is made of: a bundle's signed documents, each read by its model.

`page_inputs(files)` takes the bundle's files (path -> bytes) and reads manifest.json,
verification-report.json, sbom.cdx.json, conformance.json and memory-plan.json (when present:
a malformed plan is `memory-plan.invalid`, as in `verify bundle` step 13) and the previous
release's documents the bundle carries under previous/ (when present). Nothing else: no
signature envelope (co-signers add signatures after the page is written), no clock, no path.
A document that does not read is a `PageInputInvalid` naming the file and the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from verify.bundle.errors import BundleRejected
from verify.bundle.layout import CONFORMANCE, MANIFEST, MEMORY_PLAN, PREVIOUS_FILES, REPORT, SBOM
from verify.bundle.memory_plan_check import read_memory_plan
from verify.canonical import MalformedJson, parse_json
from verify.formats.conformance import AnyReport, read_report
from verify.formats.manifest import ModuleManifest
from verify.formats.memory_plan import MemoryPlanDocument
from verify.formats.report import VerificationReport

# The previous release's documents as a bundle carries them (release --previous): its signed
# manifest, its verification report and its SBOM, byte for byte as that release shipped them.
PREVIOUS_DIR = "previous"
assert tuple(f"{PREVIOUS_DIR}/{name}" for name in (MANIFEST, REPORT, SBOM)) == PREVIOUS_FILES


class PageInputInvalid(BundleRejected):
    """A document the report page is made of does not read by its model."""

    error_id = "page.input-invalid"
    default_hint = "the bundle's documents are damaged: fetch or rebuild the bundle"


class _View(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)


class LicenseChoice(_View):
    license: dict[str, Any] | None = None
    expression: str | None = None

    def text(self) -> str:
        if self.expression:
            return self.expression
        lic = self.license or {}
        return str(lic.get("id") or lic.get("name") or "")


class Component(_View):
    """One CycloneDX component, as the page shows it."""

    type: str
    name: str
    version: str = ""
    purl: str = ""
    scope: str = ""
    licenses: list[LicenseChoice] = Field(default_factory=list)

    def licence_text(self) -> str:
        return ", ".join(t for t in (c.text() for c in self.licenses) if t)


class SbomView(_View):
    components: list[Component] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


@dataclass(frozen=True)
class Release:
    """One release's documents: what a lane table and a diff need."""

    manifest: ModuleManifest
    report: VerificationReport
    sbom: SbomView

    def sbom_build_id(self) -> str | None:
        """The build id the SBOM's metadata names (`tinyrustlm:build-id`), if any."""
        component = self.sbom.metadata.get("component")
        props = component.get("properties") if isinstance(component, dict) else None
        for prop in props if isinstance(props, list) else []:
            if isinstance(prop, dict) and prop.get("name") == "tinyrustlm:build-id":
                value = prop.get("value")
                return value if isinstance(value, str) else None
        return None

    def toolchain(self) -> dict[str, str]:
        """Debian package name -> version, from the SBOM's pinned toolchain (`deb:` purls)."""
        return {c.name: c.version for c in self.sbom.components if c.purl.startswith("pkg:deb/")}


@dataclass(frozen=True)
class PageInputs:
    """Everything a report page shows: this release, its conformance report, the previous,
    its memory plan."""

    release: Release
    conformance: AnyReport | None
    previous: Release | None
    memory_plan: MemoryPlanDocument | None = None


def _json(data: bytes, where: str) -> Any:
    try:
        return parse_json(data, where)
    except MalformedJson as exc:
        raise PageInputInvalid(exc.message, where=where, offset=exc.offset) from exc


def _invalid(exc: ValidationError, what: str, where: str) -> PageInputInvalid:
    """The first validation error, named by `where` and the field's path."""
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first["loc"])
    place = f"{where}: {field}" if field else where
    return PageInputInvalid(f"{what}: {first['msg']}", where=place)


def _model(cls: type[BaseModel], data: bytes, where: str, strict: bool) -> Any:
    doc = _json(data, where)
    try:
        return cls.model_validate(doc, strict=strict)
    except ValidationError as exc:
        raise _invalid(exc, "not what the page reads", where) from exc


def release_of(files: Mapping[str, bytes], prefix: str = "") -> Release:
    """The release whose documents are files[prefix + name] for manifest, report and SBOM."""

    def need(name: str) -> bytes:
        data = files.get(prefix + name)
        if data is None:
            raise PageInputInvalid("missing", where=prefix + name)
        return data

    return Release(
        manifest=_model(ModuleManifest, need(MANIFEST), prefix + MANIFEST, strict=False),
        report=_model(VerificationReport, need(REPORT), prefix + REPORT, strict=True),
        sbom=_model(SbomView, need(SBOM), prefix + SBOM, strict=False),
    )


def carried_previous(files: Mapping[str, bytes]) -> Release | None:
    """The previous release the bundle carries under previous/ (all three files or none)."""
    present = [name for name in PREVIOUS_FILES if name in files]
    if not present:
        return None
    if len(present) != len(PREVIOUS_FILES):
        missing = sorted(set(PREVIOUS_FILES) - set(present))
        raise PageInputInvalid(
            f"the previous release's documents come together: {', '.join(missing)} missing",
            where=missing[0],
        )
    return release_of(files, f"{PREVIOUS_DIR}/")


def page_inputs(files: Mapping[str, bytes], previous: Release | None = None) -> PageInputs:
    """The page's inputs from a bundle's files; `previous` (another verified bundle's
    documents) replaces the previous release the bundle carries, when given."""
    conformance = None
    if CONFORMANCE in files:
        try:
            conformance = read_report(files[CONFORMANCE], CONFORMANCE)[0]
        except MalformedJson as exc:
            raise PageInputInvalid(exc.message, where=CONFORMANCE, offset=exc.offset) from exc
        except ValidationError as exc:
            raise _invalid(exc, "not a conformance report", CONFORMANCE) from exc
    return PageInputs(
        release=release_of(files),
        conformance=conformance,
        previous=previous if previous is not None else carried_previous(files),
        memory_plan=read_memory_plan(files[MEMORY_PLAN]) if MEMORY_PLAN in files else None,
    )
