"""pipeline/bench.py's arithmetic on made-up measurements (the bench itself is never asserted)."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.bench import TARGETS, summarize, table, weight_bytes_per_token
from pipeline.modelpack import PRESETS, q8_weight_bytes, tensor_plan


def _raw() -> dict[str, Any]:
    shapes = ("w_gate-2816x1024", "stream-16384x4096")
    kernels = {
        "scalar": {s: {"gbps": 2.0, "ms_per_matvec": 1.0, "weight_bytes": 1} for s in shapes},
        "simd128": {s: {"gbps": 11.0, "ms_per_matvec": 1.0, "weight_bytes": 1} for s in shapes},
    }
    runs = [
        {"name": name, "workers": w, "decode_ms_median": 1000 / tps, "tokens_per_s": tps}
        for name, w, tps in [
            ("scalar", 0, 10.0),
            ("simd128", 0, 30.0),
            ("threads-1", 1, 30.0),
            ("threads-2", 2, 54.0),
        ]
    ]
    return {"node": "v20", "kernels": kernels, "bandwidth_gbps": 10.0, "runs": runs}


def test_weight_bytes_read_per_token() -> None:
    plan = tensor_plan(PRESETS["bench"])
    embedding = next(t for t in plan if t.kind == "token_embedding")
    weights = weight_bytes_per_token()
    # every q8 matrix once, except the embedding: one row of it
    assert q8_weight_bytes(PRESETS["bench"]) - embedding.stored_bytes < weights
    assert weights < q8_weight_bytes(PRESETS["bench"])


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("simd128 / scalar decode", 3.0),
        ("threads(2) / threads(1) decode", 1.8),
        ("simd128 / scalar q8 matvec (cache)", 5.5),
        ("threads(2) decode / roofline", 0.54),
    ],
    ids=["decode", "threads", "matvec", "roofline"],
)
def test_targets_are_ratios_of_the_right_rows(target: str, expected: float) -> None:
    doc = summarize(
        _raw(),
        {"name": "native-scalar", "workers": 0, "decode_ms_median": 80.0, "tokens_per_s": 12.5},
        weights=10**8,
    )
    got = {t["target"]: t for t in doc["targets"]}
    assert set(got) == {t.name for t in TARGETS}
    assert got[target]["measured"] == pytest.approx(expected)
    assert got[target]["met"] is (expected >= got[target]["at_least"])
    # roofline = bandwidth / weights; every run gets its share of it
    assert doc["roofline_tokens_per_s"] == pytest.approx(100.0)
    assert all(
        r["roofline_fraction"] == pytest.approx(r["tokens_per_s"] / 100.0) for r in doc["runs"]
    )


def test_table_lists_every_run_and_target() -> None:
    doc = summarize(
        _raw(),
        {"name": "native-scalar", "workers": 0, "decode_ms_median": 80.0, "tokens_per_s": 12.5},
        weights=10**8,
    )
    doc |= {
        "model": {"preset": "bench", "weight_bytes_per_token": 10**8},
        "machine": {"load_average": [0.1] * 6},
    }
    text = table(doc)
    for name in ("scalar", "simd128", "threads-1", "threads-2", "native-scalar"):
        assert f"\n{name} " in text
    for t in TARGETS:
        assert t.name in text
