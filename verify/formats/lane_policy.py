"""`tinyrustlm.lane-policy.v1`: the lane policy files as people write them (pydantic, strict).

Two files share the schema, told apart by `format`: `wasm.json` and `native.json`, shipped as
package data in verify/policy/ beside their loader (`verify.policy`). Every field is required
and no unknown field is accepted, so a typo fails closed instead of silently allowing something.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    Field,
    RootModel,
    StringConstraints,
    field_validator,
    model_validator,
)

from verify.formats.base import StrictFrozen
from verify.wasm import features
from verify.wasm.features import Proposal
from verify.wasm.opcodes import names_of

POLICY_SCHEMA = "tinyrustlm.lane-policy.v1"

Name = Annotated[str, StringConstraints(min_length=1)]


def _unique(values: list[str]) -> list[str]:
    if len(set(values)) != len(values):
        raise ValueError("repeated entries")
    return values


def _known_proposals(values: list[str]) -> list[str]:
    features.from_names(values, "proposal list")  # raises ValueError: unknown proposal ...
    return _unique(values)


def _relaxed_instructions(values: list[str]) -> list[str]:
    unknown = sorted(set(values) - names_of(Proposal.RELAXED_SIMD))
    if unknown:
        raise ValueError(f"not a relaxed-SIMD instruction: {unknown[0]!r}")
    return _unique(values)


Names = Annotated[list[Name], AfterValidator(_unique)]
Proposals = Annotated[list[Name], AfterValidator(_known_proposals)]
RelaxedInstructions = Annotated[list[Name], AfterValidator(_relaxed_instructions)]


class MemoryRuleModel(StrictFrozen):
    source: Literal["export", "import"] = Field(
        description="export: defined and exported; import: imported as env.memory"
    )
    shared: bool
    initial_pages_at_most: int | None = Field(
        ge=0,
        le=65536,
        description="the declared minimum (initial) is at most this many 64 KiB pages; null: any",
    )
    maximum_pages: int | None = Field(
        ge=1,
        le=65536,
        description="the declared maximum is exactly this many 64 KiB pages; null: any, or none",
    )
    growth: bool = Field(description="memory.grow allowed")


class ImportModel(StrictFrozen):
    module: Name
    name: Name
    kind: Name


class WasmCommon(StrictFrozen):
    required_exports: Names
    optional_export_prefixes: Names
    forbidden_custom_sections: Names
    forbid_debug_sections: bool
    missing_target_features_is_empty_claim: bool = Field(
        description="false: an absent target_features section is not judged"
    )
    allowed_path_prefixes: Names


class WasmLane(StrictFrozen):
    allowed_proposals: Proposals
    required_proposals: Proposals
    lower_proposals: Proposals | None = Field(
        description="wasm-tools must reject the module under this set (null: the lowest lane)"
    )
    extra_required_exports: Names = Field(
        description="function exports this lane needs besides common.required_exports"
    )
    extra_required_globals: Names = Field(
        description="global exports this lane needs (the threads lane's stack and TLS globals)"
    )
    memory: MemoryRuleModel
    allowed_imports: list[ImportModel]
    relaxed_instructions: RelaxedInstructions = Field(
        description="the relaxed-SIMD instructions (Wasm names) the lane admits, exactly the "
        "ones its kernels use: the module must hold each and no other; [] on every lane that "
        "does not allow relaxed-simd"
    )

    @model_validator(mode="after")
    def _required_allowed(self) -> WasmLane:
        if set(self.required_proposals) - set(self.allowed_proposals):
            raise ValueError("required proposals are not all allowed")
        relaxed = features.PROPOSAL_NAMES[Proposal.RELAXED_SIMD][0] in self.allowed_proposals
        if relaxed != bool(self.relaxed_instructions):
            raise ValueError(
                "relaxed-simd is admitted by instruction: a lane that allows it names its "
                "relaxed_instructions, and only such a lane names any"
            )
        return self


class NativeCommon(StrictFrozen):
    forbid_debug_sections: bool
    forbid_parse_anomalies: bool = Field(
        description="a lief parse anomaly, or a file shorter than its headers claim, fails"
    )
    allowed_path_prefixes: Names


class NativeLane(StrictFrozen):
    format: Literal["ELF", "PE"]
    machine: Literal["x86_64", "aarch64"]
    allowed_libraries: Names = Field(description="exact names; PE compares case-insensitively")
    max_glibc: Annotated[str, StringConstraints(pattern=r"^[0-9]+(\.[0-9]+)*$")] | None
    pie: bool
    nx: bool
    full_relro: bool
    build_id: bool
    pe_timestamp: int | None
    pe_debug_directory: bool = Field(description="false: no debug directory entries allowed")
    pe_dynamic_base: bool
    pe_high_entropy_va: bool
    forbidden_isa_groups: Names = Field(description="capstone groups beyond the baseline ISA")
    baseline_encodings: dict[str, str] = Field(
        {},
        description="mnemonic -> why: instructions of a forbidden group whose encoding every "
        "baseline CPU executes as an older instruction (not counted as beyond the baseline)",
    )
    fma_mnemonics: Names = Field(description="mnemonic prefixes of fused multiply-add")
    extra_allowed_path_prefixes: Names


LanePattern = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_-]*$")]


class _PolicyFile(StrictFrozen):
    schema_: Literal["tinyrustlm.lane-policy.v1"] = Field(alias="schema")

    @model_validator(mode="before")
    @classmethod
    def _every_lane_has_checks(cls, data: object) -> object:
        if isinstance(data, dict) and isinstance(data.get("lanes"), dict):
            empty = [lane for lane, body in data["lanes"].items() if body in ({}, None)]
            if empty:
                raise ValueError(f"lane {empty[0]!r} has no checks")
        return data

    @field_validator("lanes", check_fields=False)
    @classmethod
    def _lanes_not_empty(cls, lanes: dict[str, object]) -> dict[str, object]:
        if not lanes:
            raise ValueError("no lanes: an empty policy allows nothing")
        return lanes


class WasmPolicyFile(_PolicyFile):
    format: Literal["wasm"]
    common: WasmCommon
    lanes: dict[LanePattern, WasmLane]


class NativePolicyFile(_PolicyFile):
    format: Literal["native"]
    common: NativeCommon
    lanes: dict[LanePattern, NativeLane]


class LanePolicy(RootModel[WasmPolicyFile | NativePolicyFile]):
    """Either policy file (the JSON Schema of `tinyrustlm.lane-policy.v1`)."""

    root: WasmPolicyFile | NativePolicyFile = Field(discriminator="format")
