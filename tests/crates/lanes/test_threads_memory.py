"""The threads lane's shared memory sized from the memory plan (issue 33 item 3).

The module imports its memory with a small declared minimum (what it needs without a model) and
the wasm32 address space as its maximum (manifests/lanes.toml `shared_memory`, the driver's
--initial-memory/--max-memory); verify checks both limits from the final bytes, and an import
fixed at the old 256 MiB again is refused. The host creates the memory itself, initial ==
maximum, at the plan's peak: the loader admits the model with a planner instance of the same
module before that memory exists (tests/crates/lanes/sized.mjs). In exactly that memory a load,
a prefill at the model's largest context and decode run; one page less is a typed OutOfMemory
(the runtime refuses the session before allocating it), never a trap.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pipeline.tree.lanes import load_lanes
from tests.crates.lanes.conftest import Drive
from tests.verify.wasmbuild import uleb
from verify.inspect import inspect_artifact
from verify.wasm.inventory import inventory_bytes

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
THREADS = "simd128-threads-wasm32"
PAGE = 65536
OUT_OF_MEMORY = 9  # TrResult (crates/core/src/result.rs)
DECODE = 8  # tokens sized.mjs decodes after filling the context

pytestmark = pytest.mark.integration


def _limits() -> tuple[int, int]:
    """lanes.toml's declared limits of the threads lane's import, in pages."""
    lane = load_lanes(REPO / "manifests" / "lanes.toml").select([THREADS])[0]
    assert lane.shared_memory is not None
    return lane.shared_memory.min_bytes // PAGE, lane.shared_memory.max_bytes // PAGE


def _read_uleb(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        value, shift, at = value | (byte & 0x7F) << shift, shift + 7, at + 1
        if not byte & 0x80:
            return value, at


def _with_memory_limits(module: bytes, minimum: int, maximum: int) -> bytes:
    """`module` with its one import (env.memory, shared) declaring other limits: the import
    section rewritten, its size re-encoded; every other byte as built."""
    at = 8
    while at < len(module):
        section = module[at]
        size, start = _read_uleb(module, at + 1)
        if section == 2:
            count, entry = _read_uleb(module, start)
            assert count == 1, "the threads lane imports its memory alone"
            for _ in range(2):  # module and field names
                length, entry = _read_uleb(module, entry)
                entry += length
            assert module[entry] == 0x02 and module[entry + 1] & 0x03 == 0x03  # shared, max
            limits = bytes([module[entry + 1]]) + uleb(minimum) + uleb(maximum)
            rebuilt = module[start:entry + 1] + limits  # fmt: skip
            return module[:at] + bytes([2]) + uleb(len(rebuilt)) + rebuilt + module[start + size :]
        at = start + size
    raise AssertionError("no import section")


def test_the_import_declares_the_lanes_minimum_and_the_wasm32_maximum(
    wasm_lanes: dict[str, Path],
) -> None:
    memory = inventory_bytes(wasm_lanes[THREADS].read_bytes()).memories[0]
    assert (memory.imported, memory.limits.shared) == (True, True)
    assert (memory.limits.minimum, memory.limits.maximum) == _limits() == (96, 65536)
    report = inspect_artifact(wasm_lanes[THREADS], THREADS)
    assert [f.id for f in report.findings if not f.ok] == []


@pytest.mark.parametrize(
    ("minimum", "maximum"),
    [(4096, 4096), (96, 4096), (4096, 65536)],
    ids=["fixed-at-256-MiB", "maximum-256-MiB", "minimum-256-MiB"],
)
def test_an_import_sized_otherwise_is_refused_by_verify(
    wasm_lanes: dict[str, Path], tmp_path: Path, minimum: int, maximum: int
) -> None:
    planted = tmp_path / "threads.wasm"
    planted.write_bytes(_with_memory_limits(wasm_lanes[THREADS].read_bytes(), minimum, maximum))
    memory = inventory_bytes(planted.read_bytes()).memories[0]
    assert (memory.limits.minimum, memory.limits.maximum) == (minimum, maximum)
    report = inspect_artifact(planted, THREADS)
    assert [f.id for f in report.findings if not f.ok] == ["wasm.memory.limits"]


def _planned(plan: dict[str, Any]) -> int:
    """The bytes of the memory the host creates for a plan: page-rounded, never below the
    module's declared minimum."""
    pages: int = max(_limits()[0], -(-plan["peak"] // PAGE))
    return pages * PAGE


@pytest.mark.parametrize("workers", [1, 2])
def test_the_loader_creates_the_plans_memory_and_the_largest_context_runs_in_it(
    wasm_lanes: dict[str, Path], small_model: Path, drive: Drive, workers: int
) -> None:
    doc = drive("loader", wasm_lanes[THREADS], workers, small_model, script=HERE / "sized.mjs")
    plan = doc["plan"]
    assert plan["workers"] == workers and plan["parts"]["load_copy"] == 0
    assert doc["memoryBytes"] == doc["memoryAfter"] == _planned(plan) > _limits()[0] * PAGE
    assert doc["context"] == 256, "the `small` model's largest context"
    assert doc["selfTest"] == 0 and doc["workerFailures"] == []
    run = doc["run"]
    assert (run["committed"], run["cancelled"]) == (doc["context"] - DECODE, False)
    assert 1 <= len(run["tokens"]) <= DECODE
    assert doc["heap"]["measured"] <= plan["peak"] <= doc["memoryBytes"]


@pytest.mark.parametrize("pages_less", [0, 1], ids=["exactly-the-plan", "one-page-less"])
def test_one_page_under_the_plan_is_a_typed_out_of_memory_not_a_trap(
    wasm_lanes: dict[str, Path], small_model: Path, drive: Drive, pages_less: int
) -> None:
    doc = drive("short", wasm_lanes[THREADS], 2, small_model, pages_less, script=HERE / "sized.mjs")
    assert doc["planned"] == _planned({"peak": doc["plan"]})
    assert doc["memoryBytes"] == doc["planned"] - pages_less * PAGE
    assert doc["loaded"] is True, doc.get("error")
    if pages_less == 0:
        assert "error" not in doc, doc["error"]
        assert doc["run"]["committed"] == doc["context"] - DECODE
    else:
        error = doc["error"]
        assert (error["name"], error["code"]) == ("LoaderError", "RuntimeError"), error
        assert error["detail"]["code"] == OUT_OF_MEMORY, error
        assert "OutOfMemory" in error["message"], error
    # no trap: the leader still answers, and no worker failed
    assert (doc["lane"], doc["workerFailures"]) == (2, [])
