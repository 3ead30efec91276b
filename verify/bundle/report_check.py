"""Step 12, "the report re-derived": inspect every artifact again with the verifier's OWN policy.

The bundle's verification-report.json is what the builder claims it found; a verifier must
not trust it, nor the bundle's policy. It reads the shipped report with its model
(`VerificationReport`), re-inspects each artifact (by lane) with the policy shipped with this
verifier and compares the findings (id, ok, evidence) per lane. `Deriver` is injectable so the
comparison can be tested apart from the inspectors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import ValidationError

from verify.bundle.errors import ReportInvalid, ReportMismatch
from verify.bundle.layout import MANIFEST, REPORT
from verify.bundle.opened import Opened
from verify.canonical import MalformedJson, parse_json
from verify.formats.manifest import ModuleManifest
from verify.formats.report import VerificationReport

# (artifact file, lane id) in manifest order -> the verifier's own report
Deriver = Callable[[Sequence[tuple[Path, str]]], VerificationReport]
# lane -> sorted (finding id, ok, evidence)
FindingTable = dict[str, list[tuple[str, bool, str]]]


def default_deriver() -> Deriver:
    # Imported here, not at the top: the inspectors load lief and capstone (seconds of start-up)
    # and a bundle refused at an earlier step never needs them.
    from verify.inspect import verification_report

    def derive(artifacts: Sequence[tuple[Path, str]]) -> VerificationReport:
        return verification_report(list(artifacts))

    return derive


def read_report(data: bytes, where: str) -> VerificationReport:
    """A verification report's bytes, read once, by its model: strict JSON, then
    `VerificationReport`. Anything else is a `ReportInvalid` naming `where` and the field."""
    try:
        doc = parse_json(data, where)
    except MalformedJson as exc:
        raise ReportInvalid(exc.message, where=where, offset=exc.offset) from exc
    try:
        # strict: JSON types as written ("yes" is not a bool, "7" not an int)
        return VerificationReport.model_validate(doc, strict=True)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise ReportInvalid(
            f"not a tinyrustlm.verification-report.v1: {first['msg']}",
            where=f"{where}: {field}" if field else where,
        ) from exc


def findings_by_lane(report: VerificationReport, where: str) -> FindingTable:
    """lane -> sorted (finding id, ok, evidence); a lane reported twice is a `ReportInvalid`."""
    table: FindingTable = {}
    for i, artifact in enumerate(report.artifacts):
        if artifact.lane in table:
            raise ReportInvalid(
                f"lane {artifact.lane} is reported twice", where=f"{where}: artifacts.{i}.lane"
            )
        table[artifact.lane] = sorted((f.id, f.ok, f.evidence) for f in artifact.findings)
    return table


def failed_findings(report: VerificationReport) -> list[str]:
    """`lane: finding-id` for every finding that is not ok (empty when all pass)."""
    return [f"{a.lane}: {f.id}" for a in report.artifacts for f in a.findings if not f.ok]


def check_relaxed_instructions(manifest: ModuleManifest, derived: VerificationReport) -> None:
    """Each wasm artifact's signed `relaxed_instructions` are the ones its bytes hold (counted
    again here); a manifest that omits the field may do so only for a module that holds none."""
    held = {a.lane: a.wasm.relaxed_instructions for a in derived.artifacts if a.wasm is not None}
    for art in manifest.artifacts:
        listed, found = art.relaxed_instructions, held.get(art.id, {})
        if (listed or {}) != found or (listed is None and found):
            raise ReportMismatch(
                f"lane {art.id}: the manifest lists relaxed instructions {listed}, the "
                f"module holds {found}",
                where=f"{MANIFEST}: artifacts[{art.id}].relaxed_instructions",
                hint="the signed manifest must name what the module really contains: rebuild "
                "the release",
            )


def check_report(opened: Opened, manifest: ModuleManifest, derive: Deriver) -> str:
    """The shipped report's findings are the re-derived ones, lane by lane, and all pass; the
    manifest's relaxed instructions are the ones the artifacts hold."""
    shipped = findings_by_lane(read_report(opened.files[REPORT], REPORT), REPORT)
    artifacts = [(opened.root / url, lane) for url, lane in manifest.lanes()]
    derived_report = derive(artifacts)
    derived = findings_by_lane(derived_report, "the verifier's report")
    for lane in sorted(derived.keys() | shipped.keys()):
        if derived.get(lane) != shipped.get(lane):
            raise ReportMismatch(
                f"lane {lane}: the bundle's findings differ from re-inspection with the "
                "verifier's policy",
                where=f"{REPORT}: {lane}",
            )
        failing = [fid for fid, ok, _ in derived[lane] if not ok]
        if failing:
            raise ReportMismatch(
                f"lane {lane}: failing findings {', '.join(failing)}", where=f"{REPORT}: {lane}"
            )
    check_relaxed_instructions(manifest, derived_report)
    total = sum(len(rows) for rows in derived.values())
    return f"{len(derived)} artifacts, {total} findings, all pass"
