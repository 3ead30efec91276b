"""Run the matrix: per model tier, the oracle, then every engine's rows; and the per-engine
speed table.

Engines: the three browsers (each with and without COOP/COEP), node, wasmtime and the native
lanes (this machine, qemu-user, wine). Each runner reports lane documents of one shape
(lanerun.mjs); `compare` turns them into rows. Browsers and node run every lane through the
bundle's js/loader.js, so they need the bundle's signed manifest and whom to trust (`Trust`).
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pipeline.conformance import browsers, compare, harness, native
from pipeline.conformance import cases as case_gen
from pipeline.conformance.browsers import EngineUnavailable
from pipeline.conformance.portable import portable_receipt
from pipeline.conformance.results import CaseResult, from_page
from pipeline.conformance.subject import NativeLane, Subject, WasmLane
from pipeline.errors import TabledError
from pipeline.io import process
from pipeline.io.digest import sha256_file
from pipeline.io.process import CommandTimedOut, CommandUnstartable
from pipeline.toolchain import nodejs
from verify.formats.conformance import (
    CaseTable,
    ConformanceReport,
    EngineKind,
    ModelTier,
    OracleModel,
    SamplerCase,
    SpeedRow,
    TokenRow,
)


class MatrixError(TabledError):
    """The conformance matrix cannot run on this bundle or machine."""

    table: ClassVar[Mapping[str, str]] = {
        "conformance.trusted-keys-needed": (
            "pass --trusted-keys: a trusted-keys file whose key signed the bundle's manifest"
        ),
        "conformance.no-oracle": (
            "run the matrix on a machine that runs one of the bundle's native binaries (x86_64 "
            "or aarch64 Linux)"
        ),
        "conformance.oracle-failed": (
            "run the native binary on the case by hand; its stderr is in the message"
        ),
    }


PAGE = Path(__file__).parent / "page"
PAGE_FILES = ("index.html", "main.mjs", "lanerun.mjs")
HOSTS = ("node", "wasmtime", "native")
ALL_ENGINES = (*browsers.BROWSERS, *HOSTS)
LOADER_ENGINES = (*browsers.BROWSERS, "node")  # the engines that run js/loader.js
NODE_TIMEOUT_SECONDS = 1800
MODEL_URL = "/model/model.trlm"
WORKERS = 2
SPEED_PROMPT = "Once upon a time"


@dataclass(frozen=True)
class Trust:
    """What the loader is told to trust: a tinyrustlm.trusted-keys.v1 document or v2 trust
    policy, and whether a development key is acceptable (`--allow-dev-key`)."""

    trusted_keys: Mapping[str, Any]
    allow_dev_key: bool = False


@dataclass
class Options:
    engines: Sequence[str] = ALL_ENGINES
    cases: int = case_gen.DEFAULT_CASES
    seed: int = case_gen.DEFAULT_SEED
    speed_models: Sequence[str] = ()
    speed_runs: int = 5
    speed_tokens: int = 16
    page_timeout: float = 900.0
    isolation: Sequence[bool] = (True, False)
    # only these lanes' rows (a long run of one row); every other lane stays denied to the
    # loader, so it still runs exactly the lane asked for. Empty: every lane.
    lanes: Sequence[str] = ()
    trust: Trust | None = None  # required when a browser or node runs
    # tests only: replace what the server sends for these urls (a broken probe, a wrong host)
    overrides: dict[str, bytes] = field(default_factory=dict)
    on_lane: Callable[[harness.Launched, dict[str, Any]], None] | None = None
    say: Callable[[str], None] = print


@dataclass(frozen=True)
class Lanes:
    """One runner's lane documents, the lane its choice picked, and the engine's version."""

    docs: list[dict[str, Any]]
    chosen: str | None
    version: str
    error: str | None = None
    timed_out: bool = False  # the runner ran out of time (its `error` says so)


@dataclass(frozen=True)
class ModelFile:
    """One tier's model: the preset it was packed from, the file, its SHA-256."""

    tier: ModelTier
    name: str
    path: Path
    sha256: str


@dataclass(frozen=True)
class Job:
    """What every runner is given: the release, the model, the cases, whom the loader trusts."""

    subject: Subject
    model: Path
    model_sha256: str
    cases: Sequence[SamplerCase]
    trust: Trust | None
    lanes: Sequence[str] = ()  # the lanes to run (Options.lanes); empty: every lane

    def runs(self, lane: str) -> bool:
        return not self.lanes or lane in self.lanes


def _plan_lane(lane: WasmLane) -> dict[str, Any]:
    return {
        "lane": lane.lane,
        "path": str(lane.path),
        "sha256": lane.sha256,
        "simd": lane.simd,
        "relaxed": lane.relaxed,
        "threads": lane.threads,
    }


def _plan(job: Job, base: str) -> dict[str, Any]:
    """plan.json: `base` is the bundle root (a URL path for a page, a folder for node)."""
    if job.trust is None:
        raise MatrixError(
            "the JS engines run every lane through js/loader.js, which needs trusted keys",
            where="--trusted-keys",
            hint="the trusted keys (v1) or trust policy (v2) of the keys that signed the manifest",
            error_id="conformance.trusted-keys-needed",
        )
    return {
        "lanes": [_plan_lane(w) for w in job.subject.wasm],
        "run": [w.lane for w in job.subject.wasm if job.runs(w.lane)],
        "base": base,
        "trusted_keys": dict(job.trust.trusted_keys),
        "allow_dev_key": job.trust.allow_dev_key,
        "model_url": MODEL_URL,
        "model_path": str(job.model),
        "model_sha256": job.model_sha256,
        "workers": WORKERS,
        "cases": [case_gen.case_record(c) for c in job.cases],
    }


def bundle_files(subject: Subject) -> list[tuple[str, Path]]:
    """Bundle url -> file of everything the loader fetches: manifest, signature, js, modules."""
    return [*subject.signed_files, *subject.js_files, *((w.url, w.path) for w in subject.wasm)]


# -- runners ------------------------------------------------------------------------------
def run_browser(name: str, job: Job, isolated: bool, opts: Options, workdir: Path) -> Lanes:
    b = browsers.browser(name)
    exe = b.executable()
    if exe is None:
        raise EngineUnavailable(
            f"{name} is not installed",
            where="--engines",
            hint=".ci/run installs chromium, firefox-esr, webkit2gtk-driver and xvfb from Debian",
            error_id="conformance.engine-not-installed",
        )
    # A short path under the system temp folder, whatever `workdir` is: engines put Unix
    # sockets in their profile and TMPDIR, and a socket path over 107 bytes aborts Chromium.
    profile = Path(tempfile.mkdtemp(prefix=f"trlm-{name}-"))
    version = browsers.browser_version(b, exe, profile)
    routes: dict[str, harness.Route] = {f"/{url}": path for url, path in bundle_files(job.subject)}
    routes.update({harness.PAGE_ROOT + f: PAGE / f for f in PAGE_FILES})
    routes[harness.PAGE_ROOT + "plan.json"] = json.dumps(_plan(job, "/")).encode()
    routes[MODEL_URL] = job.model
    routes.update(opts.overrides)
    try:
        run = harness.run_page(
            b,
            exe,
            routes,
            isolated=isolated,
            timeout=opts.page_timeout,
            workdir=profile,
            on_lane=opts.on_lane,
        )
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    chosen = (run.start or {}).get("chosen")
    return Lanes(
        run.lanes, chosen if isinstance(chosen, str) else None, version, run.error, run.timed_out
    )


def _json_process(argv: list[str], timeout: float, what: str) -> dict[str, Any]:
    try:
        done = process.run(argv, timeout=timeout)
    except CommandTimedOut:
        return {"error": f"{what}: no answer within {timeout:.0f}s", "timed_out": True}
    except CommandUnstartable as exc:
        return {"error": f"{what}: {exc.strerror}"}
    if done.returncode != 0:
        tail = (done.stderr.strip() or done.stdout.strip()).splitlines()
        return {"error": f"{what}: exit {done.returncode}: {tail[-1] if tail else ''}"}
    try:
        doc: dict[str, Any] = json.loads(done.stdout)
    except ValueError as exc:
        return {"error": f"{what}: unreadable output: {exc}"}
    return doc


def run_node(job: Job, workdir: Path) -> Lanes:
    # the bundle as the loader sees it (lanerun.mjs imports ../js/loader.js), and the runner
    site = Path(tempfile.mkdtemp(prefix="node-", dir=workdir))
    plan = _plan(job, str(site))
    for url, path in bundle_files(job.subject):
        (site / url).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, site / url)
    (site / "conformance").mkdir()
    for f in (*PAGE_FILES[1:], "node_main.mjs"):
        shutil.copy(PAGE / f, site / "conformance" / f)
    plan_path = site / "plan.json"
    plan_path.write_text(json.dumps(plan), encoding="utf-8")
    node = str(nodejs.executable())  # the project's node (requirements.lock), never PATH's
    doc = _json_process(
        [node, str(site / "conformance/node_main.mjs"), str(plan_path)],
        NODE_TIMEOUT_SECONDS,
        "node",
    )
    shutil.rmtree(site, ignore_errors=True)
    return Lanes(
        doc.get("lanes", []),
        doc.get("chosen"),
        str(doc.get("version", "node")),
        doc.get("error"),
        doc.get("timed_out") is True,
    )


def run_wasmtime(job: Job, workdir: Path) -> Lanes:
    # no JavaScript, so no loader: the module bytes from the (hash-checked) subject directly
    plan = {
        "lanes": [_plan_lane(w) for w in job.subject.wasm if not w.threads and job.runs(w.lane)],
        "model_path": str(job.model),
        "cases": [case_gen.case_record(c) for c in job.cases],
    }
    plan_path = workdir / "wasmtime-plan.json"
    plan_path.write_text(json.dumps(plan), encoding="utf-8")
    doc = _json_process(
        [sys.executable, "-m", "pipeline.conformance.wasmtime_run", str(plan_path)],
        NODE_TIMEOUT_SECONDS,
        "wasmtime",
    )
    docs: list[dict[str, Any]] = doc.get("lanes", [])
    docs += [
        {
            "lane": w.lane,
            "status": "refused",
            "results": [],
            "error": "wasmtime-py here runs no shared-memory workers",
        }
        for w in job.subject.wasm
        if w.threads and job.runs(w.lane)
    ]
    version = str(doc.get("version", "wasmtime-py"))
    return Lanes(docs, None, version, doc.get("error"), doc.get("timed_out") is True)


# -- rows ---------------------------------------------------------------------------------
def lane_rows(
    key: compare.RowKey,
    subject: Subject,
    lanes: Lanes,
    cases: Sequence[SamplerCase],
    oracle: dict[str, CaseResult],
    only: Sequence[str] = (),
) -> list[TokenRow]:
    by_lane = {d.get("lane"): d for d in lanes.docs}
    rows = []
    for w in subject.wasm:
        if only and w.lane not in only:
            continue
        doc = by_lane.get(w.lane)
        if doc is None:
            why = lanes.error or "the runner reported nothing for this lane"
            rows.append(
                compare.blocked_row(
                    key,
                    w.lane,
                    w.sha256,
                    cases,
                    refused=False,
                    why=why,
                    timed_out=lanes.timed_out and lanes.error is not None,
                )
            )
        elif doc.get("status") != "ran":
            rows.append(
                compare.blocked_row(
                    key,
                    w.lane,
                    w.sha256,
                    cases,
                    refused=doc.get("status") == "refused",
                    why=str(doc.get("error")),
                )
            )
        else:
            got = [from_page(r) for r in doc.get("results", [])]
            rows.append(
                compare.ran_row(
                    key,
                    w.lane,
                    w.sha256,
                    cases,
                    oracle,
                    got,
                    chosen=lanes.chosen == w.lane,
                    receipt=portable_receipt(
                        doc.get("receipt"), subject.bundle_urls(), subject.source_date_epoch
                    ),
                )
            )
    return rows


# The engines that are not browsers and run the Wasm lanes: name -> (runner, row kind).
RUNTIMES: dict[str, tuple[Callable[[Job, Path], Lanes], EngineKind]] = {
    "node": (run_node, "js-runtime"),
    "wasmtime": (run_wasmtime, "wasm-runtime"),
}


def oracle_lane(subject: Subject, scratch: Path) -> tuple[NativeLane, native.NativeEngine]:
    for lane in subject.native:
        engine = native.engine_for(lane.target, scratch)
        if engine is not None and engine.name == "native":
            return lane, engine
    raise MatrixError(
        "the bundle has no native binary this machine runs directly: no oracle",
        where="manifest.json: native_artifacts",
        error_id="conformance.no-oracle",
    )


def native_rows(
    subject: Subject,
    model: ModelFile,
    cases: Sequence[SamplerCase],
    oracle: dict[str, CaseResult],
    oracle_id: str,
    scratch: Path,
    say: Callable[[str], None],
    only: Sequence[str] = (),
) -> list[TokenRow]:
    rows = []
    for lane in subject.native:
        if only and lane.lane not in only:
            continue
        engine = native.engine_for(lane.target, scratch)
        if engine is None:
            key = compare.RowKey("native", "native", "none", None, model.tier)
            rows.append(
                compare.blocked_row(
                    key,
                    lane.lane,
                    lane.sha256,
                    cases,
                    refused=True,
                    why=f"this machine cannot run {lane.target}",
                )
            )
            continue
        key = compare.RowKey(engine.name, "native", native.engine_version(engine), None, model.tier)
        if lane.lane == oracle_id:
            got, detail = list(oracle.values()), "the oracle itself"
        else:
            say(f"  {engine.name}: {lane.lane} ({len(cases)} cases, {model.tier} tier)")
            got, detail = native.run_cases(engine, lane.path, model.path, list(cases)), ""
        rows.append(
            compare.ran_row(
                key, lane.lane, lane.sha256, cases, oracle, got, chosen=True, detail=detail
            )
        )
    return rows


def engine_rows(
    subject: Subject,
    model: ModelFile,
    cases: Sequence[SamplerCase],
    oracle: dict[str, CaseResult],
    oracle_id: str,
    opts: Options,
    workdir: Path,
) -> list[TokenRow]:
    """Every engine's rows of one tier's model."""
    job = Job(subject, model.path, model.sha256, cases, opts.trust, opts.lanes)
    tier, only = model.tier, opts.lanes
    rows: list[TokenRow] = []
    for name in opts.engines:
        if name in browsers.BROWSERS:
            for isolated in opts.isolation:
                opts.say(f"{name}: {'with' if isolated else 'without'} COOP/COEP ({tier} tier)")
                lanes = run_browser(name, job, isolated, opts, workdir)
                key = compare.RowKey(name, "browser", lanes.version, isolated, tier)
                rows += lane_rows(key, subject, lanes, cases, oracle, only)
        elif name in RUNTIMES:
            runner, kind = RUNTIMES[name]
            opts.say(f"{name} ({tier} tier)")
            lanes = runner(job, workdir)
            key = compare.RowKey(name, kind, lanes.version, None, tier)
            rows += lane_rows(key, subject, lanes, cases, oracle, only)
        elif name == "native":
            opts.say(f"native lanes ({tier} tier)")
            rows += native_rows(subject, model, cases, oracle, oracle_id, workdir, opts.say, only)
        else:
            raise EngineUnavailable(
                f"unknown engine {name!r}",
                where="--engines",
                hint=f"choose from {', '.join(ALL_ENGINES)}",
                error_id="conformance.unknown-engine",
            )
    return rows


def run_matrix(
    subject: Subject, models: Sequence[ModelFile], opts: Options, workdir: Path
) -> ConformanceReport:
    """The same cases on a model of each tier (`models`), on every engine and lane."""
    cases = case_gen.make_cases(opts.cases, opts.seed)
    oracle_native, oracle_engine = oracle_lane(subject, workdir)
    rows: list[TokenRow] = []
    declared: list[OracleModel] = []
    for m in models:
        opts.say(f"oracle: {oracle_native.lane} on {len(cases)} cases, model {m.name} ({m.tier})")
        oracle_list = native.run_cases(oracle_engine, oracle_native.path, m.path, cases)
        broken = [r for r in oracle_list if r.error is not None]
        if broken:
            raise MatrixError(
                f"the oracle failed on case {broken[0].case} of model {m.name}: {broken[0].error}",
                where=str(oracle_native.path),
                error_id="conformance.oracle-failed",
            )
        stops: dict[str, int] = {}
        for r in oracle_list:
            stops[r.stop] = stops.get(r.stop, 0) + 1
        declared.append(
            OracleModel(
                tier=m.tier,
                model=m.name,
                model_sha256=m.sha256,
                oracle_stops=stops,
                oracle=[compare.output(r) for r in oracle_list],
            )
        )
        oracle = {r.case: r for r in oracle_list}
        rows += engine_rows(subject, m, cases, oracle, oracle_native.lane, opts, workdir)
    return ConformanceReport(
        release_version=subject.version,
        source_revision=subject.source_revision,
        cases=CaseTable(
            count=len(cases),
            seed=opts.seed,
            sha256=case_gen.cases_sha256(cases),
            oracle_lane=oracle_native.lane,
            oracle_sha256=oracle_native.sha256,
            entries=cases,
        ),
        models=declared,
        rows=rows,
        notes=[
            "compared per case: every token and the final PCG32 state against the native "
            "scalar oracle, on a model of each kernel tier (f32: format v1; int8: format v2, "
            "whose lanes equal the oracle bit for bit by construction); logits are not visible "
            "through the tr_* ABI, so the SIMD tier and 'threads == simd128 bit for bit' are "
            "checked at that level",
            "browsers and node run every lane through js/loader.js (signed manifest, "
            "probes, self-tests; the other lanes denied): a row's receipt is the loader's "
            "tinyrustlm.capability-receipt.v1 (its fetched urls as bundle paths, its "
            "created_utc the release's SOURCE_DATE_EPOCH: nothing of the builder's machine), "
            "a refusal its LoaderError code",
            "every row keeps every case's token ids and final RNG state (rows[].results), "
            "the oracle's per tier (models[].oracle): a failing case says whether it was a "
            "mismatch, an error or a timeout",
        ],
    )


# -- speed --------------------------------------------------------------------------------
def speed_cases(runs: int, tokens: int) -> list[SamplerCase]:
    return [
        SamplerCase(
            id=f"speed-{i}",
            prompt=SPEED_PROMPT,
            seed=0,
            stream=0,
            temperature=0.0,
            top_k=0,
            top_p=1.0,
            repetition_penalty=1.0,
            max_tokens=tokens + 1,
        )
        for i in range(runs)
    ]


def speed_row(
    engine: str, version: str, lane: str, model: str, results: Sequence[CaseResult]
) -> SpeedRow | None:
    ok = [r for r in results if r.error is None and r.decode_ms]
    if not ok:
        return None
    ttft = [r.ttft_ms for r in ok]
    tps = [len(r.decode_ms) / (sum(r.decode_ms) / 1e3) for r in ok]
    return SpeedRow(
        engine=engine,
        engine_version=version,
        lane=lane,
        model=model,
        runs=len(ok),
        decode_tokens=len(ok[0].decode_ms),
        ttft_ms_median=round(statistics.median(ttft), 3),
        ttft_ms_min=round(min(ttft), 3),
        ttft_ms_max=round(max(ttft), 3),
        decode_tps_median=round(statistics.median(tps), 2),
        decode_tps_min=round(min(tps), 2),
        decode_tps_max=round(max(tps), 2),
    )


def run_speed(
    subject: Subject, model: Path, model_name: str, opts: Options, workdir: Path
) -> list[SpeedRow]:
    cases = speed_cases(opts.speed_runs, opts.speed_tokens)
    job = Job(subject, model, sha256_file(model), cases, opts.trust)
    out: list[SpeedRow] = []

    def add(engine: str, lanes: Lanes) -> None:
        for doc in lanes.docs:
            if doc.get("status") == "ran":
                row = speed_row(
                    engine,
                    lanes.version,
                    str(doc["lane"]),
                    model_name,
                    [from_page(r) for r in doc.get("results", [])],
                )
                if row is not None:
                    out.append(row)

    for name in opts.engines:
        opts.say(f"speed: {name}, model {model_name}")
        if name in browsers.BROWSERS:
            add(name, run_browser(name, job, True, opts, workdir))
        elif name in RUNTIMES:
            add(name, RUNTIMES[name][0](job, workdir))
        elif name == "native":
            lane, engine = oracle_lane(subject, workdir)
            row = speed_row(
                engine.name,
                native.engine_version(engine),
                lane.lane,
                model_name,
                native.run_cases(engine, lane.path, model, cases),
            )
            out += [row] if row is not None else []
    return out
