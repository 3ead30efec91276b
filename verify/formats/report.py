"""`tinyrustlm.verification-report.v1`: per artifact, a facts summary and findings.

Versioned through the `schema` field (like auditwheel's `"version": 1`); the JSON Schema
is exported to manifests/schemas/ and a test keeps it equal to this model.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from verify.canonical import canonical_json
from verify.formats.base import Frozen, LaneId, Sha256Hex

REPORT_SCHEMA = "tinyrustlm.verification-report.v1"


class FindingModel(Frozen):
    id: str = Field(description="stable check id, e.g. wasm.proposals.allowed")
    ok: bool
    evidence: str = Field(description="what was seen, for people")


class MemorySummary(Frozen):
    imported: str | None = Field(description="module.name when imported, else null")
    initial_pages: int = Field(ge=0)
    maximum_pages: int | None
    shared: bool
    memory64: bool


class WasmSummary(Frozen):
    instruction_count: int = Field(ge=0)
    function_count: int = Field(ge=0)
    required_proposals: list[str]
    proposal_counts: dict[str, int]
    declared_target_features: list[str] = Field(description='e.g. "+simd128"; [] if absent')
    target_features_section: bool
    imports: list[str]
    exports: list[str]
    memories: list[MemorySummary]
    custom_sections: list[str]
    memory_grow_count: int = Field(ge=0)
    cross_checked: bool = Field(description="wasm-tools validate verdicts were taken")
    relaxed_instructions: dict[str, int] = Field(
        default_factory=dict,
        description="relaxed-SIMD instruction (Wasm name) -> count in the code; {} for none "
        "(absent in reports made before the relaxed lanes)",
    )


class NativeSummary(Frozen):
    format: Literal["ELF", "PE"]
    machine: str
    libraries: list[str]
    max_glibc: str | None
    pie: bool
    nx: bool
    relro: bool
    bind_now: bool
    build_id: str | None
    debug_sections: list[str]
    pe_timestamp: int | None
    instruction_count: int = Field(ge=0)
    undecoded_bytes: int = Field(ge=0)
    isa_groups: dict[str, int]
    fma: dict[str, int]


class ArtifactReport(Frozen):
    file: str = Field(description="file name as given (no directory)")
    sha256: Sha256Hex
    size: int = Field(ge=0)
    lane: LaneId
    kind: Literal["wasm", "native"]
    ok: bool = Field(description="every finding is ok")
    wasm: WasmSummary | None = None
    native: NativeSummary | None = None
    findings: list[FindingModel]


class VerificationReport(Frozen):
    schema_: Literal["tinyrustlm.verification-report.v1"] = Field(
        "tinyrustlm.verification-report.v1", alias="schema"
    )
    verifier: str = Field(description="tool and version that produced the report")
    policy_sha256: dict[str, Sha256Hex] = Field(description="policy file name -> SHA-256")
    ok: bool
    artifacts: list[ArtifactReport]


def report_bytes(report: VerificationReport) -> bytes:
    """A bundle's verification-report.json: canonical JSON (null fields kept), one newline."""
    return canonical_json(report.model_dump(mode="json", by_alias=True)) + b"\n"
