"""The loader's probes: generated from the committed .wat sources by the pinned wasm-tools,
each validating exactly where its feature is (checked in node, whose V8 has simd128, threads,
bulk memory and exceptions but neither memory64 nor relaxed SIMD without flags)."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

import pytest

from pipeline.probes import OUTPUT, SOURCE_DIR, generate, read_probes

REPO_ROOT = Path(__file__).resolve().parents[2]


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
    [("simd128", True), ("threads", True), ("bulk-memory", True), ("exceptions", True),
     ("memory64", False), ("relaxed-simd", False)],
    ids=lambda v: str(v),
)
def test_probe_validates_only_with_its_feature_in_node(probe: str, validates: bool) -> None:
    script = (
        f"import {{ PROBES }} from {json.dumps((REPO_ROOT / OUTPUT).as_uri())};"
        f"const p = PROBES.find((x) => x.id === {json.dumps(probe)});"
        "console.log(WebAssembly.validate(new Uint8Array(p.bytes)));"
    )
    done = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip() == str(validates).lower()


def test_a_probe_source_must_name_itself(tmp_path: Path) -> None:
    from pipeline.errors import PipelineError

    (tmp_path / SOURCE_DIR).mkdir(parents=True)
    (tmp_path / SOURCE_DIR / "simd128.wat").write_text(";; probe threads version 1: x\n(module)\n")
    with pytest.raises(PipelineError, match="first line must be"):
        read_probes(tmp_path)
