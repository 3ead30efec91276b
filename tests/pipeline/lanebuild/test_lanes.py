"""manifests/lanes.toml: the committed file is valid; every kind of breakage is named."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.tree.lanes import LanesError, load_lanes

REPO = Path(__file__).resolve().parents[3]
LANES = REPO / "manifests" / "lanes.toml"
EIGHT = [
    "scalar-wasm32",
    "simd128-wasm32",
    "simd128-threads-wasm32",
    "relaxed-simd128-wasm32",
    "relaxed-simd128-threads-wasm32",
    "x86_64-unknown-linux-gnu",
    "aarch64-unknown-linux-gnu",
    "x86_64-pc-windows-gnu",
]


def test_the_eight_lanes_of_the_design() -> None:
    lanes = load_lanes(LANES)
    assert sorted(lane.id for lane in lanes.lane) == sorted(EIGHT)
    threads = lanes.select(["simd128-threads-wasm32"])[0]
    assert threads.shared_memory is not None
    assert threads.shared_memory.max_bytes == 1 << 32  # any plan wasm32 can address
    # the relaxed lanes: the simd128 lanes' flags and memory, plus relaxed-simd
    simd, relaxed = lanes.select(["simd128-wasm32", "relaxed-simd128-wasm32"])
    relaxed_threads = lanes.select(["relaxed-simd128-threads-wasm32"])[0]
    for plain, lane in ((simd, relaxed), (threads, relaxed_threads)):
        assert lane.expected_features == [
            *plain.expected_features[:1],
            "relaxed-simd",
            *plain.expected_features[1:],
        ]
        assert lane.link_args == plain.link_args and lane.env == plain.env
        assert lane.shared_memory == plain.shared_memory
    scalar = lanes.select(["scalar-wasm32"])[0]
    assert scalar.rustflags == ["-C", "target-cpu=mvp", "-C", "strip=debuginfo"]
    assert scalar.expected_features == []


BROKEN = {
    "not-toml": (lambda t: t + "\n[[lane]\n", "not valid TOML"),
    "missing-field": (
        lambda t: t.replace('package = "tinyrustlm-wasm"\n', "", 1),
        "field 'lane.0(id=scalar-wasm32).package'",
    ),
    "native-cpu": (
        lambda t: t.replace('"target-cpu=x86-64"', '"target-cpu=native"', 1),
        "target-cpu=native is never allowed",
    ),
    "duplicate-id": (
        lambda t: t.replace('id = "simd128-wasm32"', 'id = "scalar-wasm32"'),
        "duplicate lane id(s): scalar-wasm32",
    ),
    "relative-linker": (lambda t: t.replace('"/usr/bin/gcc"', '"gcc"'), "linker"),
    "unknown-key": (lambda t: t.replace('kind = "wasm"', 'kind = "wasm"\nopt = 3', 1), "opt"),
    "shared-memory-over-4-GiB": (
        lambda t: t.replace("max_bytes = 4294967296", "max_bytes = 4295032832"),
        "lane.2(id=simd128-threads-wasm32).shared_memory.max_bytes",
    ),
    "shared-memory-part-page": (
        lambda t: re.sub(r"min_bytes = (\d+)", lambda m: f"min_bytes = {int(m[1]) + 1}", t),
        "whole numbers of 64 KiB pages",
    ),
}


@pytest.mark.parametrize("case", BROKEN.values(), ids=BROKEN.keys())
def test_broken_lanes_file_is_a_clear_error(case: tuple[object, str], tmp_path: Path) -> None:
    mutate, expected = case
    text = LANES.read_text(encoding="utf-8")
    broken = mutate(text)  # type: ignore[operator]
    assert broken != text
    path = tmp_path / "lanes.toml"
    path.write_text(broken, encoding="utf-8")
    with pytest.raises(LanesError) as info:
        load_lanes(path)
    assert expected in info.value.diagnostics()
    assert str(path) in info.value.diagnostics()


def test_unknown_lane_on_the_command_line_names_the_known_ones() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "build", "--lane", "riscv64"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert done.returncode == 3
    assert "unknown lane(s): riscv64" in done.stderr
    assert "scalar-wasm32" in done.stderr
    assert "Traceback" not in done.stderr
