"""choice.js in node, on the shipped lanes' manifest promises (pipeline/documents/assemble.py
`lane_contracts`, from the lane policy): the choice order with and without cross-origin
isolation, `relaxedSimd: 'off'`, an engine whose relaxed-simd probe does not validate (WebKit),
and the semantic probe's finding (this node's V8 runs the relaxed dot: a named semantics)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pipeline.documents.assemble import lane_contracts
from pipeline.js.probes import DOT_SEMANTICS
from pipeline.toolchain import nodejs
from verify.policy import load_wasm_policies

REPO_ROOT = Path(__file__).resolve().parents[3]
CHOICE = REPO_ROOT / "crates/wasm/js/choice.js"
RELAXED_THREADS = "relaxed-simd128-threads-wasm32"
RELAXED = "relaxed-simd128-wasm32"
THREADS = "simd128-threads-wasm32"
SIMD = "simd128-wasm32"
SCALAR = "scalar-wasm32"
ALL = ["bulk-memory", "exceptions", "memory64", "relaxed-simd", "simd128", "threads"]


def _artifacts() -> list[dict[str, Any]]:
    """The manifest's artifacts in lane-policy order (never the choice order)."""
    contracts = lane_contracts(sorted(load_wasm_policies()))
    return [
        {"id": lane, "required_features": list(c.required_features),
         "requires_cross_origin_isolation": c.requires_cross_origin_isolation}
        for lane, c in contracts.items()
    ]  # fmt: skip


def _node(script: str) -> Any:
    done = subprocess.run(
        [str(nodejs.executable()), "--input-type=module", "-e", script],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _choose(validating: list[str], options: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(candidate ids best first, skipped 'id code' rows)."""
    manifest = {"artifacts": _artifacts(), "disabled_lanes": []}
    probes = {p: {"validates": p in validating} for p in ALL}
    script = (
        f"import {{ chooseLanes }} from {json.dumps(CHOICE.as_uri())};"
        f"const r = chooseLanes({json.dumps(manifest)}, {json.dumps(probes)},"
        f" {{ failed: {{}}, ...{json.dumps(options)} }});"
        "console.log(JSON.stringify([r.candidates.map((a) => a.id),"
        " r.attempts.map((a) => `${a.artifact_id} ${a.error_code}`)]));"
    )
    candidates, skipped = _node(script)
    return candidates, skipped


@pytest.mark.parametrize(
    ("name", "validating", "options", "order", "skipped"),
    [
        ("isolated", ALL, {"isolation": True},
         [RELAXED_THREADS, THREADS, RELAXED, SIMD, SCALAR], []),
        ("not isolated", ALL, {"isolation": False}, [RELAXED, SIMD, SCALAR],
         [f"{RELAXED_THREADS} NotIsolated", f"{THREADS} NotIsolated"]),
        ("relaxedSimd off, isolated", ALL, {"isolation": True, "relaxedSimd": "off"},
         [THREADS, SIMD, SCALAR],
         [f"{RELAXED_THREADS} RelaxedSimdOff", f"{RELAXED} RelaxedSimdOff"]),
        ("relaxedSimd auto is the default", ALL, {"isolation": False, "relaxedSimd": "auto"},
         [RELAXED, SIMD, SCALAR],
         [f"{RELAXED_THREADS} NotIsolated", f"{THREADS} NotIsolated"]),
        # WebKit (MiniBrowser): simd128 and threads, no relaxed SIMD
        ("no relaxed-simd probe, isolated", [p for p in ALL if p != "relaxed-simd"],
         {"isolation": True}, [THREADS, SIMD, SCALAR],
         [f"{RELAXED_THREADS} FeatureMissing", f"{RELAXED} FeatureMissing"]),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)  # fmt: skip
def test_choice_order(
    name: str,
    validating: list[str],
    options: dict[str, Any],
    order: list[str],
    skipped: list[str],
) -> None:
    candidates, attempts = _choose(validating, options)
    assert candidates == order
    assert attempts == skipped


def test_the_semantic_probe_names_an_allowed_semantics_in_node() -> None:
    script = (
        f"import {{ runProbes, runSemanticProbes }} from {json.dumps(CHOICE.as_uri())};"
        "const p = await runProbes();"
        "console.log(JSON.stringify([await runSemanticProbes(p),"
        " await runSemanticProbes({ ...p, 'relaxed-simd': { validates: false } })]));"
    )
    found, refused = _node(script)
    assert refused == []  # no relaxed SIMD: nothing run, nothing recorded
    [row] = found
    assert row["instruction"] == "i32x4.relaxed_dot_i8x16_i7x16_add_s"
    assert row["semantics"] in {s.name for s in DOT_SEMANTICS}, row
