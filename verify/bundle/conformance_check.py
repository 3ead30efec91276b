"""Step 13: the bundle's conformance report (optional unless engines are required).

When `conformance.json` is present it must be strict JSON (no duplicate key, no NaN or
Infinity) and a valid `tinyrustlm.conformance-report.v3` (or v2, or a v1 report read with every
row of the f32 tier) about this release: same version and revision, and every row names an
artifact of this manifest by its SHA-256. It is held to meaning, not only to its signature:
  - the report declares at least one case, and a passing row ran at least that many with
    none failed (a 0/0 "pass" is refused);
  - rows are unique per (engine, isolation, lane, tier), and name a known engine;
  - the release declares every kernel tier (`MODEL_TIERS`: every lane of a release runs
    both, CONTRACT.md §10), so a v2 or v3 report declares a model of each, and every
    (engine, isolation, lane) it has a row for has a row on every tier (no tier dropped);
  - a v3 report's verdicts are recomputed from its token ids (`conformance_verdicts.py`);
  - a passing row of an engine that runs js/loader.js (browsers, node) carries the loader's
    capability receipt, and any receipt-shaped object is checked whatever its schema says:
    whole (its digest), of the row's artifact, of this bundle's signed manifest (by SHA-256),
    and reported by the row's engine (`host_reported.browser_brand`) — so a report from
    another manifest, a receipt edited after the run, or a Chromium row copied as Firefox is
    refused; and the receipt's numerical mode is the row's tier's (an f32 receipt on an
    int8 row is refused).
With `--require-engines`, the report must be v3 (a v1 or v2 report is a downgrade: verdicts
the verifier cannot recompute, or no int8 tier), and each named engine needs, on every tier
the release declares, at least one passing row and no failing row, except for a lane the
manifest switches off in `disabled_lanes` (the signed switch a loader obeys).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from pydantic import ValidationError

from verify.bundle import errors as e
from verify.bundle.conformance_verdicts import recompute_verdicts
from verify.bundle.layout import CONFORMANCE
from verify.canonical import MalformedJson, canonical_json
from verify.formats.base import strict_model
from verify.formats.conformance import (
    CONFORMANCE_SCHEMA,
    CONFORMANCE_SCHEMA_V1,
    CONFORMANCE_SCHEMA_V2,
    KNOWN_ENGINES,
    LOADER_ENGINE_BRANDS,
    MODEL_TIERS,
    TIER_NUMERICAL_MODES,
    AnyReport,
    ConformanceReport,
    TierRow,
    read_report,
)
from verify.formats.manifest import ModuleManifest
from verify.formats.receipt import RECEIPT_MODELS, RECEIPT_SCHEMA


def _row_name(engine: str, lane: str, isolated: bool | None, tier: str) -> str:
    where = f"{engine}/{lane} [{tier}]"
    return where + ("" if isolated is None else f" (isolated={isolated})")


def _invalid(exc: ValidationError, what: str, where: str) -> e.ConformanceInvalid:
    """The first validation error, naming its field (`where` + the field's path)."""
    first = exc.errors()[0]
    field = ".".join(str(p) for p in first["loc"])
    return e.ConformanceInvalid(f"{what}: {field}: {first['msg']}", where=f"{where}{field}")


def _check_receipt(row: TierRow, where: str, manifest_sha256: str) -> None:
    """A loader's receipt in a row: intact, about this artifact of this signed manifest, and
    reported by the row's engine. A passing loader row must have one."""
    receipt = row.receipt
    name = _row_name(row.engine, row.lane, row.isolated, row.tier)
    if receipt is None:
        if row.engine in LOADER_ENGINE_BRANDS and row.outcome == "pass":
            raise e.ConformanceMismatch(
                f"row {name}: a passing row of a loader engine carries no loader receipt",
                where=f"{where}.receipt",
            )
        return  # wasmtime and native rows run no loader; a refused lane has no receipt
    digest = hashlib.sha256(canonical_json(receipt)).hexdigest()
    if row.receipt_sha256 != digest:
        raise e.ConformanceMismatch(
            f"row {name}: receipt_sha256 is not the digest of its receipt",
            where=f"{where}.receipt_sha256",
        )
    # a v1 receipt (released before the relaxed lanes) is read as v1; anything else as the
    # current schema, so a wrong `schema` names the current one
    schema = receipt.get("schema") if isinstance(receipt, dict) else None
    schema = schema if isinstance(schema, str) and schema in RECEIPT_MODELS else RECEIPT_SCHEMA
    try:
        parsed = strict_model(RECEIPT_MODELS[schema], receipt)
    except ValidationError as exc:
        raise _invalid(exc, f"row {name}: not a {schema}", f"{where}.receipt.") from exc
    module = parsed.module
    if module.sha256 != row.artifact_sha256:
        raise e.ConformanceMismatch(
            f"row {name}: the receipt is of module {module.sha256[:16]}…, not the row's artifact",
            where=f"{where}.receipt.module.sha256",
        )
    if module.build_manifest_sha256 != manifest_sha256:
        raise e.ConformanceMismatch(
            f"row {name}: the loader verified manifest {module.build_manifest_sha256[:16]}…, "
            f"not this bundle's {manifest_sha256[:16]}…",
            where=f"{where}.receipt.module.build_manifest_sha256",
        )
    brand = parsed.host_reported.browser_brand
    if brand not in LOADER_ENGINE_BRANDS.get(row.engine, ()):
        raise e.ConformanceMismatch(
            f"row {name}: the receipt was reported by {brand!r}, not by {row.engine}",
            where=f"{where}.receipt.host_reported.browser_brand",
        )
    mode = parsed.selection.numerical_mode
    if mode != TIER_NUMERICAL_MODES[row.tier]:
        raise e.ConformanceMismatch(
            f"row {name}: the receipt ran numerical mode {mode!r}, not the {row.tier} tier's "
            f"{TIER_NUMERICAL_MODES[row.tier]!r}",
            where=f"{where}.receipt.selection.numerical_mode",
        )


def _check_rows(report: AnyReport) -> None:
    """Known engines, one row per (engine, isolation, lane, tier), no hollow pass."""
    if report.cases.count < 1:
        raise e.ConformanceInvalid(
            "the report declares no cases: a pass of nothing is no evidence",
            where=f"{CONFORMANCE}: cases.count",
        )
    seen: dict[tuple[str, bool | None, str, str], int] = {}
    for i, row in enumerate(report.rows):
        where = f"{CONFORMANCE}: rows[{i}]"
        name = _row_name(row.engine, row.lane, row.isolated, row.tier)
        if row.engine not in KNOWN_ENGINES:
            raise e.ConformanceInvalid(
                f"row {name}: unknown engine {row.engine!r}", where=f"{where}.engine"
            )
        key = (row.engine, row.isolated, row.lane, row.tier)
        if key in seen:
            raise e.ConformanceMismatch(
                f"row {name} appears twice (rows[{seen[key]}] and rows[{i}])", where=where
            )
        seen[key] = i
        if row.outcome == "pass" and (
            row.cases_failed != 0 or row.cases_passed < report.cases.count
        ):
            raise e.ConformanceMismatch(
                f"row {name} passes with {row.cases_passed} passed and {row.cases_failed} "
                f"failed of the {report.cases.count} declared cases",
                where=f"{where}.cases_passed",
            )


def check_conformance(
    data: bytes | None, manifest: ModuleManifest, manifest_sha256: str, require: Sequence[str]
) -> str:
    if data is None:
        if require:
            raise e.ConformanceMissing(
                f"engines {', '.join(require)} are required but the bundle has no {CONFORMANCE}",
                where=CONFORMANCE,
            )
        return "no conformance report (none required)"
    try:
        report, schema = read_report(data, CONFORMANCE)
    except MalformedJson as exc:
        raise e.ConformanceInvalid(exc.message, where=CONFORMANCE, offset=exc.offset) from exc
    except ValidationError as exc:
        what = f"not a {CONFORMANCE_SCHEMA} (or {CONFORMANCE_SCHEMA_V2}, {CONFORMANCE_SCHEMA_V1})"
        raise _invalid(exc, what, f"{CONFORMANCE}: ") from exc
    if require and schema != CONFORMANCE_SCHEMA:
        raise e.ConformanceDowngrade(
            f"engines {', '.join(require)} are required, and the report is a {schema}: the "
            f"verifier judges them on {CONFORMANCE_SCHEMA} token ids, on every tier",
            where=f"{CONFORMANCE}: schema",
        )
    if schema != CONFORMANCE_SCHEMA_V1:
        _check_models_declared(report)
    if (report.release_version, report.source_revision) != (
        manifest.version,
        manifest.source_revision,
    ):
        raise e.ConformanceMismatch(
            f"report is of {report.release_version} at {report.source_revision[:12]}, the "
            f"manifest of {manifest.version} at {manifest.source_revision[:12]}",
            where=f"{CONFORMANCE}: release_version",
        )
    _check_rows(report)
    digests = {a.id: a.sha256 for a in manifest.artifacts}
    digests.update({a.id: a.sha256 for a in manifest.native_artifacts})
    for i, row in enumerate(report.rows):
        if digests.get(row.lane) != row.artifact_sha256:
            raise e.ConformanceMismatch(
                f"row {_row_name(row.engine, row.lane, row.isolated, row.tier)} ran an "
                "artifact that is not this manifest's",
                where=f"{CONFORMANCE}: rows[{i}].artifact_sha256",
            )
        _check_receipt(row, f"{CONFORMANCE}: rows[{i}]", manifest_sha256)
    if schema != CONFORMANCE_SCHEMA_V1:
        _check_no_tier_dropped(report)
    if isinstance(report, ConformanceReport):
        recompute_verdicts(report)
    disabled = set(manifest.disabled_lanes or ())
    for engine in require:
        for tier in MODEL_TIERS:  # every tier the release declares, whatever the report lists
            _check_required(report, engine, tier, disabled)
    passed = sum(r.outcome == "pass" for r in report.rows)
    old = {CONFORMANCE_SCHEMA_V1: " (a v1 report)", CONFORMANCE_SCHEMA_V2: " (a v2 report)"}
    tiers = "/".join(report.tiers()) + old.get(schema, "")
    required = f", required engines {', '.join(require)} pass" if require else ""
    return f"{len(report.rows)} rows, {passed} pass, tiers {tiers}{required}"


def _check_models_declared(report: AnyReport) -> None:
    """The release declares every tier: the report has a model of each."""
    missing = [t for t in MODEL_TIERS if t not in report.tiers()]
    if missing:
        raise e.ConformanceInvalid(
            f"the report runs no model of the {', '.join(missing)} tier: every lane runs every "
            "tier, so a report covers each",
            where=f"{CONFORMANCE}: models",
        )


def _check_no_tier_dropped(report: AnyReport) -> None:
    """Each (engine, isolation, lane) the report has a row for has one on every tier."""
    have = {(r.engine, r.isolated, r.lane, r.tier) for r in report.rows}
    for i, row in enumerate(report.rows):
        for tier in MODEL_TIERS:
            if (row.engine, row.isolated, row.lane, tier) not in have:
                raise e.ConformanceInvalid(
                    f"row {_row_name(row.engine, row.lane, row.isolated, row.tier)} has no "
                    f"{tier} row: the release declares every tier, the report drops one",
                    where=f"{CONFORMANCE}: rows[{i}]",
                )


def _check_required(report: AnyReport, engine: str, tier: str, disabled: set[str]) -> None:
    """A required engine on one tier: no failing row, and at least one passing row."""
    rows = [r for r in report.rows if (r.engine, r.tier) == (engine, tier)]
    rows = [r for r in rows if r.lane not in disabled]
    failing = [i for i, r in enumerate(report.rows) if r in rows and r.outcome == "fail"]
    if failing:
        r: TierRow = report.rows[failing[0]]
        first_case = r.first_failure.case if r.first_failure else "-"
        raise e.ConformanceRowFailed(
            f"engine {engine}: {len(failing)} failing row(s) of the {tier} tier, first "
            f"{_row_name(r.engine, r.lane, r.isolated, r.tier)}: {r.cases_failed} case(s) "
            f"failed (first {first_case}) {r.detail}".rstrip(),
            where=f"{CONFORMANCE}: rows[{failing[0]}]",
        )
    if not any(r.outcome == "pass" for r in rows):
        raise e.ConformanceEngineMissing(
            f"engine {engine} has no passing row of the {tier} tier", where=CONFORMANCE
        )
