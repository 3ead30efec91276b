"""The browser harness against the three real engines, on a real release (integration).

Per engine: with and without COOP/COEP (threads chosen only when isolated, each row's receipt
the loader's); a page that must fail (a SIMD probe that cannot validate, a host that returns
wrong tokens) reported as failed rows; the engine killed mid-run gives failed rows for what it
never reported, no hang, and no process left. Few cases each, since every engine launch costs
seconds here.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs; installed via cyclonedx
import pytest

from pipeline.cli import main as release_main
from pipeline.conformance import browsers
from pipeline.conformance.harness import Launched
from pipeline.conformance.matrix import ModelFile, Options, Trust, run_matrix
from pipeline.conformance.subject import Subject, from_bundle
from verify.formats.conformance import MODEL_TIERS, ConformanceReport, TierRow
from verify.formats.receipt import CapabilityReceipt

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[3]
SCHEMA = REPO_ROOT / "manifests/schemas/tinyrustlm.conformance-report.v3.json"
ENGINES = [
    pytest.param(
        name,
        marks=pytest.mark.skipif(
            b.executable() is None, reason=f"{name} is not installed (.ci/run installs it)"
        ),
    )
    for name, b in browsers.BROWSERS.items()
]
# not valid wasm at all: the loader's SIMD probe can never validate (a v1 header, then junk)
BROKEN_SIMD_PROBE = [0, 97, 115, 109, 1, 0, 0, 0, 1, 255]
Setup = tuple[Subject, list[ModelFile], Trust]


def broken_simd_probes(source: str) -> bytes:
    """js/probes.js with the simd128 probe's bytes broken and its recorded SHA-256 updated, so
    the loader's hash check passes and WebAssembly.validate says no: an engine without SIMD."""
    start = source.index("id: 'simd128'")
    end = source.index("}),", start)
    entry = source[start:end]
    old_sha = entry.split("sha256: '")[1].split("'")[0]
    old_bytes = entry.split("bytes: Object.freeze(")[1].split(")")[0]
    sha = hashlib.sha256(bytes(BROKEN_SIMD_PROBE)).hexdigest()
    broken = entry.replace(old_sha, sha).replace(old_bytes, json.dumps(BROKEN_SIMD_PROBE))
    return (source[:start] + broken + source[end:]).encode()


@pytest.fixture(scope="module")
def setup(
    conformance_bundle: tuple[Path, Path], tier_models: list[ModelFile], dev_trust: Trust
) -> Setup:
    return from_bundle(conformance_bundle[0]), tier_models, dev_trust


def _matrix(
    setup: Setup, tmp_path: Path, engine: str, tiers: bool = False, **options: Any
) -> ConformanceReport:
    """The matrix on `engine`: the f32 tier's model, or with `tiers` a model of each tier."""
    subject, models, trust = setup
    opts = Options(
        engines=[engine], cases=3, page_timeout=300, say=lambda _: None, trust=trust, **options
    )
    return run_matrix(subject, models if tiers else models[:1], opts, tmp_path)


def _by_lane(rows: Sequence[TierRow], isolated: bool, tier: str = "f32") -> dict[str, TierRow]:
    return {r.lane: r for r in rows if r.isolated is isolated and r.tier == tier}


def _role(subject: Subject, threads: bool, relaxed: bool) -> str:
    """The one wasm lane with (or without) threads and relaxed SIMD; a plain SIMD lane else."""
    [lane] = [
        w.lane for w in subject.wasm if w.simd and w.threads is threads and w.relaxed is relaxed
    ]
    return lane


@pytest.mark.parametrize("engine", ENGINES)
def test_isolation_on_and_off(setup: Setup, tmp_path: Path, engine: str) -> None:
    """Every lane of the engine, with and without isolation, on a model of each tier. The
    engine's own choice is the loader's order: relaxed SIMD + threads when isolated, relaxed
    SIMD when not; WebKit, without relaxed SIMD, refuses both relaxed lanes at the probe (a
    not-run row that says so) and its choice is threads, or simd128 when not isolated."""
    subject = setup[0]
    relaxed_runs = engine != "webkit"
    threads_lanes = {w.lane for w in subject.wasm if w.threads}
    relaxed_lanes = {w.lane for w in subject.wasm if w.relaxed}
    chosen_on = _role(subject, threads=True, relaxed=relaxed_runs)
    chosen_off = _role(subject, threads=False, relaxed=relaxed_runs)
    refused = set() if relaxed_runs else relaxed_lanes
    report = _matrix(setup, tmp_path, engine, tiers=True)
    assert report.tiers() == list(MODEL_TIERS)
    for tier in MODEL_TIERS:
        on, off = _by_lane(report.rows, True, tier), _by_lane(report.rows, False, tier)
        assert set(on) == set(off) == {w.lane for w in subject.wasm}, tier
        for lane in refused:
            for row in (on[lane], off[lane]):
                assert row.outcome == "not-run" and row.receipt is None, row
                assert row.detail.startswith("FeatureMissing: "), row.detail
        assert {r.outcome for lane, r in on.items() if lane not in refused} == {"pass"}, on
        assert [lane for lane, r in on.items() if r.chosen] == [chosen_on]
        for row in (*on.values(), *off.values()):
            if row.outcome != "pass":
                continue
            receipt = CapabilityReceipt.model_validate(row.receipt)  # the loader's, this lane
            assert (receipt.module.artifact_id, receipt.module.sha256) == (
                row.lane,
                row.artifact_sha256,
            )
            assert receipt.observed.cross_origin_isolated is row.isolated
            mode = {"f32": "strict-f32-v1", "int8": "int8-exact-v1"}[tier]
            assert receipt.selection.numerical_mode == mode, (tier, row.lane)
        for lane in threads_lanes - refused:
            threads_receipt = CapabilityReceipt.model_validate(on[lane].receipt)
            assert threads_receipt.observed.workers_started == 2
            assert threads_receipt.executed_path_evidence.worker_ids_participating == [0, 1]
        for lane in threads_lanes:
            if lane in refused:
                continue
            assert off[lane].outcome == "not-run" and off[lane].receipt is None
            assert off[lane].detail.startswith("NotIsolated: ")
            assert "cross-origin isolated" in off[lane].detail
        passing_off = {lane for lane, r in off.items() if r.outcome == "pass"}
        assert passing_off == set(off) - threads_lanes - refused
        assert [lane for lane, r in off.items() if r.chosen] == [chosen_off]
    assert all(r.engine_version not in ("", "unknown") for r in report.rows)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_page_that_must_fail_is_reported_failed(
    setup: Setup, tmp_path: Path, engine: str
) -> None:
    subject = setup[0]
    abi_url, abi_path = next((u, p) for u, p in subject.js_files if u.endswith("/abi.js"))
    probes_url, probes_path = next((u, p) for u, p in subject.js_files if u.endswith("/probes.js"))
    honest = "token: v.getUint32(0, true),"
    source = abi_path.read_text()
    assert honest in source
    wrong_tokens = source.replace(honest, "token: v.getUint32(0, true) ^ 1,").encode()
    overrides = {
        f"/{probes_url}": broken_simd_probes(probes_path.read_text()),
        f"/{abi_url}": wrong_tokens,
    }
    report = _matrix(setup, tmp_path, engine, isolation=(True,), overrides=overrides)
    rows = _by_lane(report.rows, True)
    assert {r.outcome for r in rows.values()} == {"fail"}
    for w in subject.wasm:
        row = rows[w.lane]
        assert row.first_failure is not None
        if w.simd:  # the loader's choice skipped it: recorded with the loader's code
            assert row.detail.startswith("FeatureMissing: probe(s) for simd128"), row.detail
            assert row.receipt is None
        else:
            assert (row.first_failure.field, row.first_failure.first_index) == ("tokens", 0)
            assert row.cases_failed == 3


def _gone(pgid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("engine", ENGINES)
def test_engine_killed_mid_run_gives_failed_rows_and_no_hang(
    setup: Setup, tmp_path: Path, engine: str
) -> None:
    killed: list[int] = []

    def kill_after_first_lane(launched: Launched, doc: dict[str, Any]) -> None:
        if not killed:
            killed.append(launched.proc.pid)
            launched.kill()

    started = time.monotonic()
    report = _matrix(setup, tmp_path, engine, isolation=(True,), on_lane=kill_after_first_lane)
    elapsed = time.monotonic() - started
    rows = list(_by_lane(report.rows, True).values())
    assert killed and elapsed < 120  # the page timeout is 300 s: the death was noticed
    assert rows[0].outcome == "pass"  # reported before the kill
    for row in rows[1:]:
        assert row.outcome == "fail"
        assert "exited" in row.detail and row.cases_failed == 3
    assert _gone(killed[0]), "a process of the killed engine's group is still running"


def test_cli_writes_a_report_that_validates(
    conformance_bundle: tuple[Path, Path], tmp_path: Path
) -> None:
    bundle, trusted_keys = conformance_bundle
    out = tmp_path / "conformance.json"
    with contextlib.redirect_stdout(io.StringIO()):
        code = release_main(
            [
                "conformance",
                str(bundle),
                "--trusted-keys",
                str(trusted_keys),
                "--allow-dev-key",
                "--engines",
                "node,wasmtime,native",
                "--cases",
                "7",
                "--out",
                str(out),
            ]
        )
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, json.loads(SCHEMA.read_text()))
    assert code == 0, [r for r in doc["rows"] if r["outcome"] == "fail"]
    tiers = {m["tier"]: m for m in doc["models"]}
    assert sorted(tiers) == ["f32", "int8"]  # a model of each kernel tier ran
    assert tiers["f32"]["oracle_stops"].get("eos", 0) >= 1  # the pinned EOS case did stop
    engines = {r["engine"] for r in doc["rows"]}
    assert {"node", "wasmtime", "native"} <= engines
    assert out.with_suffix(".html").read_text().count("<tr>") >= len(engines)
