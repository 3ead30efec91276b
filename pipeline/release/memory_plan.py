"""The release's memory plan (memory-plan.json, `tinyrustlm.memory-plan.v1`): every Wasm lane's
plan for the deterministic models, asked of the final artifacts themselves.

What it covers is data (memory_plan.json beside this file): the models (a `PRESETS` name and
a seed: `pack` gives the same bytes everywhere), the contexts (each one the model admits, plus
its maximum) and the threads lanes' worker counts (the loader's default). Each artifact answers
in wasmtime in a process of its own (`plan_wasmtime`: the loader's planner and admission,
`tr_model_prefix_bytes` then `tr_plan_header` loaded in place), so the document says what the
shipped bytes plan, never what the Python side believes. The document is a pure function of
the artifacts, the models and that file: a re-release or a rebuild makes the same bytes.
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ConfigDict, Field, ValidationError

from pipeline.errors import TabledError
from pipeline.io import process
from pipeline.io.inputs import parse_output
from pipeline.lanebuild.built import Built
from pipeline.modelpack import PRESETS, pack
from pipeline.tree.lanes import Lane
from verify.canonical import parse_json
from verify.formats.base import StrictFrozen, strict_model
from verify.formats.memory_plan import (
    PLAN_PARTS,
    LanePlan,
    MemoryPlanDocument,
    PlannedModel,
    memory_plan_bytes,
)
from verify.inputs import read_regular_file

COVERAGE = Path(__file__).resolve().parent / "memory_plan.json"
PLAN_TIMEOUT_SECONDS = 600
METHOD = (
    "each Wasm artifact instantiated in wasmtime as js/loader.js's planner (a module that "
    "imports a shared memory over one of its declared minimum, no worker started), "
    "tr_model_prefix_bytes over the model's first 64 bytes, then tr_plan_header over its "
    "header and directory and the file's length, loaded in place (no load copy), at each "
    "context and worker count"
)


class MemoryPlanFailed(TabledError):
    """An artifact could not answer for its memory plan."""

    table: ClassVar[Mapping[str, str]] = {
        "release.memory-plan": (
            "run `python -m pipeline.release.plan_wasmtime` on the artifact named in `where` "
            "to see what wasmtime says"
        ),
        "release.memory-plan-coverage": (
            "fix pipeline/release/memory_plan.json: models are PRESETS names with a seed, "
            "contexts positive, worker counts 1..8"
        ),
    }


class ModelSeed(StrictFrozen):
    preset: str
    seed: int = Field(ge=0, lt=1 << 32)


class Coverage(StrictFrozen):
    """memory_plan.json: what every release's memory plan covers."""

    model_config = ConfigDict(populate_by_name=True)

    comment: str = Field("", alias="_comment")
    models: list[ModelSeed] = Field(min_length=1)
    contexts: list[int] = Field(min_length=1)
    threads_workers: list[int] = Field(min_length=1)


def load_coverage(path: Path = COVERAGE) -> Coverage:
    try:
        coverage = strict_model(Coverage, parse_json(read_regular_file(path, "json"), str(path)))
    except ValidationError as exc:
        raise MemoryPlanFailed(
            f"not what the release plans: {exc.errors()[0]['msg']}",
            where=str(path),
            error_id="release.memory-plan-coverage",
        ) from exc
    unknown = [m.preset for m in coverage.models if m.preset not in PRESETS]
    bad = [c for c in coverage.contexts if c < 1] + [
        w for w in coverage.threads_workers if not 1 <= w <= 8
    ]
    if unknown or bad:
        raise MemoryPlanFailed(
            f"unknown presets {unknown}, out-of-range values {bad}",
            where=str(path),
            error_id="release.memory-plan-coverage",
        )
    return coverage


def contexts_of(coverage: Sequence[int], max_context: int) -> list[int]:
    """The contexts a model admits among `coverage`, and its maximum, ascending."""
    return sorted({c for c in (*coverage, max_context) if c <= max_context})


@dataclass(frozen=True)
class LaneAsk:
    """How to instantiate one lane's artifact, and which worker counts to plan for."""

    lane: str
    artifact: Path
    simd: bool
    relaxed: bool
    workers: tuple[int, ...]


def lane_ask(lane: Lane, artifact: Path, threads_workers: Sequence[int]) -> LaneAsk:
    """From the lane's entry: SIMD and relaxed SIMD as it expects them, and a lane that
    imports a shared memory (the threads lanes) planned with the loader's worker counts."""
    features = set(lane.expected_features)
    threads = lane.shared_memory is not None
    return LaneAsk(
        lane=lane.id,
        artifact=artifact,
        simd="simd128" in features,
        relaxed="relaxed-simd" in features,
        workers=tuple(threads_workers) if threads else (0,),
    )


Runner = Callable[[LaneAsk, Path, Sequence[tuple[int, int]], Path], dict[str, Any]]


def run_planner(
    ask: LaneAsk, model: Path, pairs: Sequence[tuple[int, int]], cwd: Path
) -> dict[str, Any]:
    """`plan_wasmtime` on one artifact for every (workers, context) of `pairs`."""
    argv = [
        sys.executable,
        "-m",
        "pipeline.release.plan_wasmtime",
        str(ask.artifact),
        str(model),
        "--simd",
        str(int(ask.simd)),
        "--relaxed",
        str(int(ask.relaxed)),
    ]
    for workers, context in pairs:
        argv += ["--ask", f"{workers}:{context}"]
    done = process.run(argv, cwd=cwd, timeout=PLAN_TIMEOUT_SECONDS)
    if done.returncode != 0:
        raise MemoryPlanFailed(
            f"{ask.lane}: the planner exited {done.returncode}: {done.stderr.strip()[-600:]}",
            where=ask.artifact.name,
            error_id="release.memory-plan",
        )
    doc: dict[str, Any] = parse_output(done.stdout, "plan_wasmtime output")
    return doc


def lane_plan(ask: LaneAsk, sha256: str, model: str, answer: Mapping[str, Any]) -> LanePlan:
    """One record of `plan_wasmtime` as the document's plan (names from `PLAN_PARTS`)."""
    parts = [int(b) for b in answer["parts"]]
    if len(parts) != len(PLAN_PARTS):
        raise MemoryPlanFailed(
            f"{ask.lane}: tr_plan_header wrote {len(parts)} parts, the document has "
            f"{len(PLAN_PARTS)}",
            where=ask.artifact.name,
            error_id="release.memory-plan",
        )
    peaks = [int(answer[k]) for k in ("peak_load", "peak_prefill", "steady_decode")]
    try:
        return LanePlan(
            lane=ask.lane,
            artifact_sha256=sha256,
            model=model,
            workers=int(answer["workers"]),
            context=int(answer["context"]),
            parts=[{"name": n, "bytes": b} for n, b in zip(PLAN_PARTS, parts, strict=True)],
            peak_load=peaks[0],
            peak_prefill=peaks[1],
            steady_decode=peaks[2],
            peak=max(peaks),
            largest=PLAN_PARTS[int(answer["largest"])],
        )
    except (ValidationError, IndexError) as exc:
        raise MemoryPlanFailed(
            f"{ask.lane}: the artifact's plan does not add up: {exc}",
            where=ask.artifact.name,
            error_id="release.memory-plan",
        ) from exc


def memory_plan_document(
    built: Built, coverage: Coverage | None = None, runner: Runner = run_planner
) -> bytes:
    """memory-plan.json of `built`'s Wasm lanes (in the build index's order)."""
    coverage = coverage or load_coverage()
    tree, index = built.tree, built.index
    lanes = {lane.id: lane for lane in tree.lanes.lane}
    asks = [
        lane_ask(lanes[e.lane], built.artifacts[e.lane], coverage.threads_workers)
        for e in index.lanes
        if e.kind == "wasm"
    ]
    digests = {e.lane: e.sha256 for e in index.lanes}
    models: list[PlannedModel] = []
    plans: list[LanePlan] = []
    with tempfile.TemporaryDirectory(prefix="tinyrustlm-memory-plan-") as tmp:
        for choice in coverage.models:
            preset = PRESETS[choice.preset]
            data = pack(preset, choice.seed)
            path = Path(tmp) / f"{preset.name}.trlm"
            path.write_bytes(data)
            models.append(
                PlannedModel(
                    preset=preset.name,
                    seed=choice.seed,
                    sha256=hashlib.sha256(data).hexdigest(),
                    file_bytes=len(data),
                    max_context=preset.max_context,
                    tier=preset.tier,
                )
            )
            contexts = contexts_of(coverage.contexts, preset.max_context)
            for ask in asks:
                pairs = [(w, c) for w in ask.workers for c in contexts]
                answer = runner(ask, path, pairs, tree.root)
                plans += [
                    lane_plan(ask, digests[ask.lane], preset.name, a) for a in answer["plans"]
                ]
    document = MemoryPlanDocument(
        release_version=tree.version,
        source_revision=index.source_revision,
        method=METHOD,
        models=models,
        plans=plans,
    )
    return memory_plan_bytes(document)


def plan_summary(data: bytes) -> str:
    """The step's detail: how many plans, and the largest peak."""
    doc = MemoryPlanDocument.model_validate_json(data, strict=True)
    top = max(doc.plans, key=lambda p: p.peak)
    return (
        f"memory plan: {len(doc.plans)} plans of {len(doc.lanes())} wasm lane(s) x "
        f"{len(doc.models)} model(s); largest peak {top.peak / (1 << 20):.1f} MiB "
        f"({top.lane}, {top.model}, context {top.context})"
    )
