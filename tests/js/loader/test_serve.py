"""`tinyrustlm-release serve`: the bundle and the example page with the right MIME types,
COOP/COEP only with --isolated, a config naming the model's SHA-256, nothing outside."""

from __future__ import annotations

import hashlib
import json
import threading
import urllib.error
import urllib.request
from argparse import Namespace
from pathlib import Path

import pytest

from pipeline import serve
from pipeline.errors import PipelineError


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    root = tmp_path / "bundle"
    (root / "js").mkdir(parents=True)
    (root / "artifacts").mkdir()
    (root / "manifest.json").write_text("{}")
    (root / "js/loader.js").write_text("export {};\n")
    (root / "artifacts/runtime.x.wasm").write_bytes(b"\0asm\1\0\0\0")
    (tmp_path / "secret.txt").write_text("outside the bundle")
    return root


def served(bundle: Path, tmp_path: Path, isolated: bool) -> tuple[str, threading.Event]:
    model = tmp_path / "m.trlm"
    model.write_bytes(b"model bytes")
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"schema": "tinyrustlm.trusted-keys.v1", "keys": []}))
    args = Namespace(bundle=bundle, isolated=isolated, port=0, trusted_keys=keys, model=model)
    server, url = serve.start(serve.site_for(args))
    stop = threading.Event()

    def stop_later() -> None:
        stop.wait()
        server.shutdown()
        server.server_close()

    threading.Thread(target=stop_later, daemon=True).start()
    return url, stop


def fetch(url: str) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(url) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), b""


@pytest.mark.parametrize(
    ("path", "ctype"),
    [
        ("", "text/html; charset=utf-8"),
        ("app.mjs", "text/javascript; charset=utf-8"),
        ("bundle/js/loader.js", "text/javascript; charset=utf-8"),
        ("bundle/artifacts/runtime.x.wasm", "application/wasm"),
        ("config.json", "application/json"),
        ("model.trlm", "application/octet-stream"),
    ],
    ids=["page", "page script", "loader", "wasm", "config", "model"],
)
def test_files_are_served_with_their_mime_type(
    bundle: Path, tmp_path: Path, path: str, ctype: str
) -> None:
    url, stop = served(bundle, tmp_path, isolated=False)
    status, headers, _ = fetch(url + path)
    stop.set()
    assert (status, headers["Content-Type"]) == (200, ctype)


@pytest.mark.parametrize("isolated", [True, False], ids=["isolated", "not isolated"])
def test_isolation_headers_only_when_asked(bundle: Path, tmp_path: Path, isolated: bool) -> None:
    url, stop = served(bundle, tmp_path, isolated)
    _, headers, _ = fetch(url)
    stop.set()
    assert headers.get("Cross-Origin-Opener-Policy") == ("same-origin" if isolated else None)
    assert headers.get("Cross-Origin-Embedder-Policy") == ("require-corp" if isolated else None)


def test_config_names_the_model_hash_and_keys(bundle: Path, tmp_path: Path) -> None:
    url, stop = served(bundle, tmp_path, isolated=False)
    _, _, body = fetch(url + "config.json")
    stop.set()
    config = json.loads(body)
    assert config["model"] == {
        "url": "model.trlm",
        "sha256": hashlib.sha256(b"model bytes").hexdigest(),
    }
    assert config["allowDevKey"] is False  # an explicit trusted-keys file: no dev key


@pytest.mark.parametrize(
    "path",
    ["bundle/../secret.txt", "bundle/%2e%2e/secret.txt", "bundle/nothing.js"],
    ids=["dotdot", "encoded", "missing"],
)
def test_nothing_outside_the_served_folders(bundle: Path, tmp_path: Path, path: str) -> None:
    url, stop = served(bundle, tmp_path, isolated=False)
    status, _, body = fetch(url + path)
    stop.set()
    assert status == 404 and b"outside" not in body


def test_a_folder_that_is_not_a_bundle_is_refused(tmp_path: Path) -> None:
    args = Namespace(bundle=tmp_path, isolated=False, port=0, trusted_keys=None, model=None)
    with pytest.raises(PipelineError, match="not a release bundle"):
        serve.site_for(args)


def test_the_example_page_loads_the_bundled_loader() -> None:
    page = serve.REPO_ROOT / serve.PAGE_DIR
    assert (page / "index.html").is_file()
    assert "from './bundle/js/loader.js'" in (page / "app.mjs").read_text()
