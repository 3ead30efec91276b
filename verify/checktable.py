"""The one runner of check tables (Wasm and native): rows of id -> (check, applies-to).

Like bitcoin's security-check.py, checks are pure functions (facts, policy) -> Finding
registered in a table, but they never print; a row whose predicate says it does not apply
(an ELF-only check on a PE file, a cross-check row without wasm-tools verdicts) is not run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

FactsT = TypeVar("FactsT")
PolicyT = TypeVar("PolicyT")


@dataclass(frozen=True, slots=True)
class Finding:
    id: str
    ok: bool
    evidence: str


def always(facts: object, policy: object) -> bool:
    return True


def run_checks(
    table: Mapping[
        str, tuple[Callable[[FactsT, PolicyT], Finding], Callable[[FactsT, PolicyT], bool]]
    ],
    facts: FactsT,
    policy: PolicyT,
) -> list[Finding]:
    """Every applicable row in table order; each finding carries its row's stable id."""
    findings = []
    for check_id, (check, applies) in table.items():
        if applies(facts, policy):
            result = check(facts, policy)
            findings.append(Finding(check_id, result.ok, result.evidence))
    return findings
