"""loader.js and the model's kernel tier (CONTRACT.md §1, §10): `admitModel` refuses a
format_version it does not know with `UnsupportedModelTier` before anything enters the runtime
(the runtime below is a trap that throws on any use), and lets the f32 (v1) and integer (v2)
tiers through to the runtime's own checks. node only, no build."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pipeline.toolchain import nodejs

LOADER = Path(__file__).resolve().parents[3] / "crates" / "wasm" / "js" / "loader.js"

SCRIPT = """
const { admitModel, SUPPORTED } = await import(process.argv[1]);
const trap = new Proxy({}, { get(_, key) { throw new Error(`runtime touched: ${String(key)}`); } });
const out = { tiers: SUPPORTED.modelTiers, results: {} };
for (const version of [1, 2, 3, 0]) {
  const bytes = new Uint8Array(64);
  bytes.set(new TextEncoder().encode('TRLMODEL'));
  new DataView(bytes.buffer).setUint32(8, version, true);
  try {
    await admitModel(trap, { bytes }, 16, 1 << 20);
    out.results[version] = { ok: true };
  } catch (e) {
    out.results[version] = { code: e.code || null, message: e.message };
  }
}
console.log(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def outcome() -> dict[str, object]:
    done = subprocess.run(
        [str(nodejs.executable()), "--input-type=module", "-e", SCRIPT, LOADER.as_uri()],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    doc = json.loads(done.stdout)
    assert isinstance(doc, dict)
    return doc


@pytest.mark.parametrize("version", ["3", "0"])
def test_an_unknown_tier_is_refused_before_the_runtime_is_touched(
    outcome: dict[str, object], version: str
) -> None:
    results = outcome["results"]
    assert isinstance(results, dict)
    got = results[version]
    assert got["code"] == "UnsupportedModelTier", got
    assert f"format_version {version}" in got["message"] and "1 = f32, 2 = int8" in got["message"]


@pytest.mark.parametrize("version", ["1", "2"])
def test_known_tiers_reach_the_runtime(outcome: dict[str, object], version: str) -> None:
    results = outcome["results"]
    assert isinstance(results, dict)
    assert results[version]["code"] is None, results[version]
    assert "runtime touched" in results[version]["message"]
    assert outcome["tiers"] == {"1": "f32", "2": "int8"}
