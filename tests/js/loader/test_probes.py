"""The loader's probes: generated from the committed .wat sources by the pinned wasm-tools,
each validating where its feature is (checked in the project's node 24, whose V8 has simd128,
threads, bulk memory, exceptions, memory64 and relaxed SIMD)."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

import pytest

from pipeline.js.probes import OUTPUT, SOURCE_DIR, generate, read_probes
from pipeline.toolchain import nodejs

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_committed_probes_equal_a_fresh_generation() -> None:
    assert (REPO_ROOT / OUTPUT).read_bytes() == generate(REPO_ROOT)


def test_every_probe_hash_is_the_hash_of_its_bytes() -> None:
    text = (REPO_ROOT / OUTPUT).read_text()
    row = r"sha256: '([0-9a-f]{64})',\n    bytes: Object.freeze\(\[([0-9, ]+)\]\)"
    rows = re.findall(row, text)
    assert len(rows) == len(list((REPO_ROOT / SOURCE_DIR).glob("*.wat")))
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
