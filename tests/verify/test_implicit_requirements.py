"""Proposals that show in no operator of their own: the parser still sees each one, names it
in the inventory with a reason and a count, and the inferred set is what the pinned
wasm-tools needs (valid with it; invalid without any one member). Each case is WAT, or bytes
where WAT cannot say it (an overlong LEB)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.verify import wasmbuild as wb
from verify.wasm import features
from verify.wasm.features import Proposal
from verify.wasm.inventory import inventory_bytes
from verify.wasm.tools import executable, validate

_NO_EXPORTS = {"exports": [], "export_memory": False}
# (id, WAT or module bytes, required proposal names, {proposal: count} it must show)
CASES: list[tuple[str, str | bytes, list[str], dict[str, int]]] = [
    ("funcref-param", "(func (param funcref))", ["reference-types"], {"reference-types": 1}),
    ("externref-local", "(func (local externref))", ["reference-types"], {"reference-types": 1}),
    ("exnref-global", "(global exnref (ref.null exn))", ["reference-types", "exceptions"], {}),
    ("typed-ref-param", "(type $t (func)) (func (param (ref null $t)))",
     ["reference-types", "function-references"], {"function-references": 1}),
    ("non-null-funcref-local", "(func (param (ref func)))",
     ["reference-types", "function-references"], {}),
    ("nullfuncref-param", "(func (param nullfuncref))", ["reference-types", "gc"], {"gc": 1}),
    ("typed-select", "(func (param externref externref i32) (result externref) local.get 0 "
     "local.get 1 local.get 2 select (result externref))", ["reference-types"],
     {"reference-types": 3}),  # two params and the select type
    ("exnref-block", "(func (param exnref) block (result exnref) local.get 0 end drop)",
     ["reference-types", "exceptions"], {"exceptions": 2}),
    ("type-index-block", "(type $t (func (param i32))) (func i32.const 0 block (type $t) drop end)",
     ["multi-value"], {"multi-value": 1}),
    ("two-results", "(func (result i32 i32) i32.const 0 i32.const 0)", ["multi-value"],
     {"multi-value": 1}),
    ("i64-memory", "(memory i64 1) (func i64.const 0 i32.load drop i64.const 0 "
     "i64.load offset=8 drop)", ["memory64"], {"memory64": 3}),  # the memory, two loads
    ("table64", "(table i64 1 funcref)", ["memory64"], {"memory64": 1}),
    ("memory.copy-only", "(memory 1) (func i32.const 0 i32.const 0 i32.const 0 memory.copy)",
     ["bulk-memory-opt"], {"bulk-memory-opt": 1}),
    ("copy-and-init", "(memory 1) (data \"x\") (func i32.const 0 i32.const 0 i32.const 0 "
     "memory.copy i32.const 0 i32.const 0 i32.const 0 memory.init 0)", ["bulk-memory"],
     {"bulk-memory-opt": 1, "bulk-memory": 3}),  # memory.init, passive data, data count
    ("wide-arithmetic", "(func (param i64 i64) (result i64 i64) local.get 0 local.get 1 "
     "i64.mul_wide_s)", ["multi-value", "wide-arithmetic"], {"wide-arithmetic": 1}),
    ("ref.test-func", "(type $t (func)) (func (param funcref) (result i32) local.get 0 "
     "ref.test (ref $t))", ["reference-types", "gc"], {"gc": 1}),
    ("extended-const", "(global i32 (i32.add (i32.const 1) (i32.const 2)))",
     ["extended-const"], {"extended-const": 1}),
    ("overlong-call_indirect",
     wb.module(wb.ModuleSpec(code=[b"\x41\x00\x11\x00\x80\x00"], table=b"\x70\x00\x01",
                             **_NO_EXPORTS)),  # type: ignore[arg-type]
     ["call-indirect-overlong"], {"call-indirect-overlong": 1}),
    ("overlong-memory.size",
     wb.module(wb.ModuleSpec(code=[b"\x3f\x80\x00\x1a"], **_NO_EXPORTS)),  # type: ignore[arg-type]
     ["multi-memory"], {"multi-memory": 1}),
    ("zero-byte-call_indirect",
     wb.module(wb.ModuleSpec(code=[b"\x41\x00\x11\x00\x00"], table=b"\x70\x00\x01",
                             **_NO_EXPORTS)),  # type: ignore[arg-type]
     [], {}),
]  # fmt: skip


def _bytes(source: str | bytes, folder: Path) -> Path:
    path = folder / "m.wasm"
    if isinstance(source, bytes):
        path.write_bytes(source)
        return path
    wat = folder / "m.wat"
    wat.write_text(f"(module {source})")
    subprocess.run([str(executable()), "parse", str(wat), "-o", str(path)], check=True,
                   capture_output=True)  # fmt: skip
    return path


@pytest.mark.parametrize(("source", "required", "counts"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_seen_counted_and_enough_for_wasm_tools(
    tmp_path: Path, source: str | bytes, required: list[str], counts: dict[str, int]
) -> None:
    path = _bytes(source, tmp_path)
    inv = inventory_bytes(path.read_bytes())
    assert inv.required_names == required
    assert {name: inv.proposal_counts.get(name, 0) for name in counts} == counts
    assert all(inv.reasons.get(name) for name in required)
    exact = inv.required | Proposal.MVP
    verdict = validate(path, features.wasm_tools_features(exact))
    assert verdict.valid, verdict.message
    for proposal in features.members(inv.required):
        assert not validate(path, features.wasm_tools_features(exact & ~proposal)).valid, (
            f"still valid without {features.names(proposal)}"
        )
