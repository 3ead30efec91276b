"""`release --conformance`: the matrix as a release step between smoke and sign.

It runs on the very files the bundle will hold (the build index's artifacts, the JS host),
so `conformance.json` can be signed with the rest: listed in SHA256SUMS and a subject of the
provenance. Failing rows are recorded in the report; `--conformance-require ENGINES` makes
the release stop when one of those engines has a failing row or no passing one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pipeline.conformance.cli import conformance, report_bytes
from pipeline.conformance.matrix import Options
from pipeline.conformance.subject import NativeLane, Subject, WasmLane
from pipeline.errors import CheckFailed, PipelineError
from pipeline.manifest import artifact_files, js_host_files
from pipeline.release import ReleaseContext, Step, lane_contracts
from verify.formats.conformance import ConformanceReport


def subject_of(ctx: ReleaseContext) -> Subject:
    """The lanes of the release being made, as the bundle will list them."""
    if ctx.index is None or ctx.git is None:
        raise PipelineError("internal: conformance runs after the build", where="release")
    files = artifact_files(ctx.index, ctx.repo_root)
    kinds = {e.lane: e for e in ctx.index.lanes}
    wasm_ids = [f.lane for f in files if kinds[f.lane].kind == "wasm"]
    contracts = lane_contracts(wasm_ids)
    wasm, native = [], []
    for f in files:
        entry = kinds[f.lane]
        if entry.kind == "wasm":
            c = contracts[f.lane]
            wasm.append(WasmLane(f.lane, f.url, f.source, f.sha256,
                                 simd="simd128" in c.required_features,
                                 threads=c.requires_cross_origin_isolation))
        else:
            native.append(NativeLane(f.lane, entry.target, f.source, f.sha256))
    return Subject(ctx.version, ctx.git.revision, tuple(wasm), tuple(native),
                   tuple((j.url, j.source) for j in js_host_files(ctx.repo_root)))


def _isolation(isolated: bool | None) -> str:
    return "" if isolated is None else (" isolated" if isolated else " not isolated")


def unmet(report: ConformanceReport, engines: Sequence[str]) -> list[str]:
    """Why each required engine fails: a failing row, or no passing row."""
    problems = []
    for engine in engines:
        rows = [r for r in report.rows if r.engine == engine]
        failing = [f"{r.lane}{_isolation(r.isolated)}" for r in rows if r.outcome == "fail"]
        if failing:
            problems.append(f"{engine}: failing {', '.join(failing)}")
        elif not any(r.outcome == "pass" for r in rows):
            problems.append(f"{engine}: no passing row")
    return problems


def with_conformance(steps: Sequence[Step], opts: Options,
                     require: Sequence[str] = ()) -> tuple[Step, ...]:
    def run(ctx: ReleaseContext) -> str:
        say = ctx.say
        report = conformance(subject_of(ctx), replace(opts, say=lambda line: say(f"    {line}")))
        problems = unmet(report, require)
        if problems:
            raise CheckFailed(f"conformance: {'; '.join(problems)}", where="conformance matrix",
                              hint="fix the lane, or switch it off with the manifest's "
                              "disabled_lanes")
        ctx.conformance = report_bytes(report)
        failed = sum(r.outcome == "fail" for r in report.rows)
        return f"{len(report.rows)} rows on {len(report.engines())} engines, {failed} failing"

    out: list[Step] = []
    for step in steps:
        out.append(step)
        if step.title == "smoke":
            out.append(Step("conformance", run))
    if len(out) == len(steps):
        raise KeyError("smoke")
    return tuple(out)
