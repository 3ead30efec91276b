"""A signed report's receipts hold nothing of the builder's machine (pipeline/conformance/
portable.py), and the verifier's tier -> numerical mode table is the loader's."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from pipeline.conformance.portable import portable_receipt
from verify.formats.conformance import TIER_NUMERICAL_MODES
from verify.placeholders import absolute_paths_outside

REPO_ROOT = Path(__file__).resolve().parents[3]
WASM = "artifacts/runtime.scalar-wasm32.0123456789abcdef.wasm"
URLS = ["manifest.json", "js/loader.js", WASM]


def _receipt(url: str) -> dict[str, Any]:
    return {
        "created_utc": "2026-12-03T11:19:42.123Z",
        "module": {"artifact_id": "scalar-wasm32"},
        "fetched": [
            {"what": "module scalar-wasm32", "url": url, "sha256": "a" * 64, "size": 1},
            {"what": "model", "url": "model.bytes", "sha256": "b" * 64, "size": 2},
        ],
    }


# where the builder's loader fetched the module from
BUILDER_URLS = {
    "node (a temporary folder)": f"file:///tmp/tinyrustlm-conformance-x/node-y/{WASM}",
    "a browser (the page server's port)": f"http://127.0.0.1:41234/{WASM}",
    "already a bundle path": WASM,
}


@pytest.mark.parametrize("url", BUILDER_URLS.values(), ids=BUILDER_URLS.keys())
def test_a_receipt_is_the_same_on_every_builder(url: str) -> None:
    out = portable_receipt(_receipt(url), URLS, 86400)
    assert out is not None
    assert out["fetched"][0]["url"] == WASM
    assert out["fetched"][1]["url"] == "model.bytes"
    assert out["created_utc"] == "1970-01-02T00:00:00Z"
    assert out["module"] == {"artifact_id": "scalar-wasm32"}  # nothing else changes
    assert absolute_paths_outside(out) == []
    assert portable_receipt(None, URLS, 0) is None


def test_a_url_of_no_bundle_file_is_kept_for_the_release_to_refuse() -> None:
    out = portable_receipt(_receipt("file:///home/alice/elsewhere.wasm"), URLS, 0)
    assert out is not None
    assert next(leak.path for leak in absolute_paths_outside(out)).startswith("file:///home")


def test_the_tier_numerical_modes_are_the_loaders() -> None:
    text = (REPO_ROOT / "crates/wasm/js/receipt.js").read_text(encoding="utf-8")
    loader = dict(re.findall(r"(\w+): Object\.freeze\(\{ numericalMode: '([^']+)'", text))
    assert loader == TIER_NUMERICAL_MODES
