"""`tinyrustlm.capability-receipt.v2` (and v1, still read): what a runtime observed and
selected (schema only). v2 adds `relaxed_simd`: the relaxed-SIMD instructions the selected
module admits (its signed manifest's list), those its lane executed, and the semantics the
engine showed on the out-of-range semantic probe.

The shape is the reference's "Capability receipt". It records coarse, already-exposed host
values and what actually ran; it must never become a hardware fingerprint, so there is no
field for CPU model, clock, GPU, memory capacity or an installation id.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from verify.formats.base import Frozen, Sha256Hex

TestOutcome = Literal["pass", "fail", "not-run"]


class HostReported(Frozen):
    browser_brand: str = "unknown"
    browser_version: str = "unknown"
    os_family: str = "unknown"
    architecture: str = "unknown"


class ModuleIdentity(Frozen):
    artifact_id: str
    sha256: Sha256Hex
    build_manifest_sha256: Sha256Hex
    rustc: str
    llvm: str
    compile_features: list[str]


class FeatureProbe(Frozen):
    validates: bool
    probe_sha256: Sha256Hex


class Observed(Frozen):
    cross_origin_isolated: bool
    feature_probes: dict[str, FeatureProbe]
    workers_requested: int = Field(ge=0)
    workers_started: int = Field(ge=0)
    memory_mode: str
    memory_bytes: int = Field(ge=0)


class Selection(Frozen):
    numerical_mode: str
    kernel_set: str
    quant_layouts: list[str]
    kv_format: str


class SelfTest(Frozen):
    vector_set_sha256: Sha256Hex
    scalar: TestOutcome
    simd128: TestOutcome = "not-run"
    atomics: TestOutcome = "not-run"
    thread_participation: TestOutcome = "not-run"
    tokenizer: TestOutcome = "not-run"
    prng: TestOutcome = "not-run"
    failed_test: str | None = Field(None, description="id of the first failing self-test")


class LaneAttempt(Frozen):
    """One lane the loader tried, in order: why it was skipped or failed, or that it runs."""

    artifact_id: str
    outcome: Literal["selected", "failed", "skipped"]
    step: str = Field(description="the loader step that decided, e.g. 'self-test'")
    error_code: str | None = Field(None, description="the LoaderError code when not selected")
    detail: str = ""


class ExecutedPathEvidence(Frozen):
    scalar_kernel_calls: int = Field(ge=0)
    simd_kernel_calls: int = Field(ge=0)
    worker_ids_participating: list[int] = Field(default_factory=list)


CacheOutcome = Literal["off", "miss", "stored", "hit", "poisoned", "quota-exceeded", "write-failed"]


class FetchRecord(Frozen):
    """One file the loader read, and what its content-addressed cache did for it."""

    what: str = Field(description="'model' or 'module <lane id>'")
    url: str
    sha256: Sha256Hex
    size: int = Field(ge=0)
    cache: CacheOutcome = Field(
        description="off: no cache; miss: fetched, not stored; stored: fetched and stored; "
        "hit: served from the cache (re-hashed); poisoned: a cached copy failed its hash, was "
        "dropped and fetched again; quota-exceeded / write-failed: fetched, storing failed"
    )


RECEIPT_SCHEMA_V1 = "tinyrustlm.capability-receipt.v1"
RECEIPT_SCHEMA = "tinyrustlm.capability-receipt.v2"


class RelaxedSemantics(Frozen):
    """What one semantic probe showed: the allowed semantics the engine's result matched."""

    instruction: str = Field(description="the relaxed instruction probed, by its Wasm name")
    probe_id: str
    probe_version: int = Field(ge=1)
    probe_sha256: Sha256Hex
    semantics: str = Field(
        description="'<second operand>/<pair sum>': the second operand's bytes >= 128 read "
        "'signed', 'unsigned' or 'both unsigned' (the first operand's byte beside it too); the "
        "i16 pair sums 'wrap16', 'saturate16' or summed 'exact32'; or 'unrecognized'"
    )
    result: list[int] = Field(min_length=4, max_length=4, description="the i32x4 lanes seen")


class RelaxedSimd(Frozen):
    admitted: list[str] = Field(
        description="relaxed instructions the selected module holds (its signed manifest's "
        "relaxed_instructions); empty for a lane without relaxed SIMD"
    )
    executed: dict[str, int] = Field(
        description="admitted instruction -> calls of the kernels that execute it "
        "(tr_path_counters' relaxed kernel calls: the relaxed lanes' int8-tier kernels, each "
        "running the one admitted instruction); empty when none ran"
    )
    observed_semantics: list[RelaxedSemantics] = Field(
        description="each semantic probe's result where the relaxed-simd probe validates, "
        "empty where it does not or relaxedSimd is 'off'"
    )


class _ReceiptBody(Frozen):
    created_utc: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
    runtime_semantics: int
    abi_version: int
    host_reported: HostReported
    module: ModuleIdentity
    observed: Observed
    selection: Selection
    self_test: SelfTest
    executed_path_evidence: ExecutedPathEvidence
    attempts: list[LaneAttempt] = Field(
        [], description="every lane considered, best first, ending with the selected one"
    )
    fetched: list[FetchRecord] = Field(
        [], description="the selected module and the model: where they came from (cache or network)"
    )


class CapabilityReceiptV1(_ReceiptBody):
    # v1 as published (no relaxed_simd); its schema's title stays
    model_config = ConfigDict(frozen=True, extra="forbid", title="CapabilityReceipt")
    schema_: Literal["tinyrustlm.capability-receipt.v1"] = Field(
        "tinyrustlm.capability-receipt.v1", alias="schema"
    )


class CapabilityReceipt(_ReceiptBody):
    schema_: Literal["tinyrustlm.capability-receipt.v2"] = Field(
        "tinyrustlm.capability-receipt.v2", alias="schema"
    )
    relaxed_simd: RelaxedSimd


RECEIPT_MODELS: dict[str, type[CapabilityReceiptV1] | type[CapabilityReceipt]] = {
    RECEIPT_SCHEMA_V1: CapabilityReceiptV1,
    RECEIPT_SCHEMA: CapabilityReceipt,
}
