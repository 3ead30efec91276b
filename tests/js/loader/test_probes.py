"""The loader's probes: generated from the committed .wat sources by the pinned wasm-tools,
each validating where its feature is (checked in the project's node 24, whose V8 has simd128,
threads, bulk memory, exceptions, memory64 and relaxed SIMD)."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from pipeline.js.probes import (
    DOT_A,
    DOT_B,
    DOT_C,
    OUTPUT,
    SOURCE_DIR,
    admitted_relaxed,
    dot_variants,
    generate,
    read_probes,
    semantic_probes,
)
from pipeline.toolchain import nodejs
from tests.crates.runtime import relaxedref
from verify.wasm.inventory import inventory_bytes

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_committed_probes_equal_a_fresh_generation() -> None:
    assert (REPO_ROOT / OUTPUT).read_bytes() == generate(REPO_ROOT)


def test_every_probe_hash_is_the_hash_of_its_bytes() -> None:
    text = (REPO_ROOT / OUTPUT).read_text()
    row = r"sha256: '([0-9a-f]{64})',\n    bytes: Object.freeze\(\[([0-9, ]+)\]\)"
    rows = re.findall(row, text)
    # the .wat files, the generated relaxed-simd probe and the semantic probe
    assert len(rows) == len(list((REPO_ROOT / SOURCE_DIR).glob("*.wat"))) + 2
    for sha, data in rows:
        assert hashlib.sha256(bytes(int(b) for b in data.split(", "))).hexdigest() == sha


@pytest.mark.parametrize(
    ("probe", "validates"),
    # the project's node (24, V8 13.6: requirements.lock) has shipped memory64 and relaxed
    # SIMD, with no flag to turn them off; node 20 had neither
    [
        ("simd128", True),
        ("threads", True),
        ("bulk-memory", True),
        ("exceptions", True),
        ("memory64", True),
        ("relaxed-simd", True),
    ],
    ids=lambda v: str(v),
)
def test_probe_validates_only_with_its_feature_in_node(probe: str, validates: bool) -> None:
    script = (
        f"import {{ PROBES }} from {json.dumps((REPO_ROOT / OUTPUT).as_uri())};"
        f"const p = PROBES.find((x) => x.id === {json.dumps(probe)});"
        "console.log(WebAssembly.validate(new Uint8Array(p.bytes)));"
    )
    done = subprocess.run(
        [str(nodejs.executable()), "--input-type=module", "-e", script],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == str(validates).lower()


def test_a_probe_source_must_name_itself(tmp_path: Path) -> None:
    from pipeline.errors import PipelineError

    (tmp_path / SOURCE_DIR).mkdir(parents=True)
    (tmp_path / SOURCE_DIR / "simd128.wat").write_text(";; probe threads version 1: x\n(module)\n")
    with pytest.raises(PipelineError, match="first line must be"):
        read_probes(tmp_path)


def test_the_relaxed_probe_holds_exactly_the_admitted_relaxed_instructions() -> None:
    """Read back from the probe's bytes by verify's own inventory: every instruction a lane
    admits (verify/policy/wasm.json relaxed_instructions), once, and no other relaxed one."""
    [probe] = [p for p in read_probes(REPO_ROOT) if p.id == "relaxed-simd"]
    held = inventory_bytes(probe.wasm).relaxed_instructions
    assert held == dict.fromkeys(admitted_relaxed(), 1)
    assert held == {"i32x4.relaxed_dot_i8x16_i7x16_add_s": 1}


def test_the_semantic_probe_tells_every_allowed_semantics_apart() -> None:
    """Its result table agrees with the independent model of every semantics
    (tests/crates/runtime/relaxedref.py), and no two semantics give the same lanes."""
    expected = {
        s.name: relaxedref.dot_add(np.array(DOT_A), np.array(DOT_B), np.array(DOT_C), s).tolist()
        for s in relaxedref.SEMANTICS
    }
    assert dot_variants() == expected
    assert len({tuple(v) for v in expected.values()}) == len(expected)
    [semantic] = semantic_probes()
    assert inventory_bytes(semantic.probe.wasm).relaxed_instructions == {
        "i32x4.relaxed_dot_i8x16_i7x16_add_s": 1
    }
