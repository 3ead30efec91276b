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
from tests.js.loader.site import SIMD_LANE, THREADS_LANE
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


def shown(bundle: Path, keys: Path, isolated: bool, prompt: str, profile: Path) -> dict[str, Any]:
    args = Namespace(bundle=bundle, isolated=isolated, port=0, trusted_keys=keys, model=None)
    site = serve.site_for(args)
    # the bundle's own development key, which the page then allows (serve's default role)
    site.overrides["/config.json"] = serve.page_config(
        keys.read_bytes(), True, json.loads(site.overrides["/config.json"])["model"]["sha256"]
    )
    server, url = serve.start(site)
    page = Page(str(CHROMIUM), FLAGS, profile, f"{url}?prompt={prompt}")
    try:
        page.attach()
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
    finally:
        page.close()
        server.shutdown()
        server.server_close()


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
@pytest.mark.parametrize(
    ("isolated", "lane"),
    [(True, THREADS_LANE), (False, SIMD_LANE)],
    ids=["isolated", "not isolated"],
)
def test_the_example_page_shows_lane_receipt_and_tokens(
    loader_bundle: tuple[Path, Path],
    golden: dict[str, Any],
    tmp_path: Path,
    isolated: bool,
    lane: str,
) -> None:
    bundle, key = loader_bundle
    state = shown(
        bundle,
        key.parent / "development.trusted-keys.json",
        isolated,
        golden["prompt"],
        tmp_path / "profile",
    )
    assert state["status"].startswith("ready in"), state["status"]
    assert state["lane"] == lane
    receipt = check_receipt(json.loads(state["receipt"]))
    assert receipt.module.artifact_id == lane
    assert "tokens/s" in state["speed"]
    expected = "".join(chr(t) if t < 128 else "" for t in golden["tokens"])
    assert all(c in state["tokens"] for c in expected if c.isalnum())
