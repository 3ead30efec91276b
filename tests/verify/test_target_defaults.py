"""A lane built on wasm32's LLVM 22 defaults is refused, naming each unexpected proposal and
its first use (function index, file offset), and each target feature it claims beyond the
lane. The module claims the `generic` CPU's features as rustc 1.96 writes them and uses
three of them: memory.copy (bulk-memory-opt), i32.extend8_s (sign-ext) and a call_indirect
whose table index is the overlong `0x80 0x00` (call-indirect-overlong)."""

from __future__ import annotations

import pytest

from tests.verify import wasmbuild as wb
from verify.inspect import inspect_artifact
from verify.wasm import features
from verify.wasm.inventory import inventory_bytes

GENERIC = ["bulk-memory", "bulk-memory-opt", "call-indirect-overlong", "multivalue",
           "mutable-globals", "nontrapping-fptoint", "reference-types", "sign-ext"]  # fmt: skip
MEMORY_COPY = b"\x41\x00\x41\x00\x41\x00\xfc\x0a\x00\x00"
EXTEND8 = b"\x41\x01\xc0\x1a"
OVERLONG_CALL = b"\x41\x00\x11\x00\x80\x00"  # call_indirect type 0, table 0 as 0x80 0x00
USES = {  # proposal -> (its operator bytes, what the finding calls the first use)
    "sign-extension": (EXTEND8, "i32.extend8_s"),
    "bulk-memory-opt": (MEMORY_COPY, "memory.copy"),
    "call-indirect-overlong": (OVERLONG_CALL, "call_indirect with an overlong table index"),
}


def _module() -> bytes:
    ops = EXTEND8 + MEMORY_COPY + OVERLONG_CALL
    # function 0 is every export; function 1 holds the operators (each used twice)
    spec = wb.ModuleSpec(code=[b"", ops + ops], table=b"\x70\x00\x01",
                         customs=[wb.target_features(*(("+", n) for n in GENERIC))])  # fmt: skip
    return wb.module(spec)


@pytest.fixture(scope="module")
def findings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[bool, str]]:
    path = tmp_path_factory.mktemp("defaults") / "m.wasm"
    path.write_bytes(_module())
    report = inspect_artifact(path, "scalar-wasm32")
    return {f.id: (f.ok, f.evidence) for f in report.findings}


def test_the_inventory_needs_exactly_the_three() -> None:
    inv = inventory_bytes(_module())
    assert inv.required_names == list(USES)
    assert {name: inv.proposal_counts[name] for name in USES} == dict.fromkeys(USES, 2)


def test_only_the_proposal_and_claim_findings_fail(findings: dict[str, tuple[bool, str]]) -> None:
    failed = {fid for fid, (ok, _) in findings.items() if not ok}
    assert failed == {"wasm.proposals.allowed", "wasm.target_features.agree",
                      "wasm.tools.valid"}  # fmt: skip


@pytest.mark.parametrize("proposal", list(USES))
def test_each_proposal_is_named_with_its_first_use(
    findings: dict[str, tuple[bool, str]], proposal: str
) -> None:
    data = _module()
    ops, what = USES[proposal]
    offset = data.index(ops) + (len(ops) - len(OVERLONG_CALL) + 2 if ops is OVERLONG_CALL else 0)
    if ops is EXTEND8 or ops is MEMORY_COPY:  # the operator itself, after its i32.consts
        offset = data.index(ops) + ops.index(b"\xc0" if ops is EXTEND8 else b"\xfc")
    _, evidence = findings["wasm.proposals.allowed"]
    assert evidence.startswith("requires sign-extension, bulk-memory-opt, call-indirect-overlong "
                               "beyond the lane: ")  # fmt: skip
    assert f"{proposal}: first {what} in function 1 at offset 0x{offset:x}; " in evidence


def test_every_claim_beyond_the_lane_is_named(findings: dict[str, tuple[bool, str]]) -> None:
    ok, evidence = findings["wasm.target_features.agree"]
    names = ["bulk-memory", "multi-value", "reference-types", "saturating-float-to-int",
             "sign-extension"]  # fmt: skip
    beyond = features.closure(features.from_names(names, "test"))
    assert not ok
    assert evidence == f"claims {', '.join(features.names(beyond))} beyond the lane"
