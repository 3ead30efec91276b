"""Step 13 in process: `check_conformance` on hand-made reports, no release (issue 36: the
module is in mutation scope, so its tests are fast and each says exactly what it expects).

Every row is one named case: an edit of a `tinyrustlm.conformance-report.v3` that is otherwise
sound (two wasm lanes and one native lane of a hand-made manifest, each run by chromium and
node on both tiers, wasmtime on the wasm lanes, native on the native one; three cases whose
token ids every row repeats from the oracle), the engines required, and either the verdict
line or the refusal's class, exact message and `where`. The expected values are written out
from the module's documented rules (its docstring; README, step 13), not taken from a run.
A v2 or v1 report is the same report in the older shape (`_v2`, `_v1`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.harness.conformance import CASES as CASE_LIST
from tests.harness.conformance import ORACLE, as_v2, case_runs
from tests.harness.receipts import loader_receipt, receipt_sha256
from verify.bundle import errors as e
from verify.bundle.conformance_check import check_conformance
from verify.formats.conformance import cases_sha256
from verify.formats.manifest import ModuleManifest

VERSION = "1.2.3"
REVISION = "a" * 40
MANIFEST_SHA = "e" * 64
LANES = {"scalar": "1" * 64, "simd128": "2" * 64}  # wasm lane -> artifact sha256
NATIVE = ("x86_64-linux", "3" * 64)
CASES = len(CASE_LIST)  # 3: 000-greedy, 001-greedy, 002-greedy
FIRST, SECOND = CASE_LIST[0].id, CASE_LIST[1].id
C = "conformance.json"
V1 = "tinyrustlm.conformance-report.v1"
V2 = "tinyrustlm.conformance-report.v2"
RECEIPT_V1 = "tinyrustlm.capability-receipt.v1"
V3 = "tinyrustlm.conformance-report.v3"

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
    """A row whose results say `outcome` (fail: the first case's tokens differ)."""
    sha = NATIVE[1] if lane == NATIVE[0] else LANES[lane]
    loader = engine in ("chromium", "firefox", "node")
    receipt = loader_receipt(engine, lane, sha, MANIFEST_SHA, tier) if loader else None
    failed = 1 if outcome == "fail" else 0
    first = {"case": FIRST, "field": "tokens", "expected": "0 7 9", "got": "0 7 8"}
    row: Doc = {
        "tier": tier,
        "engine": engine,
        "engine_kind": "browser" if engine in ("chromium", "firefox") else "js-runtime",
        "engine_version": "1",
        "isolated": True if engine in ("chromium", "firefox") else None,
        "lane": lane,
        "artifact_sha256": sha,
        "outcome": outcome,
        "chosen": False,
        "receipt_sha256": None if receipt is None else receipt_sha256(receipt),
        "receipt": receipt,
        "cases_passed": 0 if outcome == "not-run" else CASES - failed,
        "cases_failed": failed,
        "first_failure": first if failed else None,
        "results": [r.model_dump() for r in case_runs(outcome)],
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
        "schema": V3,
        "release_version": VERSION,
        "source_revision": REVISION,
        "cases": {
            "count": CASES,
            "seed": 1,
            "sha256": cases_sha256(CASE_LIST),
            "oracle_lane": "oracle",
            "oracle_sha256": "c" * 64,
            "entries": [c.model_dump() for c in CASE_LIST],
        },
        "models": [
            {
                "tier": t,
                "model": t,
                "model_sha256": "d" * 64,
                "oracle_stops": {"max-tokens": CASES},
                "oracle": [o.model_dump() for o in ORACLE],
            }
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


def _fail(
    engine: str, lane: str = "scalar", tier: str = "f32", /, kind: str = "mismatch", **changes: Any
) -> Callable[[Doc], None]:
    """The row fails its second case (`kind`), and says so: outcome, counts, first failure."""

    def apply(doc: Doc) -> None:
        row = _find(doc, engine, lane, tier)
        result = row["results"][1]
        if kind == "mismatch":
            result.update(tokens="1 7 8", failure="mismatch")
        else:
            result.update(stop="error", failure=kind, error=f"the runner's {kind}")
        diff = {"case": SECOND, "field": "tokens", "expected": "1 7 9", "got": "1 7 8"}
        row.update(outcome="fail", cases_passed=CASES - 1, cases_failed=1, first_failure=diff)
        row.update(changes)

    return apply


def _set_oracle(tier: int, edit: Callable[[list[Doc]], object]) -> Callable[[Doc], None]:
    """Edits models[tier].oracle (0: f32, 1: int8)."""

    def apply(doc: Doc) -> None:
        edit(doc["models"][tier]["oracle"])

    return apply


def _int8_first_tokens(tokens: str) -> Callable[[Doc], None]:
    """Every int8 row's first case gave `tokens`."""

    def apply(doc: Doc) -> None:
        for row in doc["rows"]:
            if row["tier"] == "int8":
                row["results"][0]["tokens"] = tokens

    return apply


def _not_run(engine: str, lane: str = "scalar", tier: str = "f32") -> Callable[[Doc], None]:
    return _set(engine, lane, tier, outcome="not-run", cases_passed=0, results=[])


def _receipt(
    engine: str, edit: Callable[[Doc], None], resign: bool = True, tier: str = "f32"
) -> Callable[[Doc], None]:
    def apply(doc: Doc) -> None:
        row = _find(doc, engine, tier=tier)
        edit(row["receipt"])
        if resign:
            row["receipt_sha256"] = receipt_sha256(row["receipt"])

    return apply


def _as_v1(receipt: Doc) -> None:
    """A v2 receipt as v1 was published: no relaxed_simd."""
    del receipt["relaxed_simd"]
    receipt["schema"] = RECEIPT_V1


def _append(
    engine: str, lane: str, tiers: tuple[str, ...], outcome: str, /, **changes: Any
) -> Callable[[Doc], None]:
    """Rows of (engine, lane) on `tiers` (every tier: no tier dropped)."""
    return lambda d: d["rows"].extend(_row(engine, lane, t, outcome, **changes) for t in tiers)


BOTH = ("f32", "int8")


def _drop(pred: Callable[[Doc], bool]) -> Callable[[Doc], None]:
    def apply(doc: Doc) -> None:
        doc["rows"] = [r for r in doc["rows"] if not pred(r)]

    return apply


def _both(*edits: Callable[[Doc], None]) -> Callable[[Doc], None]:
    def apply(doc: Doc) -> None:
        for edit in edits:
            edit(doc)

    return apply


def _v2(doc: Doc) -> None:
    """The same report as the v2 writer wrote it: verdicts only, no cases, oracle or results."""
    old = as_v2(doc)
    doc.clear()
    doc.update(old)


def _v1(doc: Doc) -> None:
    """The same report as the v1 writer wrote it: one model (the f32 one), rows without tier."""
    _v2(doc)
    model = doc.pop("models")[0]
    doc["schema"] = V1
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
    raw: bytes | None = None  # the report's bytes as they are (not JSON of the edited report)
    offset: int | None = None  # the refusal's byte offset


def same(doc: Doc) -> None:
    pass


ALL = f"{ROWS} rows, {ROWS} pass, tiers f32/int8"
ISO = " (isolated=True)"
NOT_A = f"not a {V3} (or {V2}, {V1})"
DOWNGRADE = f"the verifier judges them on {V3} token ids, on every tier"
# fmt: off
TABLE: list[Case] = [
    # accepted, and what the verdict line says
    Case("no report, none required", None, verdict="no conformance report (none required)"),
    Case("all pass", same, verdict=ALL),
    Case("all pass, two engines required", same, require=("chromium", "node"),
         verdict=f"{ALL}, required engines chromium, node pass"),
    Case("a v2 report, none required", _v2, verdict=f"{ALL} (a v2 report)"),
    Case("a v1 report is read as the f32 tier", _v1,
         verdict=f"{ROWS // 2} rows, {ROWS // 2} pass, tiers f32 (a v1 report)"),
    Case("a failing row nobody requires", _fail("chromium"), require=("node",),
         verdict=f"{ROWS} rows, {ROWS - 1} pass, tiers f32/int8, required engines node pass"),
    Case("failing rows of every kind", _both(_fail("chromium"), _fail("node", kind="error"),
                                             _fail("wasmtime", kind="timeout")),
         verdict=f"{ROWS} rows, {ROWS - 3} pass, tiers f32/int8"),
    Case("one case declared is enough (v2)", _both(_v2, lambda d: d["cases"].update(count=1)),
         verdict=f"{ALL} (a v2 report)"),
    Case("more passed than declared (v2)", _both(_v2, _set("node", cases_passed=CASES + 1)),
         verdict=f"{ALL} (a v2 report)"),
    Case("a failing row with failures is no hollow pass", _fail("wasmtime"),
         verdict=f"{ROWS} rows, {ROWS - 1} pass, tiers f32/int8"),
    Case("a not-run row counts cases of nothing", _not_run("wasmtime"),
         verdict=f"{ROWS} rows, {ROWS - 1} pass, tiers f32/int8"),
    Case("the same row isolated and not is two rows",
         _append("chromium", "scalar", BOTH, "pass", isolated=False),
         verdict=f"{ROWS + 2} rows, {ROWS + 2} pass, tiers f32/int8"),
    Case("the same row by another engine is two rows",
         _append("firefox", "scalar", BOTH, "not-run"),
         verdict=f"{ROWS + 2} rows, {ROWS} pass, tiers f32/int8"),
    Case("a failing loader row without a receipt", _fail("node", receipt=None,
                                                        receipt_sha256=None),
         verdict=f"{ROWS} rows, {ROWS - 1} pass, tiers f32/int8"),
    Case("another brand of the same engine",
         _receipt("chromium", lambda r: r["host_reported"].update(browser_brand="HeadlessChrome")),
         verdict=ALL),
    Case("an int8 receipt on an int8 row",
         _receipt("node", lambda r: r["host_reported"].update(browser_version="2"), tier="int8"),
         verdict=ALL),
    Case("a failing row of a disabled lane is not held against a required engine",
         _append("chromium", "simd128", BOTH, "fail", isolated=False),
         require=("chromium",), manifest={"disabled_lanes": ["simd128"]},
         verdict=f"{ROWS + 2} rows, {ROWS} pass, tiers f32/int8, required engines chromium pass"),
    Case("a required engine with a not-run row besides its passing one",
         _append("chromium", "scalar", BOTH, "not-run", isolated=False, receipt=None,
                 receipt_sha256=None),
         require=("chromium",),
         verdict=f"{ROWS + 2} rows, {ROWS} pass, tiers f32/int8, required engines chromium pass"),
    Case("a required engine passing on one lane, not run on the other",
         _both(_not_run("node", "simd128"), _not_run("node", "simd128", "int8")),
         require=("node",),
         verdict=f"{ROWS} rows, {ROWS - 2} pass, tiers f32/int8, required engines node pass"),
    # no report
    Case("no report, two engines required", None, require=("chromium", "node"),
         error=e.ConformanceMissing,
         message=f"engines chromium, node are required but the bundle has no {C}", where=C),
    # not a report
    Case("not a report", _set("node", outcome="passed"), error=e.ConformanceInvalid,
         message=f"{NOT_A}: rows.2.outcome: Input should be 'pass', 'fail' or 'not-run'",
         where=f"{C}: rows.2.outcome"),
    Case("a count written as a string", lambda d: d["cases"].update(count="3"),
         error=e.ConformanceInvalid, message=f"{NOT_A}: cases.count: Input should be a valid "
                                             "integer", where=f"{C}: cases.count"),
    Case("a v1 report with a bad field", _both(_v1, lambda d: d["cases"].update(seed="x")),
         error=e.ConformanceInvalid,
         message=f"{NOT_A}: cases.seed: Input should be a valid integer", where=f"{C}: cases.seed"),
    Case("a v2 report with a v3 field", _both(_v2, lambda d: d["rows"][0].update(results=[])),
         error=e.ConformanceInvalid,
         message=f"{NOT_A}: rows.0.results: Extra inputs are not permitted",
         where=f"{C}: rows.0.results"),
    Case("duplicate keys", same, raw=b'{"schema": "x", "schema": "y"}',
         error=e.ConformanceInvalid, message="not acceptable JSON: duplicate key 'schema'",
         where=C),
    Case("NaN", same, raw=b'{"rows": NaN}', error=e.ConformanceInvalid,
         message="not acceptable JSON: non-standard JSON constant NaN", where=C),
    Case("not JSON", same, raw=b'{"rows": [1,', error=e.ConformanceInvalid,
         message="not JSON: Expecting value", where=C, offset=12),
    Case("a v3 report without the int8 tier", _no_int8, error=e.ConformanceInvalid,
         message="the report runs no model of the int8 tier: every lane runs every tier, so a "
                 "report covers each", where=f"{C}: models"),
    Case("a v2 report without the int8 tier", _both(_v2, _no_int8), error=e.ConformanceInvalid,
         message="the report runs no model of the int8 tier: every lane runs every tier, so a "
                 "report covers each", where=f"{C}: models"),
    # a downgrade: required engines are judged on v3 token ids only
    Case("a v2 report with an engine required", _v2, require=("node",),
         error=e.ConformanceDowngrade,
         message=f"engines node are required, and the report is a {V2}: {DOWNGRADE}",
         where=f"{C}: schema"),
    Case("a v1 report with engines required", _v1, require=("node", "chromium"),
         error=e.ConformanceDowngrade,
         message=f"engines node, chromium are required, and the report is a {V1}: {DOWNGRADE}",
         where=f"{C}: schema"),
    # of another release
    Case("another version", lambda d: d.update(release_version="1.2.4"),
         error=e.ConformanceMismatch,
         message=f"report is of 1.2.4 at {'a' * 12}, the manifest of {VERSION} at {'a' * 12}",
         where=f"{C}: release_version"),
    Case("another revision", lambda d: d.update(source_revision="f" * 40),
         error=e.ConformanceMismatch,
         message=f"report is of {VERSION} at {'f' * 12}, the manifest of {VERSION} at "
                 f"{'a' * 12}", where=f"{C}: release_version"),
    Case("a v1 report of another version", _both(_v1, lambda d: d.update(release_version="1.0.0")),
         error=e.ConformanceMismatch,
         message=f"report is of 1.0.0 at {'a' * 12}, the manifest of {VERSION} at {'a' * 12}",
         where=f"{C}: release_version"),
    # hollow or ambiguous rows
    Case("no cases declared", lambda d: d["cases"].update(count=0), error=e.ConformanceInvalid,
         message="the report declares no cases: a pass of nothing is no evidence",
         where=f"{C}: cases.count"),
    Case("an unknown engine", _set("wasmtime", engine="netscape"), error=e.ConformanceInvalid,
         message="row netscape/scalar [f32]: unknown engine 'netscape'",
         where=f"{C}: rows[4].engine"),
    Case("a row twice", lambda d: d["rows"].append(_row("node", "simd128", "int8")),
         error=e.ConformanceMismatch,
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
         message="row node/scalar [f32]: not a tinyrustlm.capability-receipt.v2: schema: Input "
                 "should be 'tinyrustlm.capability-receipt.v2'",
         where=f"{C}: rows[2].receipt.schema"),
    Case("a receipt with a bool for a number",
         _receipt("node", lambda r: r["observed"].update(workers_started=True)),
         error=e.ConformanceInvalid,
         message="row node/scalar [f32]: not a tinyrustlm.capability-receipt.v2: "
                 "observed.workers_started: Input should be a valid integer",
         where=f"{C}: rows[2].receipt.observed.workers_started"),
    # receipts published before the relaxed lanes (v1, no relaxed_simd) are still read
    Case("a v1 receipt",
         _receipt("node", lambda r: _as_v1(r)),
         verdict="14 rows, 14 pass, tiers f32/int8"),
    Case("a v1 receipt with v2's relaxed_simd",
         _receipt("node", lambda r: r.update(schema=RECEIPT_V1)),
         error=e.ConformanceInvalid,
         message="row node/scalar [f32]: not a tinyrustlm.capability-receipt.v1: "
                 "relaxed_simd: Extra inputs are not permitted",
         where=f"{C}: rows[2].receipt.relaxed_simd"),
    Case("a v2 receipt without relaxed_simd",
         _receipt("node", lambda r: r.pop("relaxed_simd")),
         error=e.ConformanceInvalid,
         message="row node/scalar [f32]: not a tinyrustlm.capability-receipt.v2: "
                 "relaxed_simd: Field required",
         where=f"{C}: rows[2].receipt.relaxed_simd"),
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
         _both(_fail("node"),
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
    Case("an f32 receipt on an int8 row",
         _receipt("node", lambda r: r["selection"].update(numerical_mode="strict-f32-v1"),
                  tier="int8"),
         error=e.ConformanceMismatch,
         message="row node/scalar [int8]: the receipt ran numerical mode 'strict-f32-v1', not "
                 "the int8 tier's 'int8-exact-v1'",
         where=f"{C}: rows[8].receipt.selection.numerical_mode"),
    Case("an int8 receipt on an f32 row",
         _receipt("chromium", lambda r: r["selection"].update(numerical_mode="int8-exact-v1")),
         error=e.ConformanceMismatch,
         message=f"row chromium/scalar [f32]{ISO}: the receipt ran numerical mode "
                 "'int8-exact-v1', not the f32 tier's 'strict-f32-v1'",
         where=f"{C}: rows[0].receipt.selection.numerical_mode"),
    # every tier: no row of one without the other
    Case("a tier dropped for one lane",
         _drop(lambda r: (r["engine"], r["lane"], r["tier"]) == ("wasmtime", "simd128", "int8")),
         error=e.ConformanceInvalid,
         message="row wasmtime/simd128 [f32] has no int8 row: the release declares every tier, "
                 "the report drops one", where=f"{C}: rows[5]"),
    Case("an f32 row dropped (v2)",
         _both(_v2, _drop(lambda r: (r["engine"], r["tier"]) == ("native", "f32"))),
         error=e.ConformanceInvalid,
         message=f"row native/{NATIVE[0]} [int8] has no f32 row: the release declares every "
                 "tier, the report drops one", where=f"{C}: rows[12]"),
    Case("isolation is part of the row: an unisolated f32 row alone",
         _append("chromium", "scalar", ("f32",), "pass", isolated=False),
         error=e.ConformanceInvalid,
         message="row chromium/scalar [f32] (isolated=False) has no int8 row: the release "
                 "declares every tier, the report drops one", where=f"{C}: rows[{ROWS}]"),
    # v3: verdicts recomputed from the token ids (conformance_verdicts.py): the cases
    Case("fewer cases listed than counted", lambda d: d["cases"].update(
        entries=d["cases"]["entries"][:2]), error=e.ConformanceInvalid,
         message="cases.entries holds 2 cases (2 distinct ids), cases.count says 3",
         where=f"{C}: cases.entries"),
    Case("a case listed twice", lambda d: d["cases"]["entries"].__setitem__(
        2, d["cases"]["entries"][0]), error=e.ConformanceInvalid,
         message="cases.entries holds 3 cases (2 distinct ids), cases.count says 3",
         where=f"{C}: cases.entries"),
    Case("cases that are not the digest's", lambda d: d["cases"]["entries"][2].update(seed=9),
         error=e.ConformanceMismatch,
         message="cases.sha256 is not the digest of the cases the report lists",
         where=f"{C}: cases.entries"),
    # the oracle
    Case("an oracle lacking a case", _set_oracle(1, lambda o: o.pop()),
         error=e.ConformanceInvalid, message="the int8 oracle lacks case 002-greedy",
         where=f"{C}: models[1].oracle"),
    Case("an oracle out of order", _set_oracle(0, lambda o: o.reverse()),
         error=e.ConformanceInvalid,
         message="the f32 oracle is not one result per case, in order",
         where=f"{C}: models[0].oracle"),
    Case("an oracle with a case twice", _set_oracle(0, lambda o: o.append(o[2])),
         error=e.ConformanceInvalid,
         message="the f32 oracle is not one result per case, in order",
         where=f"{C}: models[0].oracle"),
    Case("an oracle that failed a case", _set_oracle(0, lambda o: o[2].update(stop="error")),
         error=e.ConformanceInvalid, message="the f32 oracle failed a case",
         where=f"{C}: models[0].oracle"),
    Case("oracle stops that are not its outputs'",
         lambda d: d["models"][1].update(oracle_stops={"eos": 1, "max-tokens": 2}),
         error=e.ConformanceMismatch,
         message="models[1].oracle_stops {'eos': 1, 'max-tokens': 2} are not its outputs' "
                 "{'max-tokens': 3}", where=f"{C}: models[1].oracle_stops"),
    Case("each tier is judged on its own oracle",
         _both(_set_oracle(1, lambda o: o[0].update(tokens="0 7 8")), _int8_first_tokens("0 7 8")),
         verdict=ALL),
    # each row: its results
    Case("a not-run row that keeps results",
         _set("wasmtime", outcome="not-run", cases_passed=0), error=e.ConformanceVerdictWrong,
         message="row wasmtime/scalar [f32] did not run but keeps or counts cases",
         where=f"{C}: rows[4].results"),
    Case("a not-run row that counts a pass", _both(_not_run("wasmtime"),
                                                   _set("wasmtime", cases_passed=1)),
         error=e.ConformanceVerdictWrong,
         message="row wasmtime/scalar [f32] did not run but keeps or counts cases",
         where=f"{C}: rows[4].results"),
    Case("a not-run row that counts a failure", _both(_not_run("wasmtime"),
                                                      _set("wasmtime", cases_failed=1)),
         error=e.ConformanceVerdictWrong,
         message="row wasmtime/scalar [f32] did not run but keeps or counts cases",
         where=f"{C}: rows[4].results"),
    Case("a row lacking a case", lambda d: _find(d, "node")["results"].pop(1),
         error=e.ConformanceInvalid, message=f"row node/scalar [f32] lacks case {SECOND}",
         where=f"{C}: rows[2].results"),
    Case("a failing row out of order", _both(_fail("chromium", "simd128"),
                                             lambda d: _find(d, "chromium", "simd128")[
                                                 "results"].reverse()),
         error=e.ConformanceInvalid,
         message=f"row chromium/simd128 [f32]{ISO} is not one result per case, in order",
         where=f"{C}: rows[1].results"),
    # each case: its failure kind, from the token ids, the RNG state and the runner's error
    Case("a pass whose tokens differ",
         lambda d: _find(d, "node")["results"][1].update(tokens="1 7 8"),
         error=e.ConformanceVerdictWrong,
         message=f"row node/scalar [f32] case {SECOND}: says pass, its token ids and RNG state "
                 "against the oracle's say mismatch",
         where=f"{C}: rows[2].results[1].failure"),
    Case("a pass whose RNG state differs",
         lambda d: _find(d, "native", NATIVE[0], "int8")["results"][2].update(
             rng_state="0x0000000000000009"),
         error=e.ConformanceVerdictWrong,
         message=f"row native/{NATIVE[0]} [int8] case 002-greedy: says pass, its token ids and "
                 "RNG state against the oracle's say mismatch",
         where=f"{C}: rows[13].results[2].failure"),
    Case("a mismatch of the oracle's own tokens",
         lambda d: _find(d, "chromium")["results"][0].update(failure="mismatch"),
         error=e.ConformanceVerdictWrong,
         message=f"row chromium/scalar [f32]{ISO} case {FIRST}: says mismatch, its token ids and "
                 "RNG state against the oracle's say pass",
         where=f"{C}: rows[0].results[0].failure"),
    Case("an error said to be a mismatch",
         _both(_fail("node", kind="error"),
               lambda d: _find(d, "node")["results"][1].update(failure="mismatch")),
         error=e.ConformanceVerdictWrong,
         message=f"row node/scalar [f32] case {SECOND}: says mismatch, its token ids and RNG "
                 "state against the oracle's say error", where=f"{C}: rows[2].results[1].failure"),
    Case("an error passed", _both(_fail("node", kind="error"),
                                  lambda d: _find(d, "node")["results"][1].update(failure=None)),
         error=e.ConformanceVerdictWrong,
         message=f"row node/scalar [f32] case {SECOND}: says pass, its token ids and RNG state "
                 "against the oracle's say error", where=f"{C}: rows[2].results[1].failure"),
    Case("a timeout said to be an error", _both(
        _fail("node", kind="timeout"),
        lambda d: _find(d, "node")["results"][1].update(failure="error")),
         verdict=f"{ROWS} rows, {ROWS - 1} pass, tiers f32/int8"),
    Case("an error without the runner's error",
         _both(_fail("node", kind="error"),
               lambda d: _find(d, "node")["results"][1].update(error=None, tokens="1 7 9")),
         error=e.ConformanceVerdictWrong,
         message=f"row node/scalar [f32] case {SECOND}: says error, its token ids and RNG state "
                 "against the oracle's say pass", where=f"{C}: rows[2].results[1].failure"),
    # each row: its verdict from its cases
    Case("a failing row that counts its failure as a pass", _fail("node", cases_passed=CASES),
         error=e.ConformanceVerdictWrong,
         message=f"row node/scalar [f32] says fail (3 passed, 1 failed, first {SECOND}); its "
                 f"cases say fail (2 passed, 1 failed, first {SECOND})",
         where=f"{C}: rows[2].outcome"),
    Case("a failing row that counts two failures", _fail("node", cases_failed=2),
         error=e.ConformanceVerdictWrong,
         message=f"row node/scalar [f32] says fail (2 passed, 2 failed, first {SECOND}); its "
                 f"cases say fail (2 passed, 1 failed, first {SECOND})",
         where=f"{C}: rows[2].outcome"),
    Case("a pass of a failing case", _both(_fail("node"), _set(
        "node", outcome="pass", cases_passed=CASES, cases_failed=0, first_failure=None)),
         error=e.ConformanceVerdictWrong,
         message=f"row node/scalar [f32] says pass (3 passed, 0 failed, first -); its cases "
                 f"say fail (2 passed, 1 failed, first {SECOND})",
         where=f"{C}: rows[2].outcome"),
    Case("a failure of passing cases", _set("wasmtime", outcome="fail", cases_passed=2,
                                            cases_failed=1, first_failure={
                                                "case": FIRST, "field": "tokens",
                                                "expected": "0 7 9", "got": "0 7 9"}),
         error=e.ConformanceVerdictWrong,
         message=f"row wasmtime/scalar [f32] says fail (2 passed, 1 failed, first {FIRST}); its "
                 "cases say pass (3 passed, 0 failed, first -)", where=f"{C}: rows[4].outcome"),
    Case("a failing row naming another first failure",
         _fail("node", first_failure={"case": FIRST, "field": "tokens", "expected": "0 7 9",
                                      "got": "0 7 8"}),
         error=e.ConformanceVerdictWrong,
         message=f"row node/scalar [f32] says fail (2 passed, 1 failed, first {FIRST}); its "
                 f"cases say fail (2 passed, 1 failed, first {SECOND})",
         where=f"{C}: rows[2].outcome"),
    Case("a failing row naming no first failure", _fail("node", first_failure=None),
         error=e.ConformanceVerdictWrong,
         message=f"row node/scalar [f32] says fail (2 passed, 1 failed, first -); its cases "
                 f"say fail (2 passed, 1 failed, first {SECOND})",
         where=f"{C}: rows[2].outcome"),
    # required engines
    Case("a required engine's failing row",
         _append("chromium", "scalar", BOTH, "fail", isolated=False, detail="token 3 differs"),
         require=("node", "chromium"), error=e.ConformanceRowFailed,
         message=f"engine chromium: 1 failing row(s) of the f32 tier, first chromium/scalar "
                 f"[f32] (isolated=False): 1 case(s) failed (first {FIRST}) token 3 differs",
         where=f"{C}: rows[{ROWS}]"),
    Case("a required engine's failing rows without a detail",
         _both(_fail("node", "simd128", "int8", kind="timeout"),
               _fail("node", "scalar", "int8", kind="error")),
         require=("node",), error=e.ConformanceRowFailed,
         message=f"engine node: 2 failing row(s) of the int8 tier, first node/scalar [int8]: "
                 f"1 case(s) failed (first {SECOND})", where=f"{C}: rows[8]"),
    Case("a required engine without a row", same, require=("chromium", "firefox"),
         error=e.ConformanceEngineMissing,
         message="engine firefox has no passing row of the f32 tier", where=C),
    Case("a required engine whose only pass is on a disabled lane",
         _drop(lambda r: (r["engine"], r["lane"]) == ("chromium", "scalar")),
         require=("chromium",), manifest={"disabled_lanes": ["simd128"]},
         error=e.ConformanceEngineMissing,
         message="engine chromium has no passing row of the f32 tier", where=C),
    Case("a required engine with only not-run rows on a tier",
         _both(_not_run("wasmtime", "scalar", "int8"), _not_run("wasmtime", "simd128", "int8")),
         require=("wasmtime",), error=e.ConformanceEngineMissing,
         message="engine wasmtime has no passing row of the int8 tier", where=C),
]
# fmt: on


def _data(case: Case) -> bytes | None:
    if case.edit is None:
        return None
    if case.raw is not None:
        return case.raw
    doc = _report()
    case.edit(doc)
    return json.dumps(doc).encode()


@pytest.mark.parametrize("case", TABLE, ids=[c.name for c in TABLE])
def test_check_conformance(case: Case) -> None:
    manifest = _manifest(**case.manifest)
    data = _data(case)
    if case.error is None:
        assert check_conformance(data, manifest, MANIFEST_SHA, case.require) == case.verdict
        return
    with pytest.raises(e.BundleRejected) as caught:
        check_conformance(data, manifest, MANIFEST_SHA, case.require)
    assert type(caught.value) is case.error
    assert (caught.value.message, caught.value.where) == (case.message, case.where)
    assert caught.value.offset == case.offset


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
    assert _index(doc, "node", "scalar", "int8") == 8
    assert _index(doc, "node", "simd128", "int8") == 9
    assert _index(doc, "native", NATIVE[0], "int8") == ROWS - 1 == 13
    assert hashlib.sha256(b"").hexdigest() not in (*LANES.values(), NATIVE[1])
    assert [c.id for c in CASE_LIST] == [FIRST, SECOND, "002-greedy"]
