"""sha256.js's claim holds (issue 36): the loader compares its streaming SHA-256 with
crypto.subtle.digest once before it trusts a streamed hash, and refuses (`HashSelfCheck`)
when they differ, before reading the body; without crypto.subtle the check says so."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pipeline.toolchain import nodejs

JS = Path(__file__).resolve().parents[3] / "crates/wasm/js"
NODE_TIMEOUT_SECONDS = 60

# `lie`: crypto.subtle.digest answers a wrong digest in this process before the first hash.
_SCRIPT = """
const [js, lie] = process.argv.slice(1);
if (lie === 'lie') {
  const zeros = async () => new ArrayBuffer(32);
  Object.defineProperty(globalThis.crypto.subtle, 'digest', { value: zeros });
}
const sha = await import(`${js}/sha256.js`);
const { drain } = await import(`${js}/fetch.js`);
const { modelSpec } = await import(`${js}/session.js`);
const out = {};
try {
  out.real = await sha.checkSha256Against(globalThis.crypto.subtle);
} catch (e) { out.real = e.message; }
out.none = await sha.checkSha256Against(undefined);
try {
  await sha.checkSha256Against({ digest: async () => new ArrayBuffer(32) });
  out.fake = 'accepted';
} catch (e) { out.fake = e.message; }
let reads = 0, cancelled = false;
const source = {
  length: 3,
  read: async () => (reads++ ? { done: true } : { done: false, value: new Uint8Array([1, 2, 3]) }),
  cancel: () => { cancelled = true; },
};
const opts = { onProgress: null };
try {
  const got = await drain(opts, source, { what: 'model', url: 'm', limit: 10, phase: 'model' });
  out.drain = got.sha256;
} catch (e) { out.drain = e.code; }
out.reads = reads;
out.cancelled = cancelled;
try {
  const bytes = new Uint8Array([1, 2, 3]);
  const sha256 = '039058c6f2c0cb492c533b0a4d14ef77cc0f78abccced5287d84a1a2011cfb81';
  await modelSpec({ model: { sha256, bytes } }, null);
  out.bytes = 'accepted';
} catch (e) { out.bytes = e.code; }
process.stdout.write(JSON.stringify(out));
"""

ABC123 = "039058c6f2c0cb492c533b0a4d14ef77cc0f78abccced5287d84a1a2011cfb81"  # SHA-256 of 01 02 03


def _run(lie: bool) -> dict[str, Any]:
    done = subprocess.run(
        [str(nodejs.executable()), "--input-type=module", "-e", _SCRIPT, "--",
         JS.as_uri(), "lie" if lie else "truth"],
        capture_output=True, text=True, timeout=NODE_TIMEOUT_SECONDS, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize("lie", [False, True], ids=["webcrypto-agrees", "webcrypto-disagrees"])
def test_the_streaming_hash_is_checked_against_webcrypto_once(lie: bool) -> None:
    got = _run(lie)
    assert got["none"] == "unavailable"
    assert got["fake"].startswith("the streaming SHA-256 gives "), got
    if not lie:
        assert (got["real"], got["drain"], got["reads"], got["bytes"]) == (
            "checked",
            ABC123,
            2,
            "accepted",
        )
        return
    # the engine's digest disagrees: nothing streamed or handed over is trusted
    assert got["real"].startswith("the streaming SHA-256 gives "), got
    assert (got["drain"], got["reads"], got["cancelled"], got["bytes"]) == (
        "HashSelfCheck",
        0,
        True,
        "HashSelfCheck",
    )
