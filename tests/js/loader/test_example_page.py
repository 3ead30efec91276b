"""The example page (examples/browser/) as `tinyrustlm-release serve` serves it, in headless
Chromium: it shows the chosen lane, the receipt as JSON and the streamed tokens with tokens/s."""

from __future__ import annotations

import json
import shutil
import time
from argparse import Namespace
from pathlib import Path
from typing import Any

import pytest

from pipeline import serve
from tests.js.loader.cdp import Page
from tests.js.loader.checks import check_receipt
from tests.js.loader.site import RELAXED_LANE, RELAXED_THREADS_LANE
from tests.js.loader.test_loader_chromium import FLAGS

pytestmark = pytest.mark.integration
CHROMIUM = shutil.which("chromium")
PAGE_SECONDS = 120
STATE = (
    "JSON.stringify({status: document.getElementById('status').textContent, "
    "lane: document.getElementById('lane').textContent, "
    "speed: document.getElementById('speed').textContent, "
    "tokens: document.getElementById('tokens').textContent, "
    "receipt: document.getElementById('receipt').textContent})"
)


NO_SERVICE_WORKER = b"// this host serves no isolation service worker\n"


def wait_done(page: Page) -> dict[str, Any]:
    deadline = time.monotonic() + PAGE_SECONDS
    state: dict[str, Any] = {}
    while time.monotonic() < deadline:
        try:
            state = json.loads(page.evaluate(STATE) or "{}")
        except RuntimeError as exc:  # still navigating: no page context yet
            assert "execution context" in str(exc), exc
            state = {}
        if state.get("status", "").endswith("done") or "Error" in state.get("status", ""):
            return state
        time.sleep(0.5)
    raise AssertionError(f"the page did not finish: {state}")


def shown(
    bundle: Path,
    keys: Path,
    isolated: bool,
    prompt: str,
    profile: Path,
    service_worker: bool = True,
    visits: int = 1,
    offline_from: int | None = None,
) -> list[tuple[dict[str, Any], list[str]]]:
    """Each visit's final page state and the paths it requested (one browser profile)."""
    args = Namespace(bundle=bundle, isolated=isolated, port=0, trusted_keys=keys, model=None)
    site = serve.site_for(args)
    # the bundle's own development key, which the page then allows (serve's default role)
    site.overrides["/config.json"] = serve.page_config(
        keys.read_bytes(), True, site.overrides["/model.trlm"]
    )
    if not service_worker:
        site.overrides["/coi-serviceworker.js"] = NO_SERVICE_WORKER
    server, url = serve.start(site)
    page = Page(str(CHROMIUM), FLAGS, profile, f"{url}?prompt={prompt}")
    seen: list[tuple[dict[str, Any], list[str]]] = []
    try:
        page.attach()
        for visit in range(visits):
            if visit == offline_from:  # the server stops: what follows is served offline
                server.shutdown()
                server.server_close()
            if visit > 0:
                site.requests.clear()
                page.call("Page.navigate", url=f"{url}?prompt={prompt}&visit={visit}")
                time.sleep(1.0)
            state = wait_done(page)
            seen.append((state, list(site.requests)))
        return seen
    finally:
        page.close()
        server.shutdown()
        server.server_close()


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
@pytest.mark.parametrize(
    ("isolated", "service_worker", "lane"),
    [
        (True, True, RELAXED_THREADS_LANE),
        (False, True, RELAXED_THREADS_LANE),
        (False, False, RELAXED_LANE),
    ],
    ids=["isolated", "isolated by the service worker", "not isolated"],
)
def test_the_example_page_shows_lane_receipt_and_tokens(
    loader_bundle: tuple[Path, Path],
    golden: dict[str, Any],
    tmp_path: Path,
    isolated: bool,
    service_worker: bool,
    lane: str,
) -> None:
    """Without COOP/COEP headers the page's service worker (js/coi-serviceworker.js) isolates
    it after one reload, so the relaxed threads lane runs (Chromium runs relaxed SIMD); without
    the worker, the relaxed lane."""
    bundle, key = loader_bundle
    [(state, _)] = shown(
        bundle,
        key.parent / "development.trusted-keys.json",
        isolated,
        golden["prompt"],
        tmp_path / "profile",
        service_worker=service_worker,
    )
    assert state["status"].startswith("ready in"), state["status"]
    assert state["lane"] == lane
    receipt = check_receipt(json.loads(state["receipt"]))
    assert receipt.module.artifact_id == lane
    assert "tokens/s" in state["speed"]
    expected = "".join(chr(t) if t < 128 else "" for t in golden["tokens"])
    assert all(c in state["tokens"] for c in expected if c.isalnum())


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
def test_a_second_visit_fetches_no_module_and_no_model(
    loader_bundle: tuple[Path, Path], golden: dict[str, Any], tmp_path: Path
) -> None:
    """The content-addressed cache: the second visit's receipt says `hit` for the module and
    the model, and the server saw no request for either."""
    bundle, key = loader_bundle
    visits = shown(
        bundle,
        key.parent / "development.trusted-keys.json",
        True,
        golden["prompt"],
        tmp_path / "profile",
        visits=2,
    )
    (first, first_requests), (second, second_requests) = visits
    assert [f["cache"] for f in json.loads(first["receipt"])["fetched"]] == ["stored", "stored"]
    assert [f["cache"] for f in json.loads(second["receipt"])["fetched"]] == ["hit", "hit"]
    assert any(p.endswith(".wasm") for p in first_requests) and "/model.trlm" in first_requests
    assert not any(p.endswith(".wasm") or p == "/model.trlm" for p in second_requests), (
        second_requests
    )
    assert second["status"].endswith("done") and second["tokens"] == first["tokens"]


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
@pytest.mark.parametrize(
    "isolated", [False, True], ids=["isolated by the service worker", "server-sent COOP/COEP"]
)
def test_with_the_server_stopped_the_page_still_loads(
    loader_bundle: tuple[Path, Path], golden: dict[str, Any], tmp_path: Path, isolated: bool
) -> None:
    """Offline: the service worker keeps the page, its scripts and the signed manifest, the
    loader's store the module and the model; the third visit, with the server stopped, runs.
    Also when the host itself sends COOP/COEP (`serve --isolated`): the worker is registered
    there too, only for its offline copies."""
    bundle, key = loader_bundle
    visits = shown(
        bundle,
        key.parent / "development.trusted-keys.json",
        isolated,
        golden["prompt"],
        tmp_path / "profile",
        visits=3,
        offline_from=2,
    )
    (first, _), _, (offline, requests) = visits
    assert requests == []  # nothing reached a server
    assert offline["status"].endswith("done"), offline["status"]
    assert offline["lane"] == RELAXED_THREADS_LANE  # still isolated (the worker's headers, offline)
    assert [f["cache"] for f in json.loads(offline["receipt"])["fetched"]] == ["hit", "hit"]
    assert offline["tokens"] == first["tokens"]
