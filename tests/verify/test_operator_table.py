"""verify/wasm's tables against their upstream sources, from a committed snapshot
(tests/verify/fixtures/wasmparser_operators.json names the commits it was read from):
every wasmparser operator of a proposal we model is in opcodes.OPCODES with the same name
and proposal, and every feature name LLVM 22's WebAssembly.td defines is one features.py
knows. The immediates are checked against `wasm-tools print` in test_opcode_immediates."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from verify.wasm import features
from verify.wasm.features import Proposal
from verify.wasm.opcodes import OPCODES
from verify.wasm.tools import executable

SNAPSHOT: dict[str, Any] = json.loads(
    (Path(__file__).parent / "fixtures" / "wasmparser_operators.json").read_text()
)
THEIRS = {(p, c): (visit, proposal) for p, c, visit, proposal in SNAPSHOT["operators"]}
# wasmparser proposals we do not model: their operators are refused as unknown opcodes.
UNMODELLED = {"stack_switching", "custom_descriptors", "shared_everything_threads",
              "memory_control"}  # fmt: skip
# Where our row differs from wasmparser's list, and why.
PROPOSAL_EXCEPTIONS = {  # wasmparser lists them under bulk memory, validates bulk_memory_opt
    (0xFC, 0x0A): "bulk-memory-opt",
    (0xFC, 0x0B): "bulk-memory-opt",
}
NAME_EXCEPTIONS = {  # visit_* names of operators printed under one mnemonic
    (0, 0x1C): "visit_typed_select",
    (0xFB, 0x14): "visit_ref_test_non_null",
    (0xFB, 0x15): "visit_ref_test_nullable",
    (0xFB, 0x16): "visit_ref_cast_non_null",
    (0xFB, 0x17): "visit_ref_cast_nullable",
}


def _ours(key: tuple[int, int]) -> tuple[str, str]:
    op = OPCODES[key]
    visit = NAME_EXCEPTIONS.get(key, "visit_" + op.name.replace(".", "_"))
    return visit, features.PROPOSAL_NAMES[op.proposal][0]


def test_every_modelled_wasmparser_operator_is_in_the_table() -> None:
    missing = [f"0x{p:02x} 0x{c:x} {visit} ({proposal})"
               for (p, c), (visit, proposal) in sorted(THEIRS.items())
               if proposal not in UNMODELLED and (p, c) not in OPCODES]  # fmt: skip
    assert not missing


def test_no_operator_of_ours_is_unknown_to_wasmparser() -> None:
    assert not [key for key in OPCODES if key not in THEIRS]


@pytest.mark.parametrize("key", sorted(OPCODES), ids=lambda k: f"{k[0]:02x}-{k[1]:x}")
def test_name_and_proposal_agree(key: tuple[int, int]) -> None:
    visit, proposal = THEIRS[key]
    expected = PROPOSAL_EXCEPTIONS.get(key, proposal.replace("_", "-"))
    assert _ours(key) == (visit, expected)


RELAXED = ["i8x16.relaxed_swizzle", "i32x4.relaxed_trunc_f32x4_s", "i32x4.relaxed_trunc_f32x4_u",
           "i32x4.relaxed_trunc_f64x2_s_zero", "i32x4.relaxed_trunc_f64x2_u_zero",
           "f32x4.relaxed_madd", "f32x4.relaxed_nmadd", "f64x2.relaxed_madd",
           "f64x2.relaxed_nmadd", "i8x16.relaxed_laneselect", "i16x8.relaxed_laneselect",
           "i32x4.relaxed_laneselect", "i64x2.relaxed_laneselect", "f32x4.relaxed_min",
           "f32x4.relaxed_max", "f64x2.relaxed_min", "f64x2.relaxed_max",
           "i16x8.relaxed_q15mulr_s", "i16x8.relaxed_dot_i8x16_i7x16_s",
           "i32x4.relaxed_dot_i8x16_i7x16_add_s"]  # fmt: skip


def test_relaxed_simd_opcodes_are_exact() -> None:
    table = {(op.prefix, op.code): op.name for op in OPCODES.values()
             if op.proposal is Proposal.RELAXED_SIMD}  # fmt: skip
    assert table == {(0xFD, 0x100 + i): name for i, name in enumerate(RELAXED)}


LLVM = SNAPSHOT["llvm_target_features"]


@pytest.mark.parametrize("name", LLVM["subtarget_features"])
def test_every_llvm_feature_name_is_known(name: str) -> None:
    known = features.BY_TARGET_FEATURE.keys() | features.TARGET_FEATURES_WITHOUT_PROPOSAL.keys()
    assert name in known


def test_every_proposal_name_is_a_wasm_tools_feature(tmp_path: Path) -> None:
    """Each --features name we pass is one the pinned wasm-tools accepts."""
    empty = tmp_path / "empty.wasm"
    empty.write_bytes(b"\0asm\x01\0\0\0")
    every = features.wasm_tools_features(Proposal(sum(p.value for p in Proposal)))
    done = subprocess.run([str(executable()), "validate", f"--features={every}", str(empty)],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
