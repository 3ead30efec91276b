"""`release --conformance`: the matrix runs at the end of step 4 (smoke), before signing.

It runs on the very files the bundle will hold (the build index's artifacts, the JS host),
so `conformance.json` can be signed with the rest: listed in SHA256SUMS and a subject of the
provenance. Failing rows are recorded in the report; `--conformance-require ENGINES` makes
the release stop when one of those engines has a failing row or no passing one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from pipeline.conformance.cli import conformance, report_bytes
from pipeline.conformance.matrix import Options
from pipeline.conformance.subject import NativeLane, Subject, WasmLane
from pipeline.errors import CheckFailed
from pipeline.manifest import JS_SOURCE_DIR, artifact_files, js_host_files
from pipeline.release import Tested, Verified, lane_contracts
from verify.formats.conformance import ConformanceReport


def subject_of(tested: Tested) -> Subject:
    """The lanes of the release being made, as the bundle will list them."""
    built = tested.verified.built
    files = artifact_files(built.index, built.artifacts)
    kinds = {e.lane: e for e in built.index.lanes}
    wasm_ids = [f.lane for f in files if kinds[f.lane].kind == "wasm"]
    contracts = lane_contracts(wasm_ids)
    wasm, native = [], []
    for f in files:
        entry = kinds[f.lane]
        if entry.kind == "wasm":
            c = contracts[f.lane]
            wasm.append(
                WasmLane(
                    f.lane,
                    f.url,
                    built.artifacts[f.lane],
                    f.sha256,
                    simd="simd128" in c.required_features,
                    threads=c.requires_cross_origin_isolation,
                )
            )
        else:
            native.append(NativeLane(f.lane, entry.target, built.artifacts[f.lane], f.sha256))
    root = built.checked.request.repo_root
    js = tuple((j.url, root / JS_SOURCE_DIR / Path(j.url).name) for j in js_host_files(root))
    return Subject(
        built.checked.version, built.checked.git.revision, tuple(wasm), tuple(native), js
    )


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


def with_conformance(
    smoke: Callable[[Verified], Tested], opts: Options, require: Sequence[str] = ()
) -> Callable[[Verified], Tested]:
    """Step 4 followed by the matrix over the tested lanes; its report rides on `Tested`."""

    def smoke_then_conformance(verified: Verified) -> Tested:
        tested = smoke(verified)
        say = verified.built.checked.request.say
        say("    conformance matrix ...")
        report = conformance(subject_of(tested), replace(opts, say=lambda line: say(f"    {line}")))
        problems = unmet(report, require)
        if problems:
            raise CheckFailed(
                f"conformance: {'; '.join(problems)}",
                where="conformance matrix",
                hint="fix the lane, or switch it off with the manifest's disabled_lanes",
            )
        failed = sum(r.outcome == "fail" for r in report.rows)
        summary = f"{len(report.rows)} rows on {len(report.engines())} engines, {failed} failing"
        return replace(
            tested,
            detail=f"{tested.detail}; conformance: {summary}",
            conformance=report_bytes(report),
        )

    return smoke_then_conformance
