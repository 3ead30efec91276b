"""Modules built by other toolchains (tests/verify/fixtures/third_party): the proposals our
inventory requires are exactly what the pinned wasm-tools needs to validate each one (the
set validates; without any one of them it does not), and our operator counts are what
`wasm-tools print` shows."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.verify.printed import printed_counts
from verify.wasm import features
from verify.wasm.features import Proposal
from verify.wasm.inventory import inventory_bytes
from verify.wasm.tools import validate

FOLDER = Path(__file__).parent / "fixtures" / "third_party"
SOURCES: list[dict[str, Any]] = json.loads((FOLDER / "sources.json").read_text())["fixtures"]
IDS = [s["file"] for s in SOURCES]


@pytest.mark.parametrize("source", SOURCES, ids=IDS)
def test_fixture_is_the_recorded_file(source: dict[str, Any]) -> None:
    data = (FOLDER / source["file"]).read_bytes()
    assert (len(data), hashlib.sha256(data).hexdigest()) == (source["size"], source["sha256"])


@pytest.mark.parametrize("source", SOURCES, ids=IDS)
def test_required_proposals_are_enough_and_each_needed(source: dict[str, Any]) -> None:
    path = FOLDER / source["file"]
    inv = inventory_bytes(path.read_bytes())
    assert inv.required_names == source["required"]
    assert all(inv.reasons.get(name) for name in inv.required_names)  # each has a reason
    exact = inv.required | Proposal.MVP
    verdict = validate(path, features.wasm_tools_features(exact))
    assert verdict.valid, verdict.message
    for proposal in features.members(inv.required):
        without = validate(path, features.wasm_tools_features(exact & ~proposal))
        assert not without.valid, f"still valid without {features.names(proposal)}"


@pytest.mark.parametrize("source", SOURCES, ids=IDS)
def test_operator_counts_match_wasm_tools_print(source: dict[str, Any]) -> None:
    path = FOLDER / source["file"]
    inv = inventory_bytes(path.read_bytes())
    assert Counter(inv.op_counts) == printed_counts(path)
