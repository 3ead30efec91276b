"""`tinyrustlm.memory-plan.v1`: what each Wasm lane of one release plans to hold for a model.

Per Wasm lane, model, worker count and context, the itemized plan the lane's own final bytes
give (`tr_plan_header` over the model's header and directory, loaded in place: no load copy,
as js/loader.js admits a model): its eleven parts in record order (crates/core/CONTRACT.md §5,
crates/core/src/memory.rs `PART_NAMES`), its three phase peaks and the plan's peak. The
release computes it from the final artifacts (pipeline/release/memory_plan.py); `verify
bundle` reads it strictly (step 13: about this release, every plan adds up) and report.html
stacks the parts by context.

The phase peaks are sums of parts (CONTRACT.md §5, `plan_with`), held here as `PHASE_PARTS`:
a plan whose peaks are not the sums of its parts is refused, so a part dropped or changed
on the way to the document cannot pass unseen; nor can a plan filed under another context
(`transfer` is 4 bytes per token of the context).
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field, model_validator

from verify.canonical import canonical_json
from verify.formats.base import Frozen, LaneId, Sha256Hex

MEMORY_PLAN_SCHEMA = "tinyrustlm.memory-plan.v1"

# The plan's parts in record order (crates/core/src/memory.rs PART_NAMES, abi.js PLAN_PARTS;
# tests/verify/test_memory_plan_format.py keeps the three equal).
PartName = Literal[
    "weights",
    "metadata",
    "tokenizer",
    "kv",
    "activations",
    "logits",
    "decode_scratch",
    "stacks_tls",
    "transfer",
    "load_copy",
    "allocator",
]
PLAN_PARTS: tuple[str, ...] = get_args(PartName)
# Each phase peak is the sum of these parts (crates/core/src/memory.rs `plan_with`).
_DECODE = ("weights", "metadata", "tokenizer", "kv", "activations", "logits", "decode_scratch")
PHASE_PARTS: dict[str, tuple[str, ...]] = {
    "peak_load": ("weights", "metadata", "stacks_tls", "load_copy", "allocator"),
    "peak_prefill": (*_DECODE, "stacks_tls", "transfer", "allocator"),
    "steady_decode": (*_DECODE, "stacks_tls", "allocator"),
}

# `transfer` is the prompt's token ids in the host's window: one u32 per token of the context.
TRANSFER_BYTES_PER_TOKEN = 4


class PlanPart(Frozen):
    name: PartName
    bytes: int = Field(ge=0)


class PlannedModel(Frozen):
    """A deterministic model the plans are for (`tinyrustlm-release pack-model --preset P
    --seed S` writes exactly these bytes)."""

    preset: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    seed: int = Field(ge=0, lt=1 << 32)
    sha256: Sha256Hex
    file_bytes: int = Field(ge=1)
    max_context: int = Field(ge=1)
    tier: Literal["f32", "int8"]


class LanePlan(Frozen):
    """One lane's plan for one model, worker count and context (bytes)."""

    lane: LaneId
    artifact_sha256: Sha256Hex = Field(description="the Wasm artifact that answered")
    model: str = Field(description="a `models[].preset`")
    workers: int = Field(ge=0, le=8, description="0: an unthreaded lane")
    context: int = Field(ge=1)
    parts: list[PlanPart] = Field(description="the eleven parts, in record order")
    peak_load: int = Field(ge=0)
    peak_prefill: int = Field(ge=0)
    steady_decode: int = Field(ge=0)
    peak: int = Field(ge=0, description="the largest of the three: what admission compares")
    largest: PartName

    def part(self, name: str) -> int:
        return next(p.bytes for p in self.parts if p.name == name)

    @model_validator(mode="after")
    def _adds_up(self) -> LanePlan:
        names = tuple(p.name for p in self.parts)
        if names != PLAN_PARTS:
            raise ValueError(f"parts must be {', '.join(PLAN_PARTS)} in this order, not {names}")
        for phase, members in PHASE_PARTS.items():
            total = sum(self.part(n) for n in members)
            if getattr(self, phase) != total:
                raise ValueError(f"{phase} {getattr(self, phase)} is not its parts' sum {total}")
        if self.peak != max(self.peak_load, self.peak_prefill, self.steady_decode):
            raise ValueError(f"peak {self.peak} is not the largest of the three phase peaks")
        if self.part("transfer") != TRANSFER_BYTES_PER_TOKEN * self.context:
            raise ValueError(
                f"transfer {self.part('transfer')} is not the prompt's {self.context} token ids"
            )
        top = max(p.bytes for p in self.parts)
        if self.part(self.largest) != top:
            raise ValueError(f"largest {self.largest} is not the largest part")
        return self


class MemoryPlanDocument(Frozen):
    schema_: Literal["tinyrustlm.memory-plan.v1"] = Field(
        "tinyrustlm.memory-plan.v1", alias="schema"
    )
    release_version: str
    source_revision: str = Field(pattern=r"^[0-9a-f]{40}$")
    method: str = Field(description="how the plans were asked for, in a sentence")
    models: list[PlannedModel] = Field(min_length=1)
    plans: list[LanePlan] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> MemoryPlanDocument:
        models = {m.preset: m for m in self.models}
        if len(models) != len(self.models):
            raise ValueError("a model preset is listed twice")
        seen: set[tuple[str, str, int, int]] = set()
        for plan in self.plans:
            model = models.get(plan.model)
            if model is None:
                raise ValueError(f"plan of {plan.lane} names no listed model {plan.model!r}")
            if plan.context > model.max_context:
                raise ValueError(
                    f"{plan.lane} at context {plan.context}: over {plan.model}'s maximum"
                )
            key = (plan.lane, plan.model, plan.workers, plan.context)
            if key in seen:
                raise ValueError(f"{plan.lane} {plan.model} workers {plan.workers} twice")
            seen.add(key)
        return self

    def lanes(self) -> list[str]:
        """The lanes planned, in the document's order."""
        return list(dict.fromkeys(p.lane for p in self.plans))


def memory_plan_bytes(document: MemoryPlanDocument) -> bytes:
    """A bundle's memory-plan.json: canonical JSON, one newline."""
    return canonical_json(document.model_dump(mode="json", by_alias=True)) + b"\n"
