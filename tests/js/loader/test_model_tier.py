"""The loader and the model's kernel tier (CONTRACT.md §1, §10): step 8 (`admitAndLoad`,
session.js) refuses a format_version it does not know with `UnsupportedModelTier` on the
header, before anything enters the runtime (the runtime below is a trap that throws on any use)
and, for a streamed model, before more than its header is read; the f32 (v1) and integer (v2)
tiers, and a header without the model magic (no model of any tier: ModelInvalid from the
runtime), go on to the runtime's own checks. `SUPPORTED.modelTiers` is the generated MODEL_TIERS
(crates/core/src/model.rs). node only, no build."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pipeline.toolchain import nodejs

JS = Path(__file__).resolve().parents[3] / "crates" / "wasm" / "js"

SCRIPT = """
const { SUPPORTED } = await import(process.argv[1]);
const { admitAndLoad } = await import(process.argv[2]);
const trap = new Proxy({}, { get(_, key) { throw new Error(`runtime touched: ${String(key)}`); } });
const header = (version, magic = 'TRLMODEL') => {
  const bytes = new Uint8Array(64);
  bytes.set(new TextEncoder().encode(magic));
  new DataView(bytes.buffer).setUint32(8, version, true);
  return bytes;
};
const sha256 = '0'.repeat(64);
const budget = () => 1 << 22;
const o1 = { context: 16 };
const outcome = async (fn) => {
  try {
    await fn();
    return { ok: true };
  } catch (e) {
    return { code: e.code || null, message: e.message };
  }
};
const out = { tiers: SUPPORTED.modelTiers, bytes: {}, streamed: {} };
for (const version of [1, 2, 3, 0]) {
  // the model given as bytes
  const bytes = header(version);
  const model = { bytes, size: bytes.length, sha256, record: {} };
  out.bytes[version] = await outcome(() => admitAndLoad(o1, trap, null, model, budget));
  // the model streamed: its 64-byte header, then 1 MiB more that a refusal never asks for
  let pulls = 0;
  let cancelled = false;
  const body = new ReadableStream({
    pull(controller) {
      pulls += 1;
      controller.enqueue(pulls === 1 ? header(version) : new Uint8Array(1 << 20));
    },
    cancel() { cancelled = true; },
  }, { highWaterMark: 0 });
  const o = { context: 16, onProgress: null, fetch: async () => new Response(body) };
  const url = new URL('https://example.invalid/m.trlm');
  const streamed = { bytes: null, url, size: 64 + (1 << 20), sha256, record: {}, cached: false };
  const r = await outcome(() => admitAndLoad(o, trap, null, streamed, budget));
  out.streamed[version] = { ...r, pulls, cancelled };
}
// no model at all (no magic; /dev/zero reads as zeros): the runtime's check, not a tier
out.noMagic = {};
for (const magic of ['', 'TRLMODEX']) {
  const bytes = header(3, magic);
  const model = { bytes, size: bytes.length, sha256, record: {} };
  out.noMagic[magic] = await outcome(() => admitAndLoad(o1, trap, null, model, budget));
}
console.log(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def outcome() -> dict[str, Any]:
    done = subprocess.run(
        [
            str(nodejs.executable()),
            "--input-type=module",
            "-e",
            SCRIPT,
            (JS / "loader.js").as_uri(),
            (JS / "session.js").as_uri(),
        ],
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
    outcome: dict[str, Any], version: str
) -> None:
    for how in ("bytes", "streamed"):
        got = outcome[how][version]
        assert got["code"] == "UnsupportedModelTier", (how, got)
        assert f"format_version {version}" in got["message"], got
        assert "1 = f32, 2 = int8" in got["message"], got


@pytest.mark.parametrize("version", ["3", "0"])
def test_a_streamed_model_of_an_unknown_tier_is_not_downloaded_past_its_header(
    outcome: dict[str, Any], version: str
) -> None:
    got = outcome["streamed"][version]
    assert got["pulls"] == 1 and got["cancelled"] is True, got


@pytest.mark.parametrize("version", ["1", "2"])
def test_known_tiers_reach_the_runtime(outcome: dict[str, Any], version: str) -> None:
    for how in ("bytes", "streamed"):
        got = outcome[how][version]
        assert got["code"] is None, (how, got)
        assert "runtime touched" in got["message"], (how, got)


@pytest.mark.parametrize("magic", ["", "TRLMODEX"])
def test_a_header_without_the_magic_is_no_tier_but_the_runtimes_to_refuse(
    outcome: dict[str, Any], magic: str
) -> None:
    got = outcome["noMagic"][magic]
    assert got["code"] is None and "runtime touched" in got["message"], got


def test_the_known_tiers_are_the_runtimes(outcome: dict[str, Any]) -> None:
    """SUPPORTED.modelTiers is constants.js's MODEL_TIERS (generated from model.rs)."""
    assert outcome["tiers"] == {"1": "f32", "2": "int8"}
