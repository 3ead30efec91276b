"""`tinyrustlm.conformance-report.v3`: every lane of one release run on every engine, with a
model of each kernel tier (CONTRACT.md §1, §10: format v1 = the f32 tier, v2 = the integer tier).

One row per engine x isolation x lane x tier: which engine (and its version) ran which artifact
(by SHA-256), whether the page was cross-origin isolated, whether the engine's lane choice
picked this lane, the receipt it produced, and how many of the seeded cases gave the oracle's
tokens and final RNG state. A row that failed keeps its first failing case with the diff, so
a failure is recorded, never hidden. The speed table is measured, never asserted.

v3 keeps the evidence, not only the verdicts: the cases themselves (`cases.entries`), the
oracle's raw token ids and final RNG state per case and tier (`models[].oracle`), and every
row's raw token ids per case (`rows[].results`), each failing case saying whether it was a
mismatch, an error or a timeout. A third party diffs them; `verify bundle` recomputes every
row's verdict from them. Token ids are written as one string of space-separated decimals per
case (exact, diffable, a line of JSON each). v2 readers refuse a v3 report (its `schema`
literal), they do not misread it; v3 readers read v1 and v2 (their verdicts only).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, Literal, get_args

from pydantic import ConfigDict, Field, model_validator

from verify.canonical import canonical_json, parse_json
from verify.formats.base import Frozen, LaneId, Sha256Hex

CONFORMANCE_SCHEMA = "tinyrustlm.conformance-report.v3"
CONFORMANCE_SCHEMA_V2 = "tinyrustlm.conformance-report.v2"
CONFORMANCE_SCHEMA_V1 = "tinyrustlm.conformance-report.v1"
# The kernel tiers a model declares in its header (CONTRACT.md §1: format_version 1 = f32,
# 2 = int8). A v2 report runs a model of every one of them on every engine.
ModelTier = Literal["f32", "int8"]
MODEL_TIERS: tuple[str, ...] = get_args(ModelTier)
# tier -> the loader receipt's `selection.numerical_mode` of a run on it (CONTRACT.md §10; the
# loader's TIER_SELECTION in crates/wasm/js/receipt.js, a test keeps the two equal)
TIER_NUMERICAL_MODES: dict[str, str] = {"f32": "strict-f32-v1", "int8": "int8-exact-v1"}
# pass: every case matched the oracle; fail: a case differed or the lane could not run where it
# should; not-run: the lane legitimately cannot run here (threads without isolation).
RowOutcome = Literal["pass", "fail", "not-run"]

# Every engine a conformance row may name (one table for the producer and the verifier).
# The loader's engines carry a capability receipt whose `host_reported.browser_brand` (coarse
# and already exposed by the engine) must be one of these brands: a row copied from another
# engine is refused. The others run the modules without the loader.
LOADER_ENGINE_BRANDS: dict[str, tuple[str, ...]] = {
    "chromium": ("Chromium", "Google Chrome", "HeadlessChrome"),
    "firefox": ("Firefox",),
    "webkit": ("Safari", "WebKit"),
    "node": ("node",),
}
OTHER_ENGINES = ("wasmtime", "native", "qemu", "wine")
KNOWN_ENGINES = (*LOADER_ENGINE_BRANDS, *OTHER_ENGINES)
EngineKind = Literal["browser", "js-runtime", "wasm-runtime", "native"]


class SamplerCase(Frozen):
    """One prompt x seed x sampler case; floats are exact f32 values (dyadic decimals)."""

    id: str
    prompt: str
    seed: int = Field(ge=0, lt=2**64)
    stream: int = Field(ge=0, lt=2**64)
    temperature: float = Field(ge=0)
    top_k: int = Field(ge=0)
    top_p: float = Field(gt=0, le=1)
    repetition_penalty: float = Field(gt=0)
    max_tokens: int = Field(ge=1)


def case_record(case: SamplerCase) -> dict[str, object]:
    """A case as JSON: u64 seeds as decimal strings (JSON numbers lose them)."""
    return {**case.model_dump(), "seed": str(case.seed), "stream": str(case.stream)}


def cases_sha256(cases: Sequence[SamplerCase]) -> str:
    """`cases.sha256`: SHA-256 of the canonical JSON list of the case records."""
    return hashlib.sha256(canonical_json([case_record(c) for c in cases])).hexdigest()


class CaseList(Frozen):
    """The seeded cases every model ran, and the oracle binary that gave the expected outputs."""

    count: int = Field(ge=0)
    seed: int
    sha256: Sha256Hex = Field(description="SHA-256 of the canonical JSON list of the cases")
    oracle_lane: str = Field(description="the native scalar binary whose outputs are the truth")
    oracle_sha256: Sha256Hex


class CaseSet(CaseList):
    # v1: the cases and the one model they ran on (its fields and schema as published)
    model: str = Field(description="model preset the cases ran on")
    model_sha256: Sha256Hex
    oracle_stops: dict[str, int] = Field(
        description="how the oracle's generations ended (eos, max-tokens, context): shows "
        "which cases exercised EOS"
    )


class TierModel(Frozen):
    """v2: the model one tier's rows ran (the cases of `CaseList` on it)."""

    tier: ModelTier
    model: str = Field(description="model preset")
    model_sha256: Sha256Hex
    oracle_stops: dict[str, int] = Field(
        description="how the oracle's generations on this model ended (eos, max-tokens, context)"
    )


class CaseDiff(Frozen):
    case: str
    field: Literal["tokens", "rng_state", "error"]
    expected: str
    got: str
    first_index: int | None = Field(None, description="first differing token position")


class ConformanceRow(Frozen):
    engine: str = Field(description="chromium, firefox, webkit, node, wasmtime, native, ...")
    engine_kind: EngineKind
    engine_version: str
    isolated: bool | None = Field(description="page was cross-origin isolated (browsers only)")
    lane: LaneId
    artifact_sha256: Sha256Hex
    outcome: RowOutcome
    chosen: bool = Field(description="the engine's lane choice picked this lane")
    receipt_sha256: Sha256Hex | None = Field(
        None, description="SHA-256 of the canonical JSON of the receipt the runner produced"
    )
    receipt: dict[str, Any] | None = None
    cases_passed: int = Field(ge=0)
    cases_failed: int = Field(ge=0)
    first_failure: CaseDiff | None = None
    detail: str = ""


class SpeedRow(Frozen):
    """Medians (and min..max) over `runs` runs of one fixed greedy prompt."""

    engine: str
    engine_version: str
    lane: str
    model: str
    runs: int = Field(ge=1)
    decode_tokens: int = Field(ge=0, description="tokens decoded after the first, per run")
    ttft_ms_median: float
    ttft_ms_min: float
    ttft_ms_max: float
    decode_tps_median: float
    decode_tps_min: float
    decode_tps_max: float


class TierRow(ConformanceRow):
    """v2: a row and the tier of the model it ran."""

    tier: ModelTier


class ConformanceReportV1(Frozen):
    # v1 as published (one model, rows without a tier); its schema's title stays
    model_config = ConfigDict(frozen=True, extra="forbid", title="ConformanceReport")

    schema_: Literal["tinyrustlm.conformance-report.v1"] = Field(
        "tinyrustlm.conformance-report.v1", alias="schema"
    )
    release_version: str
    source_revision: str
    cases: CaseSet
    rows: list[ConformanceRow]
    speed: list[SpeedRow] = Field(default_factory=list)
    notes: list[str] = Field(
        default_factory=list, description="what this run could not check, and why"
    )


class ConformanceReportV2(Frozen):
    # v2 as published (verdicts per row, no tokens); its schema's title stays
    model_config = ConfigDict(frozen=True, extra="forbid", title="ConformanceReport")

    schema_: Literal["tinyrustlm.conformance-report.v2"] = Field(
        "tinyrustlm.conformance-report.v2", alias="schema"
    )
    release_version: str
    source_revision: str
    cases: CaseList
    models: list[TierModel] = Field(min_length=1, description="one model per tier")
    rows: list[TierRow]
    speed: list[SpeedRow] = Field(default_factory=list)
    notes: list[str] = Field(
        default_factory=list, description="what this run could not check, and why"
    )

    @model_validator(mode="after")
    def _tiers_declared_once(self) -> ConformanceReportV2:
        _check_tiers([m.tier for m in self.models], [r.tier for r in self.rows])
        return self

    def engines(self) -> list[str]:
        return sorted({r.engine for r in self.rows})

    def tiers(self) -> list[str]:
        return [m.tier for m in self.models]


def _check_tiers(models: Sequence[str], rows: Sequence[str]) -> None:
    if len(set(models)) != len(models):
        raise ValueError(f"models: a tier appears twice: {list(models)}")
    undeclared = sorted(set(rows) - set(models))
    if undeclared:
        raise ValueError(f"rows of tier {', '.join(undeclared)}, which models does not list")


# -- v3: the evidence ----------------------------------------------------------------------
Stop = Literal["eos", "max-tokens", "context", "error"]
# mismatch: the run ended normally with other tokens or another RNG state than the oracle's;
# error: the runner reported an error for the case (an exception, a TrResult code, no result);
# timeout: the runner ran out of time before the case had a result.
FailureKind = Literal["mismatch", "error", "timeout"]
FAILURE_KINDS: tuple[str, ...] = get_args(FailureKind)
TOKEN_IDS = r"^(|(0|[1-9][0-9]{0,9})( (0|[1-9][0-9]{0,9}))*)$"


def token_text(tokens: Sequence[int]) -> str:
    """Token ids as the report writes them: space-separated decimals."""
    return " ".join(str(t) for t in tokens)


class CaseOutput(Frozen):
    """What one run gave for one case: the raw token ids, the final RNG state, how it stopped."""

    case: str
    tokens: str = Field(pattern=TOKEN_IDS, description="token ids, space-separated decimals")
    rng_state: str = Field(description='the PCG32 state after the last decode step, "0x%016x"')
    stop: Stop


class CaseRun(CaseOutput):
    """One case of a row: its output, and why it failed against the oracle (None: it passed)."""

    failure: FailureKind | None
    error: str | None = Field(None, description="the runner's error, for error and timeout")


class CaseTable(CaseList):
    """v3: the cases themselves, so the report alone says what ran."""

    entries: list[SamplerCase] = Field(description="the cases, in order; `sha256` is of these")


class OracleModel(TierModel):
    """v3: a tier's model and the oracle's output for every case on it, in case order."""

    oracle: list[CaseOutput]


class TokenRow(TierRow):
    """v3: a row and every case's output (none for a not-run row), in case order."""

    results: list[CaseRun]


class ConformanceReport(Frozen):
    schema_: Literal["tinyrustlm.conformance-report.v3"] = Field(
        "tinyrustlm.conformance-report.v3", alias="schema"
    )
    release_version: str
    source_revision: str
    cases: CaseTable
    models: list[OracleModel] = Field(min_length=1, description="one model per tier")
    rows: list[TokenRow]
    speed: list[SpeedRow] = Field(default_factory=list)
    notes: list[str] = Field(
        default_factory=list, description="what this run could not check, and why"
    )

    @model_validator(mode="after")
    def _tiers_declared_once(self) -> ConformanceReport:
        _check_tiers([m.tier for m in self.models], [r.tier for r in self.rows])
        return self

    def engines(self) -> list[str]:
        return sorted({r.engine for r in self.rows})

    def tiers(self) -> list[str]:
        return [m.tier for m in self.models]


AnyReport = ConformanceReport | ConformanceReportV2


def upgrade(v1: ConformanceReportV1) -> ConformanceReportV2:
    """A v1 report as v2: its one model (before the integer tier) is the f32 tier's."""
    c = v1.cases
    return ConformanceReportV2(
        release_version=v1.release_version,
        source_revision=v1.source_revision,
        cases=CaseList(**c.model_dump(include=set(CaseList.model_fields))),
        models=[
            TierModel(
                tier="f32", model=c.model, model_sha256=c.model_sha256, oracle_stops=c.oracle_stops
            )
        ],
        rows=[TierRow(**r.model_dump(), tier="f32") for r in v1.rows],
        speed=v1.speed,
        notes=v1.notes,
    )


def read_report(data: bytes, where: str = "conformance report") -> tuple[AnyReport, str]:
    """The report and the schema it was written in; v1 is read as v2 (`upgrade`).

    Strict JSON first (`parse_json`: no duplicate key, no NaN or Infinity, bounded; a
    `MalformedJson` naming `where`), then the model of its `schema` (v3 unless it names v1 or
    v2), with no coercion (a bool is no int): pydantic's ValidationError for anything else
    (named field)."""
    doc = parse_json(data, where)
    schema = doc.get("schema") if isinstance(doc, dict) else None
    if schema == CONFORMANCE_SCHEMA_V1:
        return upgrade(
            ConformanceReportV1.model_validate_json(data, strict=True)
        ), CONFORMANCE_SCHEMA_V1
    if schema == CONFORMANCE_SCHEMA_V2:
        return ConformanceReportV2.model_validate_json(data, strict=True), CONFORMANCE_SCHEMA_V2
    return ConformanceReport.model_validate_json(data, strict=True), CONFORMANCE_SCHEMA
