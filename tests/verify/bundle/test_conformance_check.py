"""Step 13 in process: `check_conformance` on hand-made reports, no release (issue 36: the
module is in mutation scope, so its tests are fast and each says exactly what it expects).

Every row is one named case: an edit of a report that is otherwise sound (two wasm lanes and
one native lane of a hand-made manifest, each run by chromium and node on both tiers, wasmtime
on the wasm lanes, native on the native one), the engines required, and either the verdict
line or the refusal's class, exact message and `where`. The expected values are written out
from the module's documented rules (its docstring; README, step 13), not taken from a run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.harness.receipts import loader_receipt, receipt_sha256
from verify.bundle import errors as e
from verify.bundle.conformance_check import check_conformance
from verify.formats.manifest import ModuleManifest

VERSION = "1.2.3"
REVISION = "a" * 40
MANIFEST_SHA = "e" * 64
LANES = {"scalar": "1" * 64, "simd128": "2" * 64}  # wasm lane -> artifact sha256
NATIVE = ("x86_64-linux", "3" * 64)
CASES = 3
C = "conformance.json"

Doc = dict[str, Any]


def _manifest(**changes: Any) -> ModuleManifest:
    doc: Doc = {
        "version": VERSION,
        "source_revision": REVISION,
        "toolchain_lock_sha256": "b" * 64,
        "source_date_epoch": 1_700_000_000,
        "expires_epoch": 1_800_000_000,
        "key_class": "release",
        "build_id": "0" * 64,
        "artifacts": [
            {
                "id": lane,
                "url": f"{lane}.wasm",
                "sha256": sha,
                "size": 1,
                "required_features": [],
                "forbidden_features": [],
            }
            for lane, sha in LANES.items()
        ],
        "native_artifacts": [
            {
                "id": NATIVE[0],
                "target": "x86_64-unknown-linux-gnu",
                "url": "native.bin",
                "sha256": NATIVE[1],
                "size": 1,
            }
        ],
    }
    doc.update(changes)
    return ModuleManifest.model_validate(doc)


def _row(engine: str, lane: str, tier: str, outcome: str = "pass", **changes: Any) -> Doc:
    sha = NATIVE[1] if lane == NATIVE[0] else LANES[lane]
    loader = engine in ("chromium", "node")
    receipt = loader_receipt(engine, lane, sha, MANIFEST_SHA) if loader else None
    row: Doc = {
        "tier": tier,
        "engine": engine,
        "engine_kind": "browser" if engine == "chromium" else "js-runtime",
        "engine_version": "1",
        "isolated": True if engine == "chromium" else None,
        "lane": lane,
        "artifact_sha256": sha,
        "outcome": outcome,
        "chosen": False,
        "receipt_sha256": None if receipt is None else receipt_sha256(receipt),
        "receipt": receipt,
        "cases_passed": CASES if outcome == "pass" else 0,
        "cases_failed": CASES if outcome == "fail" else 0,
    }
    row.update(changes)
    return row


def _report() -> Doc:
    rows = [
        _row(engine, lane, tier)
        for tier in ("f32", "int8")
        for engine in ("chromium", "node", "wasmtime")
        for lane in LANES
    ]
    rows += [_row("native", NATIVE[0], tier) for tier in ("f32", "int8")]
    return {
        "schema": "tinyrustlm.conformance-report.v2",
        "release_version": VERSION,
        "source_revision": REVISION,
        "cases": {
            "count": CASES,
            "seed": 1,
            "sha256": "c" * 64,
            "oracle_lane": "oracle",
            "oracle_sha256": "c" * 64,
        },
        "models": [
            {"tier": t, "model": t, "model_sha256": "d" * 64, "oracle_stops": {}}
            for t in ("f32", "int8")
        ],
        "rows": rows,
    }


ROWS = len(_report()["rows"])  # 14: chromium, node, wasmtime x 2 lanes x 2 tiers, native x 2


def _find(doc: Doc, engine: str, lane: str = "scalar", tier: str = "f32") -> Doc:
    return next(
        r for r in doc["rows"] if (r["engine"], r["lane"], r["tier"]) == (engine, lane, tier)
    )


def _index(doc: Doc, engine: str, lane: str = "scalar", tier: str = "f32") -> int:
    return int(doc["rows"].index(_find(doc, engine, lane, tier)))


def _set(
    engine: str, lane: str = "scalar", tier: str = "f32", /, **changes: Any
) -> Callable[[Doc], None]:
    return lambda d: _find(d, engine, lane, tier).update(changes)


def _receipt(
    engine: str, edit: Callable[[Doc], None], resign: bool = True
) -> Callable[[Doc], None]:
    def apply(doc: Doc) -> None:
        row = _find(doc, engine)
        edit(row["receipt"])
        if resign:
            row["receipt_sha256"] = receipt_sha256(row["receipt"])

    return apply


def _append(
    engine: str, lane: str, tier: str, outcome: str, /, **changes: Any
) -> Callable[[Doc], None]:
    return lambda d: d["rows"].append(_row(engine, lane, tier, outcome, **changes))


def _drop(pred: Callable[[Doc], bool]) -> Callable[[Doc], None]:
    def apply(doc: Doc) -> None:
        doc["rows"] = [r for r in doc["rows"] if not pred(r)]

    return apply


def _both(*edits: Callable[[Doc], None]) -> Callable[[Doc], None]:
    def apply(doc: Doc) -> None:
        for edit in edits:
            edit(doc)

    return apply


def _v1(doc: Doc) -> None:
    """The same report as the v1 writer wrote it: one model (the f32 one), rows without tier."""
    model = doc.pop("models")[0]
    doc["schema"] = "tinyrustlm.conformance-report.v1"
    doc["cases"].update({k: v for k, v in model.items() if k != "tier"})
    doc["rows"] = [r for r in doc["rows"] if r.pop("tier") == "f32"]


def _no_int8(doc: Doc) -> None:
    doc["models"] = doc["models"][:1]
    doc["rows"] = [r for r in doc["rows"] if r["tier"] == "f32"]


@dataclass(frozen=True)
class Case:
    name: str
    edit: Callable[[Doc], None] | None = None  # None: no report at all
    require: tuple[str, ...] = ()
    manifest: dict[str, Any] = field(default_factory=dict)
    verdict: str = ""  # accepted: the verdict line
    error: type[e.BundleRejected] | None = None
    message: str = ""
    where: str = ""


def same(doc: Doc) -> None:
    pass


ALL = f"{ROWS} rows, {ROWS} pass, tiers f32/int8"
ISO = " (isolated=True)"
# fmt: off
TABLE: list[Case] = [
    # accepted, and what the verdict line says
    Case("no report, none required", None, verdict="no conformance report (none required)"),
    Case("all pass", same, verdict=ALL),
    Case("all pass, two engines required", same, require=("chromium", "node"),
         verdict=f"{ALL}, required engines chromium, node pass"),
    Case("a v1 report is read as the f32 tier", _v1,
         verdict=f"{ROWS // 2} rows, {ROWS // 2} pass, tiers f32 (a v1 report)"),
    Case("a failing row nobody requires", _set("chromium", outcome="fail", cases_passed=0,
                                               cases_failed=1),
         require=("node",),
         verdict=f"{ROWS} rows, {ROWS - 1} pass, tiers f32/int8, required engines node pass"),
    Case("one case declared is enough", lambda d: d["cases"].update(count=1), verdict=ALL),
    Case("more passed than declared", _set("node", cases_passed=CASES + 1), verdict=ALL),
    Case("a failing row with failures is no hollow pass",
         _set("wasmtime", outcome="fail", cases_passed=1, cases_failed=2),
         verdict=f"{ROWS} rows, {ROWS - 1} pass, tiers f32/int8"),
    Case("a not-run row counts cases of nothing", _set("wasmtime", outcome="not-run",
                                                       cases_passed=0),
         verdict=f"{ROWS} rows, {ROWS - 1} pass, tiers f32/int8"),
    Case("the same row isolated and not is two rows",
         _append("chromium", "scalar", "f32", "pass", isolated=False),
         verdict=f"{ROWS + 1} rows, {ROWS + 1} pass, tiers f32/int8"),
    Case("the same row by another engine is two rows",
         _append("firefox", "scalar", "f32", "not-run", engine_kind="browser"),
         verdict=f"{ROWS + 1} rows, {ROWS} pass, tiers f32/int8"),
    Case("a failing loader row without a receipt",
         _set("node", outcome="fail", cases_passed=0, cases_failed=1, receipt=None,
              receipt_sha256=None),
         verdict=f"{ROWS} rows, {ROWS - 1} pass, tiers f32/int8"),
    Case("another brand of the same engine",
         _receipt("chromium", lambda r: r["host_reported"].update(browser_brand="HeadlessChrome")),
         verdict=ALL),
    Case("a failing row of a disabled lane is not held against a required engine",
         _append("chromium", "simd128", "f32", "fail", isolated=False, receipt=None,
                 receipt_sha256=None),
         require=("chromium",), manifest={"disabled_lanes": ["simd128"]},
         verdict=f"{ROWS + 1} rows, {ROWS} pass, tiers f32/int8, required engines chromium pass"),
    Case("a required engine with a not-run row besides its passing one",
         _append("chromium", "scalar", "f32", "not-run", isolated=False, receipt=None,
                 receipt_sha256=None),
         require=("chromium",),
         verdict=f"{ROWS + 1} rows, {ROWS} pass, tiers f32/int8, required engines chromium pass"),
    # no report
    Case("no report, two engines required", None, require=("chromium", "node"),
         error=e.ConformanceMissing,
         message=f"engines chromium, node are required but the bundle has no {C}", where=C),
    # not a report
    Case("not a report", _set("node", outcome="passed"), error=e.ConformanceInvalid,
         message="not a tinyrustlm.conformance-report.v2 (or tinyrustlm.conformance-report.v1): "
                 "rows.2.outcome: Input should be 'pass', 'fail' or 'not-run'",
         where=f"{C}: rows.2.outcome"),
    Case("a v1 report with a bad field", _both(_v1, lambda d: d["cases"].update(seed="x")),
         error=e.ConformanceInvalid,
         message="not a tinyrustlm.conformance-report.v2 (or tinyrustlm.conformance-report.v1): "
                 "cases.seed: Input should be a valid integer, unable to parse string as an "
                 "integer", where=f"{C}: cases.seed"),
    Case("a v2 report without the int8 tier", _no_int8, error=e.ConformanceInvalid,
         message="the report runs no model of the int8 tier: every lane runs every tier, so "
                 "a v2 report covers each", where=f"{C}: models"),
    # of another release
    Case("another version", lambda d: d.update(release_version="1.2.4"),
         error=e.ConformanceMismatch,
         message=f"report is of 1.2.4 at {'a' * 12}, the manifest of {VERSION} at {'a' * 12}",
         where=f"{C}: release_version"),
    Case("another revision", lambda d: d.update(source_revision="f" * 40),
         error=e.ConformanceMismatch,
         message=f"report is of {VERSION} at {'f' * 12}, the manifest of {VERSION} at "
                 f"{'a' * 12}", where=f"{C}: release_version"),
    # hollow or ambiguous rows
    Case("no cases declared", lambda d: d["cases"].update(count=0), error=e.ConformanceInvalid,
         message="the report declares no cases: a pass of nothing is no evidence",
         where=f"{C}: cases.count"),
    Case("an unknown engine", _set("wasmtime", engine="netscape"), error=e.ConformanceInvalid,
         message="row netscape/scalar [f32]: unknown engine 'netscape'",
         where=f"{C}: rows[4].engine"),
    Case("a row twice", _append("node", "simd128", "int8", "pass"), error=e.ConformanceMismatch,
         message="row node/simd128 [int8] appears twice (rows[9] and rows[14])",
         where=f"{C}: rows[14]"),
    Case("a pass with a failure", _set("chromium", cases_failed=1), error=e.ConformanceMismatch,
         message=f"row chromium/scalar [f32]{ISO} passes with 3 passed and 1 failed of the 3 "
                 "declared cases", where=f"{C}: rows[0].cases_passed"),
    Case("a pass of one case fewer than declared", _set("node", cases_passed=CASES - 1),
         error=e.ConformanceMismatch,
         message="row node/scalar [f32] passes with 2 passed and 0 failed of the 3 declared "
                 "cases", where=f"{C}: rows[2].cases_passed"),
    Case("a 0/0 pass", _set("native", NATIVE[0], cases_passed=0), error=e.ConformanceMismatch,
         message=f"row native/{NATIVE[0]} [f32] passes with 0 passed and 0 failed of the 3 "
                 "declared cases", where=f"{C}: rows[12].cases_passed"),
    # of other artifacts
    Case("a row of another artifact", _set("node", "simd128", artifact_sha256="9" * 64),
         error=e.ConformanceMismatch,
         message="row node/simd128 [f32] ran an artifact that is not this manifest's",
         where=f"{C}: rows[3].artifact_sha256"),
    Case("an isolated row of another artifact",
         _set("chromium", "simd128", "int8", artifact_sha256=LANES["scalar"]),
         error=e.ConformanceMismatch,
         message=f"row chromium/simd128 [int8]{ISO} ran an artifact that is not this manifest's",
         where=f"{C}: rows[7].artifact_sha256"),
    Case("a row of a lane the manifest lacks", _set("wasmtime", "simd128", lane="threads"),
         error=e.ConformanceMismatch,
         message="row wasmtime/threads [f32] ran an artifact that is not this manifest's",
         where=f"{C}: rows[5].artifact_sha256"),
    Case("a native row of another binary", _set("native", NATIVE[0], "int8",
                                                artifact_sha256=LANES["scalar"]),
         error=e.ConformanceMismatch,
         message=f"row native/{NATIVE[0]} [int8] ran an artifact that is not this manifest's",
         where=f"{C}: rows[13].artifact_sha256"),
    # receipts
    Case("a passing browser row without a receipt",
         _set("chromium", "simd128", receipt=None, receipt_sha256=None),
         error=e.ConformanceMismatch,
         message=f"row chromium/simd128 [f32]{ISO}: a passing row of a loader engine carries "
                 "no loader receipt", where=f"{C}: rows[1].receipt"),
    Case("a receipt edited after the run",
         _receipt("node", lambda r: r["observed"].update(workers_started=1), resign=False),
         error=e.ConformanceMismatch,
         message="row node/scalar [f32]: receipt_sha256 is not the digest of its receipt",
         where=f"{C}: rows[2].receipt_sha256"),
    Case("a receipt without its digest", _set("node", receipt_sha256=None),
         error=e.ConformanceMismatch,
         message="row node/scalar [f32]: receipt_sha256 is not the digest of its receipt",
         where=f"{C}: rows[2].receipt_sha256"),
    Case("a receipt of another schema", _receipt("node", lambda r: r.update(schema="x")),
         error=e.ConformanceInvalid,
         message="row node/scalar [f32]: not a tinyrustlm.capability-receipt.v1: schema: Input "
                 "should be 'tinyrustlm.capability-receipt.v1'",
         where=f"{C}: rows[2].receipt.schema"),
    Case("a receipt of another module",
         _receipt("chromium", lambda r: r["module"].update(sha256=LANES["simd128"])),
         error=e.ConformanceMismatch,
         message=f"row chromium/scalar [f32]{ISO}: the receipt is of module "
                 f"{LANES['simd128'][:16]}…, not the row's artifact",
         where=f"{C}: rows[0].receipt.module.sha256"),
    Case("a receipt of another manifest",
         _receipt("node", lambda r: r["module"].update(build_manifest_sha256="7" * 64)),
         error=e.ConformanceMismatch,
         message=f"row node/scalar [f32]: the loader verified manifest {'7' * 16}…, not this "
                 f"bundle's {MANIFEST_SHA[:16]}…",
         where=f"{C}: rows[2].receipt.module.build_manifest_sha256"),
    Case("a receipt by another engine",
         _receipt("node", lambda r: r["host_reported"].update(browser_brand="Chromium")),
         error=e.ConformanceMismatch,
         message="row node/scalar [f32]: the receipt was reported by 'Chromium', not by node",
         where=f"{C}: rows[2].receipt.host_reported.browser_brand"),
    Case("a receipt on a failing row is checked too",
         _both(_set("node", outcome="fail", cases_passed=0, cases_failed=1),
               _receipt("node", lambda r: r["host_reported"].update(browser_brand="Safari"))),
         error=e.ConformanceMismatch,
         message="row node/scalar [f32]: the receipt was reported by 'Safari', not by node",
         where=f"{C}: rows[2].receipt.host_reported.browser_brand"),
    Case("a receipt on an engine that runs no loader",
         _both(_set("wasmtime", receipt=loader_receipt("node", "scalar", LANES["scalar"],
                                                       MANIFEST_SHA)),
               lambda d: _find(d, "wasmtime").update(
                   receipt_sha256=receipt_sha256(_find(d, "wasmtime")["receipt"]))),
         error=e.ConformanceMismatch,
         message="row wasmtime/scalar [f32]: the receipt was reported by 'node', not by wasmtime",
         where=f"{C}: rows[4].receipt.host_reported.browser_brand"),
    # required engines
    Case("a required engine's failing row",
         _append("chromium", "scalar", "int8", "fail", isolated=False, receipt=None,
                 receipt_sha256=None, cases_failed=2,
                 first_failure={"case": "c7", "field": "tokens", "expected": "1", "got": "2"},
                 detail="token 3 differs"),
         require=("node", "chromium"), error=e.ConformanceRowFailed,
         message="engine chromium: 1 failing row(s) of the int8 tier, first chromium/scalar "
                 "[int8] (isolated=False): 2 case(s) failed (first c7) token 3 differs",
         where=f"{C}: rows[{ROWS}]"),
    Case("a required engine's failing rows without a first failure or detail",
         _both(_set("node", "simd128", outcome="fail", cases_passed=0, cases_failed=1),
               _set("node", "scalar", outcome="fail", cases_passed=0, cases_failed=1)),
         require=("node",), error=e.ConformanceRowFailed,
         message="engine node: 2 failing row(s) of the f32 tier, first node/scalar [f32]: "
                 "1 case(s) failed (first -)", where=f"{C}: rows[2]"),
    Case("a required engine without a row", same, require=("chromium", "firefox"),
         error=e.ConformanceEngineMissing,
         message="engine firefox has no passing row of the f32 tier", where=C),
    Case("a required engine without a row of the int8 tier",
         _drop(lambda r: (r["engine"], r["tier"]) == ("node", "int8")), require=("node",),
         error=e.ConformanceEngineMissing,
         message="engine node has no passing row of the int8 tier", where=C),
    Case("a required engine whose only pass is on a disabled lane",
         _drop(lambda r: (r["engine"], r["lane"]) == ("chromium", "scalar")),
         require=("chromium",), manifest={"disabled_lanes": ["simd128"]},
         error=e.ConformanceEngineMissing,
         message="engine chromium has no passing row of the f32 tier", where=C),
    Case("a required engine with only not-run rows on a tier",
         _both(_set("wasmtime", "scalar", "int8", outcome="not-run", cases_passed=0),
               _set("wasmtime", "simd128", "int8", outcome="not-run", cases_passed=0)),
         require=("wasmtime",), error=e.ConformanceEngineMissing,
         message="engine wasmtime has no passing row of the int8 tier", where=C),
]
# fmt: on


@pytest.mark.parametrize("case", TABLE, ids=[c.name for c in TABLE])
def test_check_conformance(case: Case) -> None:
    manifest = _manifest(**case.manifest)
    data = None
    if case.edit is not None:
        doc = _report()
        case.edit(doc)
        data = json.dumps(doc).encode()
    if case.error is None:
        assert check_conformance(data, manifest, MANIFEST_SHA, case.require) == case.verdict
        return
    with pytest.raises(e.BundleRejected) as caught:
        check_conformance(data, manifest, MANIFEST_SHA, case.require)
    assert type(caught.value) is case.error
    assert (caught.value.message, caught.value.where) == (case.message, case.where)


def test_the_sound_report_is_what_the_table_says() -> None:
    """The base report the table edits: every row index the table names is the row it means."""
    doc = _report()
    assert [(r["engine"], r["lane"], r["tier"]) for r in doc["rows"][:6]] == [
        ("chromium", "scalar", "f32"),
        ("chromium", "simd128", "f32"),
        ("node", "scalar", "f32"),
        ("node", "simd128", "f32"),
        ("wasmtime", "scalar", "f32"),
        ("wasmtime", "simd128", "f32"),
    ]
    assert _index(doc, "node", "simd128", "int8") == 9
    assert _index(doc, "native", NATIVE[0], "int8") == ROWS - 1 == 13
    assert hashlib.sha256(b"").hexdigest() not in (*LANES.values(), NATIVE[1])
