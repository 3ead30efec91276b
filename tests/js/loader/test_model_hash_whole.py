"""The model's SHA-256 at native speed (issue 33, item 7) with a real lane in node: a streamed
model lands in Wasm memory and is hashed there whole by crypto.subtle.digest (one call over
exactly the model's bytes), a model handed over as bytes likewise; without crypto.subtle the
streaming hash does it. Either way a wrong hash is refused (HashMismatch) before tr_model_load
sees a byte, and the right one loads.

The lane is built once per session from a clean clone of HEAD (only `simd128-wasm32`: its
memory is the loader's own, not shared; the shared case is the unit tests' and the Chromium
loader tests')."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pipeline.modelpack import PRESETS, pack
from pipeline.toolchain import nodejs
from tests.clones import clone_head, run_build

pytestmark = pytest.mark.integration
JS = Path(__file__).resolve().parents[3] / "crates/wasm/js"
LANE = "simd128-wasm32"
NODE_TIMEOUT_SECONDS = 120

# argv: js folder URL, module path, model path, expected sha256, how ('url' | 'bytes'),
# subtle ('webcrypto' | 'none'). Prints { code | handle, modelLoads, digests: [byte lengths] }.
_SCRIPT = """
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
const [js, wasm, modelPath, sha256, how, subtle] = process.argv.slice(1);
const host = await import(`${js}/host.js`);
const session = await import(`${js}/session.js`);
const { defaultFetch } = await import(`${js}/fetch.js`);
const { stats } = await import(`${js}/errors.js`);
const rt = await host.instantiate({ bytes: readFileSync(wasm) });
// the selfcheck (once, small inputs) runs first: only the digests of the model count
const sha = await import(`${js}/sha256.js`);
await sha.sha256SelfCheck();
const digests = [];
const real = globalThis.crypto.subtle.digest.bind(globalThis.crypto.subtle);
if (subtle === 'none') Object.defineProperty(globalThis, 'crypto', { value: undefined });
else {
  const counted = async (a, d) => { digests.push(d.byteLength); return real(a, d); };
  Object.defineProperty(globalThis.crypto.subtle, 'digest', { value: counted });
}
const size = readFileSync(modelPath).length;
const model = how === 'bytes'
  ? { sha256, bytes: readFileSync(modelPath) }
  : { sha256, url: pathToFileURL(modelPath).href, size };
const pageUrl = pathToFileURL(modelPath).href;
const o = { model, pageUrl, fetch: defaultFetch, onProgress: null, onCacheError: null, context: 0 };
const out = {};
try {
  const spec = await session.modelSpec(o, null);
  const got = await session.admitAndLoad(o, rt, null, spec, () => 1 << 30);
  out.handle = String(got.handle);
} catch (e) { out.code = e.code ?? String(e); out.message = String(e.message); }
out.modelLoads = stats.modelLoads;
out.digests = digests;
out.size = size;
process.stdout.write(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def lane_module(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not Path("/usr/bin/rustc").exists():
        pytest.skip("pinned toolchain not installed: run `tinyrustlm-release toolchain install`")
    clone = clone_head(tmp_path_factory.mktemp("hash") / "tinyrustlm")
    done = run_build(clone, lanes=[LANE])
    assert done.returncode == 0, done.stderr[-4000:]
    index = json.loads((clone / "build/index.json").read_text())
    artifact = next(str(lane["artifact"]) for lane in index["lanes"] if lane["lane"] == LANE)
    return clone / artifact


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("model") / "model.trlm"
    path.write_bytes(pack(PRESETS["small"], 7))
    return path


def _load(module: Path, model: Path, sha256: str, how: str, subtle: str) -> dict[str, Any]:
    done = subprocess.run(
        [str(nodejs.executable()), "--input-type=module", "-e", _SCRIPT, "--",
         JS.as_uri(), str(module), str(model), sha256, how, subtle],
        capture_output=True, text=True, timeout=NODE_TIMEOUT_SECONDS, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize("how", ["url", "bytes"])
@pytest.mark.parametrize("subtle", ["webcrypto", "none"])
def test_the_right_model_loads_hashed_whole_by_webcrypto_where_there_is_one(
    lane_module: Path, model: Path, how: str, subtle: str
) -> None:
    sha256 = hashlib.sha256(model.read_bytes()).hexdigest()
    got = _load(lane_module, model, sha256, how, subtle)
    assert "code" not in got, got
    assert got["modelLoads"] == 1
    # one digest over exactly the model (in Wasm memory, or as handed over); none without subtle
    assert got["digests"] == ([got["size"]] if subtle == "webcrypto" else []), got


@pytest.mark.parametrize("how", ["url", "bytes"])
@pytest.mark.parametrize("subtle", ["webcrypto", "none"])
@pytest.mark.parametrize("wrong", ["another file", "one bit"])
def test_a_wrong_hash_is_refused_before_tr_model_load(
    lane_module: Path, model: Path, how: str, subtle: str, wrong: str
) -> None:
    right = hashlib.sha256(model.read_bytes()).digest()
    if wrong == "one bit":
        sha256 = bytes([right[0] ^ 1, *right[1:]]).hex()
    else:
        sha256 = hashlib.sha256(b"not the model").hexdigest()
    got = _load(lane_module, model, sha256, how, subtle)
    assert got.get("code") == "HashMismatch", got
    assert got["modelLoads"] == 0, got
    assert got["digests"] == ([got["size"]] if subtle == "webcrypto" else []), got
