"""The shipped JS host in real headless Chromium: every Wasm lane of a real release.

A local server (127.0.0.1 only) serves the bundle beside a test page; the page instantiates each
lane with `js/host.js`, checks each module against the manifest's SHA-256, runs its self-test and
posts the outcome back. With COOP/COEP the threads lanes run on two workers; without them the
host must refuse them while the other lanes still run. Chromium runs relaxed SIMD: the relaxed
lanes' self-tests (the integer tier's extreme codes among them) pass on its native semantics.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pipeline.conformance.browsers import CHROMIUM_FLAGS

pytestmark = pytest.mark.integration

PAGE = Path(__file__).parent / "page"
CHROMIUM = shutil.which("chromium")
# the harness's one list: no sandbox as root, no background traffic off this host
FLAGS = list(CHROMIUM_FLAGS)
TIMEOUT_SECONDS = 90
SINGLE = ["scalar-wasm32", "simd128-wasm32", "relaxed-simd128-wasm32"]
THREADS = ["simd128-threads-wasm32", "relaxed-simd128-threads-wasm32"]
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)"
)


class Server(ThreadingHTTPServer):
    isolated: bool
    results: list[dict[str, Any]]
    got: threading.Event


class Handler(SimpleHTTPRequestHandler):
    server: Server

    def end_headers(self) -> None:
        if self.server.isolated:
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.results.append(json.loads(body))
        self.server.got.set()
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def site(released_bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("site")
    shutil.copytree(released_bundle, root, dirs_exist_ok=True)
    for page_file in PAGE.iterdir():
        shutil.copy(page_file, root / page_file.name)
    return root


def _run_page(site: Path, isolated: bool, tmp_path: Path) -> dict[str, Any]:
    def handler(*args: Any) -> Handler:
        return Handler(*args, directory=str(site))

    server = Server(("127.0.0.1", 0), handler)
    server.isolated, server.results, server.got = isolated, [], threading.Event()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/index.html"
    browser = subprocess.Popen(
        [str(CHROMIUM), *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", url],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert server.got.wait(TIMEOUT_SECONDS), "the page reported nothing in time"
        return server.results[0]
    finally:
        browser.kill()
        browser.wait()
        server.shutdown()
        server.server_close()


@needs_chromium
def test_every_lane_runs_in_a_cross_origin_isolated_page(site: Path, tmp_path: Path) -> None:
    result = _run_page(site, isolated=True, tmp_path=tmp_path)
    assert "error" not in result, result
    assert result["cross_origin_isolated"] is True
    lanes = {lane["lane"]: lane for lane in result["lanes"]}
    assert sorted(lanes) == sorted([*SINGLE, *THREADS])
    for lane in lanes.values():
        assert lane["instantiated"] and lane["self_test"] == 0, lane
    assert lanes["scalar-wasm32"]["simd_calls"] == 0 < lanes["scalar-wasm32"]["scalar_calls"]
    for simd in SINGLE[1:]:
        assert lanes[simd]["simd_calls"] > 0
    for name in THREADS:
        threads = lanes[name]
        assert threads["simd_calls"] > 0
        assert (threads["workers"], threads["participating"]) == (2, [0, 1])


@needs_chromium
def test_without_isolation_the_threads_lane_is_refused_and_the_others_run(
    site: Path, tmp_path: Path
) -> None:
    result = _run_page(site, isolated=False, tmp_path=tmp_path)
    assert result["cross_origin_isolated"] is False
    lanes = {lane["lane"]: lane for lane in result["lanes"]}
    for name in THREADS:
        refused = lanes[name]
        assert refused["instantiated"] is False
        assert "cross-origin isolated" in refused["error"]
    for name in SINGLE:
        assert lanes[name]["self_test"] == 0
