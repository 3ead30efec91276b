"""The loader's model download retries with backoff and resumes by range (issue 36), against a
real local server that fails the first N requests: `openResumable` (fetch.js, what the model
download opens) drained as the loader drains the model (hashed while it streams). Bounded: a
server that always fails is given up after MODEL_RETRY.attempts; a 404 is not retried; a short
body, once no try is left, ends (the hash refuses it, as before) and a body that keeps breaking
off is a FetchFailed."""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.toolchain import nodejs
from tests.harness.flaky_http import BODY, Script, flaky_server

JS = Path(__file__).resolve().parents[3] / "crates/wasm/js"
NODE_TIMEOUT_SECONDS = 60
ATTEMPTS = 4  # fetch.js MODEL_RETRY.attempts

_SCRIPT = """
const [js, url, size] = process.argv.slice(1);
const { openResumable, drain, MODEL_RETRY } = await import(`${js}/fetch.js`);
const waits = [];
const sleep = async (ms) => { waits.push(ms); };
const o = { fetch: (u, init) => globalThis.fetch(u, init), onProgress: null };
const out = { waits, retry: MODEL_RETRY };
try {
  const source = await openResumable(o, new URL(url), 'model', Number(size), sleep);
  const limit = Number(size);
  const got = await drain(o, source, { what: 'model', url, limit, phase: 'model', total: limit });
  Object.assign(out, { sha256: got.sha256, length: got.length });
} catch (e) { out.error = e.code || String(e); out.message = e.message; }
process.stdout.write(JSON.stringify(out));
"""


@pytest.fixture
def server() -> Iterator[tuple[str, Script]]:
    with flaky_server() as served:
        yield served


def _download(url: str, size: int = len(BODY)) -> dict[str, Any]:
    done = subprocess.run(
        [str(nodejs.executable()), "--input-type=module", "-e", _SCRIPT, "--",
         JS.as_uri(), url, str(size)],
        capture_output=True, text=True, timeout=NODE_TIMEOUT_SECONDS, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout)
    assert result["retry"]["attempts"] == ATTEMPTS
    return result


SHA = hashlib.sha256(BODY).hexdigest()


@pytest.mark.parametrize(
    ("mode", "failures"),
    [("ok", 0), ("503", 1), ("503", 3), ("break", 1), ("break", 3), ("no-range", 1)],
    ids=["no failure", "one 503", "three 503s", "one break", "three breaks", "no range support"],
)
def test_the_model_download_is_retried_and_resumed(
    server: tuple[str, Script], mode: str, failures: int
) -> None:
    url, script = server
    script.mode, script.failures = mode, failures
    got = _download(url)
    assert (got.get("error"), got["sha256"], got["length"]) == (None, SHA, len(BODY)), got
    assert len(script.seen) == failures + 1
    assert got["waits"] == [250, 500, 1000][:failures]  # doubling waits
    if mode == "break":  # every resume asks for the rest only
        assert script.seen[0] is None
        assert all(r and r.startswith("bytes=") and r != "bytes=0-" for r in script.seen[1:])


def test_a_server_that_always_fails_is_given_up(server: tuple[str, Script]) -> None:
    url, script = server
    script.mode, script.failures = "503", 1000
    got = _download(url)
    assert got["error"] == "FetchFailed" and "HTTP 503" in got["message"]
    assert (len(script.seen), got["waits"]) == (ATTEMPTS, [250, 500, 1000])


def test_a_404_is_not_retried(server: tuple[str, Script]) -> None:
    url, script = server
    script.mode = "404"
    got = _download(url)
    assert (got["error"], len(script.seen), got["waits"]) == ("FetchFailed", 1, [])


def test_a_wrong_range_answer_is_refused(server: tuple[str, Script]) -> None:
    url, script = server
    script.mode, script.failures = "bad-range", 1
    got = _download(url)
    assert got["error"] == "FetchFailed" and "asked for bytes" in got["message"]


def test_a_body_that_always_breaks_off_is_given_up(server: tuple[str, Script]) -> None:
    url, script = server
    script.mode, script.failures = "break", 1000
    got = _download(url)
    # each try brings half of what is left; once no try is left the break is the error
    assert got["error"] == "FetchFailed" and "broke off after" in got["message"], got
    assert (len(script.seen), got["waits"]) == (ATTEMPTS, [250, 500, 1000])


def test_the_loader_opens_the_model_download_with_it() -> None:
    """The wiring: a model that is not in the store is opened by openResumable (fetch.js)."""
    fetch = (JS / "fetch.js").read_text(encoding="utf-8")
    body = fetch[fetch.index("async function modelSource(") :].split("\n}\n", 1)[0]
    assert "return openResumable(o, model.url, 'model', model.size);" in body
    assert "open(o" not in body.replace("openResumable(o", "")
