"""`tinyrustlm.fuzz-campaign.v1`: the counts one fuzz campaign writes under build/fuzz/.

Per mutation class, how many cases ended in each outcome; the comparison counters (e.g.
against `wasm-tools validate`); how many cases broke the campaign's contract, with a few
reproducible examples (the seed and the case index rebuild the exact input).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from verify.formats.base import Frozen

FUZZ_CAMPAIGN_SCHEMA = "tinyrustlm.fuzz-campaign.v1"


class FuzzExample(Frozen):
    index: int = Field(ge=0, description="case number: with the seed, rebuilds the input")
    mutation: str = Field(description="the mutation class that made the input")
    outcome: str = Field(description="the outcome that broke the contract")
    detail: str = Field(description="the error or disagreement, for people")


class FuzzCampaign(Frozen):
    schema_: Literal["tinyrustlm.fuzz-campaign.v1"] = Field(
        "tinyrustlm.fuzz-campaign.v1", alias="schema"
    )
    campaign: str = Field(description="the campaign's module name, e.g. parser_mutation")
    seed: int
    count: int = Field(ge=0, description="cases run")
    seconds: float = Field(ge=0)
    outcomes: dict[str, dict[str, int]] = Field(description="mutation class -> outcome -> cases")
    compared: dict[str, int] = Field(
        description="comparison with a reference (e.g. wasm-tools validate) -> cases"
    )
    failed: int = Field(ge=0, description="cases that broke the contract (0: the campaign held)")
    examples: list[FuzzExample] = Field(description="the first failing cases (at most 20)")
