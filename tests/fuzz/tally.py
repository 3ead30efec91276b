"""Counting outcomes per mutation class, and the few failing examples worth printing."""

from __future__ import annotations

import random
import time

from verify.formats.fuzz import FuzzCampaign, FuzzExample

MAX_EXAMPLES = 20


def case_rng(seed: int, index: int) -> random.Random:
    """The generator of case `index`: any single case can be rebuilt without the others."""
    return random.Random(seed * 1_000_003 + index)


class Tally:
    """Mutable scratch for one campaign run; `result()` freezes it."""

    def __init__(self, campaign: str, seed: int) -> None:
        self.campaign = campaign
        self.seed = seed
        self.count = 0
        self.outcomes: dict[str, dict[str, int]] = {}
        self.compared: dict[str, int] = {}
        self.failed = 0
        self.examples: list[FuzzExample] = []
        self.started = time.perf_counter()

    def outcome(self, mutation: str, outcome: str) -> None:
        per = self.outcomes.setdefault(mutation, {})
        per[outcome] = per.get(outcome, 0) + 1

    def compare(self, verdict: str) -> None:
        self.compared[verdict] = self.compared.get(verdict, 0) + 1

    def fail(self, index: int, mutation: str, outcome: str, detail: str) -> None:
        self.failed += 1
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(FuzzExample(index=index, mutation=mutation, outcome=outcome,
                                             detail=detail[:500]))  # fmt: skip

    def result(self) -> FuzzCampaign:
        return FuzzCampaign(
            campaign=self.campaign,
            seed=self.seed,
            count=self.count,
            seconds=round(time.perf_counter() - self.started, 3),
            outcomes={k: dict(sorted(v.items())) for k, v in sorted(self.outcomes.items())},
            compared=dict(sorted(self.compared.items())),
            failed=self.failed,
            examples=self.examples,
        )
