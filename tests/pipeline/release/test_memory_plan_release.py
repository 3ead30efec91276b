"""A real release's memory-plan.json (the session's `released_bundle`): signed with the rest,
and every plan in it is what the released loader plans for that lane (abi.js `planFor`, as
`load()` admits a model), and what the native runtime plans where the two can agree
(`tinyrustlm inspect-model --plan`: every part but `metadata`, whose entries are
pointer-sized)."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pipeline.modelpack import PRESETS, pack
from pipeline.toolchain import nodejs
from tests.verify.page.bundles import statement
from verify.bundle.layout import CHECKSUMS, MEMORY_PLAN, parse_checksums
from verify.bundle.memory_plan_check import read_memory_plan
from verify.formats.manifest import ModuleManifest
from verify.formats.memory_plan import PLAN_PARTS, MemoryPlanDocument

pytestmark = pytest.mark.integration

# What the loader's planFor returns, per plan: run by node over the bundle's own js/abi.js.
LOADER_PLANS = """
import { readFileSync } from 'node:fs';
const [abiPath, asksPath] = process.argv.slice(1);
const abi = await import(abiPath);
const out = [];
for (const ask of JSON.parse(readFileSync(asksPath, 'utf8'))) {
  const bytes = readFileSync(ask.wasm);
  const model = readFileSync(ask.model);
  const options = { context: ask.context, workers: ask.workers, inPlace: true };
  const p = await abi.planFor(bytes, model, options);
  out.push({
    parts: abi.PLAN_PARTS.map((n) => p.parts[n]),
    peak_load: p.peakLoad, peak_prefill: p.peakPrefill, steady_decode: p.steadyDecode,
    peak: p.peak, largest: p.largest, context: p.context,
  });
}
process.stdout.write(JSON.stringify(out));
"""


def _plan(bundle: Path) -> MemoryPlanDocument:
    return read_memory_plan((bundle / MEMORY_PLAN).read_bytes())


def _models(doc: MemoryPlanDocument, folder: Path) -> dict[str, Path]:
    paths = {}
    for m in doc.models:
        data = pack(PRESETS[m.preset], m.seed)
        assert (hashlib.sha256(data).hexdigest(), len(data)) == (m.sha256, m.file_bytes)
        paths[m.preset] = folder / f"{m.preset}.trlm"
        paths[m.preset].write_bytes(data)
    return paths


def test_every_release_carries_a_signed_memory_plan(released_bundle: Path) -> None:
    data = (released_bundle / MEMORY_PLAN).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    subjects = {s["name"]: s["digest"]["sha256"] for s in statement(released_bundle)["subject"]}
    assert subjects[MEMORY_PLAN] == digest
    sums = parse_checksums((released_bundle / CHECKSUMS).read_bytes())
    assert sums is not None and sums[MEMORY_PLAN] == digest
    manifest = ModuleManifest.model_validate_json((released_bundle / "manifest.json").read_bytes())
    doc = _plan(released_bundle)
    assert (doc.release_version, doc.source_revision) == (
        manifest.version,
        manifest.source_revision,
    )
    assert doc.lanes() == [a.id for a in manifest.artifacts]
    assert [(m.preset, m.seed) for m in doc.models] == [("bench", 7), ("small", 7)]
    for lane in doc.lanes():
        threads = "threads" in lane
        got = sorted((p.model, p.workers, p.context) for p in doc.plans if p.lane == lane)
        workers = 2 if threads else 0
        want = [("bench", 128), ("bench", 512), ("small", 128), ("small", 256)]
        assert got == sorted((m, workers, c) for m, c in want), lane
    # the page draws it (no "absent" sentence), one chart per lane and model
    page = (released_bundle / "report.html").read_text(encoding="utf-8")
    assert 'id="memory-absent"' not in page
    assert page.count('class="chart stacked"') == len(doc.lanes()) * len(doc.models)


def test_the_plans_are_the_loaders(released_bundle: Path, tmp_path: Path) -> None:
    doc = _plan(released_bundle)
    manifest = ModuleManifest.model_validate_json((released_bundle / "manifest.json").read_bytes())
    urls = {a.id: released_bundle / a.url for a in manifest.artifacts}
    models = _models(doc, tmp_path)
    asks = [
        {
            "wasm": str(urls[p.lane]),
            "model": str(models[p.model]),
            "context": p.context,
            "workers": p.workers,
        }
        for p in doc.plans
    ]
    (tmp_path / "asks.json").write_text(json.dumps(asks))
    abi = (released_bundle / "js" / "abi.js").resolve().as_uri()
    done = subprocess.run(
        [str(nodejs.executable()), "--input-type=module", "-e", LOADER_PLANS, "--", abi,
         str(tmp_path / "asks.json")],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    loader: list[dict[str, Any]] = json.loads(done.stdout)
    for p, want in zip(doc.plans, loader, strict=True):
        where = (p.lane, p.model, p.workers, p.context)
        assert want["context"] == p.context, where
        assert [part.bytes for part in p.parts] == want["parts"], where
        assert (p.peak_load, p.peak_prefill, p.steady_decode, p.peak, p.largest) == (
            want["peak_load"],
            want["peak_prefill"],
            want["steady_decode"],
            want["peak"],
            want["largest"],
        ), where


def test_the_plans_are_the_native_runtimes_where_comparable(
    released_bundle: Path, tmp_path: Path
) -> None:
    doc = _plan(released_bundle)
    manifest = ModuleManifest.model_validate_json((released_bundle / "manifest.json").read_bytes())
    native = next(a for a in manifest.native_artifacts if a.id == "x86_64-unknown-linux-gnu")
    cli = released_bundle / native.url
    models = _models(doc, tmp_path)
    comparable = [n for n in PLAN_PARTS if n != "metadata"]
    for p in doc.plans:
        done = subprocess.run(
            [str(cli), "inspect-model", str(models[p.model]), "--plan", "--context",
             str(p.context), "--workers", str(p.workers), "--json"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        want = json.loads(done.stdout)
        where = (p.lane, p.model, p.workers, p.context)
        assert {n: p.part(n) for n in comparable} == {n: want["parts"][n] for n in comparable}, (
            where
        )
        assert p.largest == want["largest_part"], where
        # metadata differs only by pointer width: the peaks by exactly that difference
        delta = p.part("metadata") - want["parts"]["metadata"]
        assert p.peak == want["peak_bytes"] + delta, where
