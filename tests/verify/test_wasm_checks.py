"""Every wasm check has a passing case (each lane's baseline) and a failing case; each case
fires exactly its expected finding ids and no others (wasm-tools cross-check included)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.verify import wasmbuild as wb
from verify.checks import WASM_CHECKS, WasmFacts, run_wasm_checks
from verify.inspect import inspect_artifact
from verify.policy import load_wasm_policies
from verify.wasm.inventory import inventory_bytes
from verify.wasm.tools import CrossCheck, Verdict

ALL_IDS = set(WASM_CHECKS)
# the threads lane's bound on its memory's declared minimum, in pages (verify/policy/wasm.json)
THREADS_MINIMUM = wb.POLICIES[wb.THREADS_LANE].memory.initial_pages_at_most or 0


def _with(spec: wb.ModuleSpec, **changes: object) -> wb.ModuleSpec:
    return dataclasses.replace(spec, **changes)  # type: ignore[arg-type]


# (case id, lane, module spec maker, finding ids expected to fail)
CASES: list[tuple[str, str, Callable[[], wb.ModuleSpec], set[str]]] = [
    ("scalar-baseline", "scalar-wasm32", wb.scalar_spec, set()),
    ("simd-baseline", "simd128-wasm32", wb.simd_spec, set()),
    ("threads-baseline", "simd128-threads-wasm32", wb.threads_spec, set()),
    ("relaxed-baseline", wb.RELAXED_LANE, wb.relaxed_spec, set()),
    ("relaxed-threads-baseline", wb.RELAXED_THREADS_LANE, wb.relaxed_threads_spec, set()),
    (
        "relaxed-lane-with-an-unlisted-relaxed-op",
        wb.RELAXED_LANE,
        lambda: wb.relaxed_spec("f32x4.relaxed_madd"),
        {"wasm.relaxed.instructions"},
    ),
    (
        "relaxed-lane-without-its-dot",
        wb.RELAXED_LANE,
        lambda: _with(
            wb.relaxed_spec(), code=[wb.V128_OP + wb.relaxed_op("i8x16.relaxed_swizzle")]
        ),
        {"wasm.relaxed.instructions"},
    ),
    (
        "relaxed-dot-in-simd128",  # the instruction the relaxed lanes admit, in a lane without
        "simd128-wasm32",
        lambda: _with(wb.relaxed_spec(), customs=[wb.target_features(("+", "simd128"))]),
        {
            "wasm.proposals.allowed",
            "wasm.relaxed.instructions",
            "wasm.tools.valid",
            "wasm.target_features.agree",
        },
    ),
    (
        "tls-without-init-export",
        "simd128-threads-wasm32",
        lambda: _with(
            wb.threads_spec(),
            start_sets_global=True,
            exports=[e for e in wb.threads_spec().exports if e != "__wasm_init_tls"],
        ),
        # the start function places a TLS block; no other thread could get one of its own
        {"wasm.tls.per_thread", "wasm.exports.required"},
    ),
    (
        "tls-with-its-exports",
        "simd128-threads-wasm32",
        lambda: _with(wb.threads_spec(), start_sets_global=True),
        set(),
    ),
    (
        "v128-op-in-scalar",
        "scalar-wasm32",
        lambda: _with(wb.simd_spec()),
        # target_features claims simd128, beyond the lane
        {"wasm.proposals.allowed", "wasm.tools.valid", "wasm.target_features.agree"},
    ),
    (
        "relaxed-simd-op",
        "simd128-wasm32",
        lambda: _with(
            wb.simd_spec(),
            code=[wb.V128_OP + wb.RELAXED_SIMD_OP],
            customs=[wb.target_features(("+", "simd128"), ("+", "relaxed-simd"))],
        ),
        {
            "wasm.proposals.allowed",
            "wasm.relaxed.instructions",
            "wasm.tools.valid",
            "wasm.target_features.agree",
        },
    ),
    (
        "memory-grow-in-threads",
        "simd128-threads-wasm32",
        lambda: _with(
            wb.threads_spec(), code=[wb.V128_OP + wb.ATOMIC_WAIT_NOTIFY + wb.MEMORY_GROW]
        ),
        {"wasm.memory.growth"},
    ),
    (
        "non-shared-memory-in-threads",
        "simd128-threads-wasm32",
        lambda: wb.threads_spec(shared=False),
        {"wasm.memory.shared"},
    ),
    (
        "shared-memory-fixed-at-256-MiB",  # the lane's memory before it was sized from the plan
        "simd128-threads-wasm32",
        lambda: wb.threads_spec(initial=4096, maximum=4096),
        {"wasm.memory.limits"},
    ),
    (
        "shared-memory-maximum-below-4-GiB",  # a plan above 32 pages could not be created
        "simd128-threads-wasm32",
        lambda: wb.threads_spec(maximum=32),
        {"wasm.memory.limits"},
    ),
    (
        "shared-memory-minimum-too-large",  # every host would reserve it, whatever the model
        "simd128-threads-wasm32",
        lambda: wb.threads_spec(initial=THREADS_MINIMUM + 1),
        {"wasm.memory.limits"},
    ),
    (
        "shared-memory-minimum-at-the-bound",
        "simd128-threads-wasm32",
        lambda: wb.threads_spec(initial=THREADS_MINIMUM),
        set(),
    ),
    (
        "missing-export",
        "scalar-wasm32",
        lambda: _with(wb.scalar_spec(), exports=wb.REQUIRED_EXPORTS[:-1]),
        {"wasm.exports.required"},
    ),
    (
        "unexpected-export",
        "scalar-wasm32",
        lambda: _with(wb.scalar_spec(), exports=[*wb.REQUIRED_EXPORTS, "helper"]),
        {"wasm.exports.allowed"},
    ),
    (
        "memory-not-exported",
        "scalar-wasm32",
        lambda: _with(wb.scalar_spec(), export_memory=False),
        {"wasm.memory.source"},
    ),
    (
        "function-import",
        "scalar-wasm32",
        lambda: _with(wb.scalar_spec(), imports=[wb.name("env") + wb.name("f") + b"\x00\x00"]),
        {"wasm.imports.allowed"},
    ),
    (
        "name-section",
        "scalar-wasm32",
        lambda: _with(
            wb.scalar_spec(), customs=[wb.custom("name", b"\x00" + wb.uleb(4) + wb.name("rt!"))]
        ),
        {"wasm.custom.forbidden"},
    ),
    (
        "debug-section",
        "scalar-wasm32",
        lambda: _with(wb.scalar_spec(), customs=[wb.custom(".debug_info", b"\x00\x01")]),
        {"wasm.debug.absent"},
    ),
    (
        "build-path-string",
        "scalar-wasm32",
        lambda: _with(
            wb.scalar_spec(), data=[wb.active_data(b"/home/alice/tinyrustlm/src/lib.rs")]
        ),
        {"wasm.paths.build"},
    ),
    (
        "remapped-path-string",
        "scalar-wasm32",
        lambda: _with(
            wb.scalar_spec(), data=[wb.active_data(b"/src/tinyrustlm/crates/core/src/lib.rs")]
        ),
        set(),
    ),
    (
        "target-features-disagree",
        "simd128-wasm32",
        lambda: _with(wb.simd_spec(), customs=[wb.target_features(("+", "mutable-globals"))]),
        {"wasm.target_features.agree"},
    ),
    (
        "unknown-target-feature",
        "simd128-wasm32",
        lambda: _with(
            wb.simd_spec(), customs=[wb.target_features(("+", "simd128"), ("+", "simd256"))]
        ),
        {"wasm.target_features.agree"},
    ),
    (
        "fp16-claimed",  # known to LLVM 22, but no proposal we (or wasm-tools) can check
        "simd128-wasm32",
        lambda: _with(
            wb.simd_spec(), customs=[wb.target_features(("+", "simd128"), ("+", "fp16"))]
        ),
        {"wasm.target_features.agree"},
    ),
    (
        "fp16-denied",
        "simd128-wasm32",
        lambda: _with(
            wb.simd_spec(), customs=[wb.target_features(("+", "simd128"), ("-", "fp16"))]
        ),
        set(),
    ),
    (
        "memory.fill-in-threads",  # the lane allows bulk-memory, which holds memory.fill
        "simd128-threads-wasm32",
        lambda: _with(
            wb.threads_spec(),
            code=[wb.V128_OP + wb.ATOMIC_WAIT_NOTIFY + b"\x41\x00\x41\x00\x41\x00\xfc\x0b\x00"],
        ),
        set(),
    ),
    (
        "target-features-missing",
        "simd128-wasm32",
        lambda: _with(wb.simd_spec(), customs=[]),
        {"wasm.target_features.agree"},
    ),
    (
        "simd-lane-without-v128",
        "simd128-wasm32",
        lambda: _with(wb.simd_spec(), code=[b""]),
        {"wasm.proposals.required", "wasm.tools.needs_lane"},
    ),
]


@pytest.mark.parametrize(("lane", "make", "expected"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_case_fires_exactly_its_findings(
    tmp_path: Path, lane: str, make: Callable[[], wb.ModuleSpec], expected: set[str]
) -> None:
    path = tmp_path / "m.wasm"
    path.write_bytes(wb.module(make()))
    report = inspect_artifact(path, lane)
    failed = {f.id for f in report.findings if not f.ok}
    assert failed == expected, [f for f in report.findings if not f.ok]
    assert {f.id for f in report.findings} == ALL_IDS  # cross-check rows ran too
    assert report.ok == (not expected)


NON_RELAXED_LANES = ["scalar-wasm32", "simd128-wasm32", "simd128-threads-wasm32"]


@pytest.mark.parametrize("instruction", sorted(wb.RELAXED_ARITY))
def test_relaxed_instructions_are_admitted_by_name(instruction: str) -> None:
    """Every relaxed instruction: refused in every lane without relaxed SIMD, and in the relaxed
    lanes unless it is the one they name (the instruction alone: no cross-check needed)."""
    for lane, spec in [
        *((lane, wb.BASELINES[lane]()) for lane in NON_RELAXED_LANES),
        (wb.RELAXED_LANE, wb.relaxed_spec(instruction)),
        (wb.RELAXED_THREADS_LANE, wb.relaxed_threads_spec(instruction)),
    ]:
        spec = _with(spec, code=[spec.code[0] + wb.relaxed_op(instruction)])
        findings = {
            f.id: f
            for f in run_wasm_checks(
                WasmFacts(inventory_bytes(wb.module(spec))), load_wasm_policies()[lane]
            )
        }
        admitted = lane.startswith("relaxed") and instruction == wb.RELAXED_DOT
        assert findings["wasm.relaxed.instructions"].ok is admitted, (lane, findings)
        if not admitted:
            assert instruction in findings["wasm.relaxed.instructions"].evidence


def _verdict(valid: bool, feats: str = "mvp") -> Verdict:
    return Verdict(feats, valid, "" if valid else "SIMD support is not enabled")


# The tools.agree check on verdicts wasm-tools could give if our inference were wrong.
AGREE_CASES = [
    ("agrees", CrossCheck(_verdict(True), None, _verdict(True), (("simd", _verdict(False)),)),
     True),
    ("over-inferred", CrossCheck(_verdict(True), None, _verdict(True), (("simd", _verdict(True)),)),
     False),
    ("under-inferred", CrossCheck(_verdict(True), None, _verdict(False), ()), False),
    ("invalid-anyway", CrossCheck(_verdict(False), None, _verdict(False), ()), True),
]  # fmt: skip


@pytest.mark.parametrize(("cross", "ok"), [c[1:] for c in AGREE_CASES],
                         ids=[c[0] for c in AGREE_CASES])  # fmt: skip
def test_tools_agree_judges_verdicts(cross: CrossCheck, ok: bool) -> None:
    inv = inventory_bytes(wb.module(wb.simd_spec()))
    policy = load_wasm_policies()["simd128-wasm32"]
    findings = {f.id: f for f in run_wasm_checks(WasmFacts(inv, cross), policy)}
    assert findings["wasm.tools.agree"].ok is ok


def test_every_check_id_has_a_failing_case() -> None:
    fired = set().union(*(c[3] for c in CASES)) | {"wasm.tools.agree"}
    assert fired == ALL_IDS


def test_without_cross_check_the_tool_rows_are_absent(tmp_path: Path) -> None:
    path = tmp_path / "m.wasm"
    path.write_bytes(wb.module(wb.scalar_spec()))
    report = inspect_artifact(path, "scalar-wasm32", cross_check=False)
    assert {f.id for f in report.findings} == {i for i in ALL_IDS if not i.startswith("wasm.tools")}
    assert report.wasm is not None and not report.wasm.cross_checked
