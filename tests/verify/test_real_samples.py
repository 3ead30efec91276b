"""Real-toolchain samples (pinned rustc 1.96) through the whole inspector."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.verify.rustsamples import compile_sample
from verify.inspect import inspect_artifact

# The samples are not the runtime (no tr_worker_main, a stray tr_dot is allowed by prefix),
# so each lane lists the findings its sample is expected to fail, if any.
SAMPLE_EXPECTED: list[tuple[str, str, set[str]]] = [
    ("scalar-wasm32", "scalar-wasm32", set()),
    ("simd128-wasm32", "simd128-wasm32", set()),
    ("x86_64-unknown-linux-gnu", "x86_64-unknown-linux-gnu", set()),
    ("aarch64-unknown-linux-gnu", "aarch64-unknown-linux-gnu", set()),
    ("x86_64-pc-windows-gnu", "x86_64-pc-windows-gnu", set()),
    ("x86_64-debug", "x86_64-unknown-linux-gnu", {"native.debug.absent", "native.paths.build"}),
    # its target_features section claims simd128, beyond the scalar lane
    ("simd128-wasm32", "scalar-wasm32", {"wasm.proposals.allowed", "wasm.tools.valid",
                                         "wasm.target_features.agree"}),
    ("scalar-wasm32", "simd128-wasm32",
     {"wasm.proposals.required", "wasm.tools.needs_lane"}),
    ("x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu", {"native.format",
     "native.libraries", "native.paths.build"}),
]  # fmt: skip


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("samples")
    return {name: compile_sample(name, folder) for name in {s for s, _, _ in SAMPLE_EXPECTED}}


@pytest.mark.slow
@pytest.mark.parametrize(("sample", "lane", "expected"), SAMPLE_EXPECTED,
                         ids=[f"{s}-as-{lane}" for s, lane, _ in SAMPLE_EXPECTED])  # fmt: skip
def test_sample(samples: dict[str, Path], sample: str, lane: str, expected: set[str]) -> None:
    report = inspect_artifact(samples[sample], lane)
    failed = {f.id for f in report.findings if not f.ok}
    assert failed == expected, [f for f in report.findings if not f.ok]
    if report.wasm is not None:  # wasm-tools agrees with what we inferred
        assert any(f.id == "wasm.tools.agree" and f.ok for f in report.findings)
