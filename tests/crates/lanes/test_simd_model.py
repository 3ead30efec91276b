"""The simd128 kernels bit for bit against the documented reduction trees (CONTRACT.md §8,
restated in tests/crates/runtime/simd128ref.py), on golden inputs off the k/256 grid
(tests/crates/lanes/simd_cases.py): every vectorised kernel, every tail length. The tolerance
tier of test_kernels.py says a lane is close to the oracle; this says it is exactly the documented
lane order, so a changed association order fails even when it stays inside the tier."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.crates.lanes.conftest import Drive
from tests.crates.lanes.simd_cases import ORACLE, SIMD_MODEL, cases, expected_bits
from tests.crates.runtime import simd128ref
from tests.crates.runtime.f32ref import to_bits

CASES = cases()
REDUCTIONS = ["q8_matvec", "q4_matvec", "f32_matvec", "rmsnorm", "attention"]
# the kernel harness built with each SIMD lane's target features (the relaxed lane's f32
# kernels are the simd128 ones: the same trees, no relaxed instruction)
SIMD_LANES = ["simd128-wasm32", "simd128-threads-wasm32", "relaxed-simd128-wasm32"]


def test_every_vectorised_kernel_has_cases() -> None:
    assert {c.operator for c in CASES} == set(SIMD_MODEL) == set(ORACLE)


@pytest.mark.parametrize("operator", REDUCTIONS, ids=REDUCTIONS)
def test_inputs_tell_the_documented_tree_from_other_orders(operator: str) -> None:
    """Off the grid: the documented tree, the sequential lane reduction and the scalar
    left-to-right order give different bits on some case of each reduction kernel."""
    mine = [c for c in CASES if c.operator == operator]
    documented = [expected_bits(c) for c in mine]
    sequential = [expected_bits(c, simd128ref.reduce_sequential) for c in mine]
    oracle = [[to_bits(v) for v in ORACLE[c.operator](c)] for c in mine]
    assert any(d != s for d, s in zip(documented, sequential, strict=True))
    assert any(d != o for d, o in zip(documented, oracle, strict=True))


@pytest.mark.integration
@pytest.mark.parametrize("lane_id", SIMD_LANES, ids=SIMD_LANES)
def test_simd_kernels_are_bit_exact_to_the_documented_tree(
    lane_id: str, harness: Callable[[str], Path], drive: Drive, tmp_path: Path
) -> None:
    doc_path = tmp_path / "cases.json"
    doc_path.write_text(json.dumps([c.document() for c in CASES]))
    doc = drive("cases", harness(lane_id), doc_path)
    assert doc["simd"] is True
    got = {c["id"]: c["got"] for c in doc["cases"]}
    assert set(got) == {c.id for c in CASES}
    failures = []
    for case in CASES:
        want = expected_bits(case)
        result = got[case.id]
        if result["code"] != 0:
            failures.append(f"{case.id}: code {result['code']}")
        elif result["bits"] != want:
            first = next(
                i for i, (g, w) in enumerate(zip(result["bits"], want, strict=True)) if g != w
            )
            failures.append(
                f"{case.id}[{first}]: lane {result['bits'][first]} vs documented tree {want[first]}"
            )
    assert not failures, f"{len(failures)} cases differ:\n" + "\n".join(failures[:40])
