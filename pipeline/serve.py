"""`tinyrustlm-release serve BUNDLE [--isolated] [--port N] [--trusted-keys FILE] [--model FILE]`.

Serves a release bundle and the example page (examples/browser/) on 127.0.0.1 so the loader
can be tried in a browser: the page at `/`, the bundle under `/bundle/`, the model at
`/model.trlm` and `/config.json` telling the page its trusted keys, whether the development
key is allowed, and the model's URL and SHA-256. `--isolated` sends COOP/COEP (and CORP) so
the page is cross-origin isolated and may run the threads lane. Correct MIME types matter:
browsers refuse ES modules not served as JavaScript and stream-compile only application/wasm.

The `Site` server is also what the loader tests run (tests/js/loader/), with per-path overrides.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import posixpath
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from pipeline.documents.keys import DEV_KEY_DIR, DEV_KEY_NAME
from pipeline.errors import PipelineError
from pipeline.modelpack import PRESETS, pack

REPO_ROOT = Path(__file__).resolve().parent.parent
PAGE_DIR = Path("examples/browser")
DEFAULT_PRESET, DEFAULT_SEED = "small", 7
MIME_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".json": "application/json",
    ".wasm": "application/wasm",
    ".css": "text/css; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
}
ISOLATION_HEADERS = (
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Cross-Origin-Embedder-Policy", "require-corp"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
)
# A stalled response is held this long at most (a test of a worker that never starts).
STALL_SECONDS = 120.0

# An override: bytes to serve instead of the file, or STALL to never answer in time.
STALL = b"\0stall\0"
Route = tuple[str, Path]


@dataclass
class Site:
    """What one server serves: URL prefixes mapped to folders, plus exact-path overrides."""

    routes: list[Route]
    isolated: bool = False
    overrides: dict[str, bytes] = field(default_factory=dict)
    posted: list[dict[str, Any]] = field(default_factory=list)
    got_post: threading.Event = field(default_factory=threading.Event)

    def resolve(self, path: str) -> Path | None:
        """The file a URL path names, never outside its route's folder."""
        clean = posixpath.normpath(unquote(path))
        for prefix, folder in self.routes:
            if clean == prefix.rstrip("/") or clean.startswith(prefix):
                rest = clean[len(prefix) :].lstrip("/") or "index.html"
                target = (folder / rest).resolve()
                if target.is_relative_to(folder.resolve()) and target.is_file():
                    return target
                return None
        return None


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def _headers(self, status: int, ctype: str, length: int) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(length))
        self.send_header("Cache-Control", "no-store")
        if self.server.site.isolated:
            for name, value in ISOLATION_HEADERS:
                self.send_header(name, value)
        self.end_headers()

    def do_GET(self) -> None:
        self._serve(send_body=True)

    def do_HEAD(self) -> None:
        self._serve(send_body=False)

    def _serve(self, send_body: bool) -> None:
        path = urlsplit(self.path).path
        site = self.server.site
        body = site.overrides.get(path)
        if body == STALL:
            time.sleep(STALL_SECONDS)
            return
        ctype = MIME_TYPES.get(posixpath.splitext(path)[1], "application/octet-stream")
        if body is None:
            target = site.resolve(path)
            if target is None:
                self._headers(404, "text/plain; charset=utf-8", 10)
                if send_body:
                    self.wfile.write(b"not found\n")
                return
            body = target.read_bytes()
            ctype = MIME_TYPES.get(target.suffix, "application/octet-stream")
        self._headers(200, ctype, len(body))
        if send_body:
            self.wfile.write(body)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        try:
            self.server.site.posted.append(json.loads(self.rfile.read(length)))
        except json.JSONDecodeError:
            self.server.site.posted.append({"error": "the page posted something that is not JSON"})
        self.server.site.got_post.set()
        self._headers(204, "text/plain", 0)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the page's own output is what matters


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    site: Site


def start(site: Site, port: int = 0) -> tuple[ThreadingHTTPServer, str]:
    """Serve `site` on 127.0.0.1:`port` (0 = any free port) in a thread; returns its base URL."""
    try:
        server = _Server(("127.0.0.1", port), _Handler)
    except OSError as exc:
        raise PipelineError(
            f"cannot listen on 127.0.0.1:{port}: {exc.strerror}", where="--port"
        ) from exc
    server.site = site
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def page_config(trusted_keys: bytes, allow_dev_key: bool, model_sha256: str) -> bytes:
    """/config.json: what the example page passes to the loader."""
    doc = {
        "trustedKeys": json.loads(trusted_keys),
        "allowDevKey": allow_dev_key,
        "bundle": "bundle/",
        "model": {"url": "model.trlm", "sha256": model_sha256},
    }
    return json.dumps(doc, indent=2).encode() + b"\n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("bundle", type=Path, help="a release bundle folder (dist/tinyrustlm-<v>)")
    parser.add_argument(
        "--isolated",
        action="store_true",
        help="send COOP/COEP so the page is cross-origin isolated (threads lane)",
    )
    parser.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (0 = any free)")
    parser.add_argument(
        "--trusted-keys",
        type=Path,
        default=None,
        help="trusted-keys file (default: this checkout's development key, "
        "which the page then allows)",
    )
    parser.add_argument(
        "--model",
        type=Path,
        default=None,
        help=f"model file (default: a freshly packed {DEFAULT_PRESET!r} model)",
    )


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise PipelineError(f"cannot read {what}: {exc.strerror}", where=str(path)) from exc


def site_for(args: argparse.Namespace) -> Site:
    """What `serve` serves for these arguments (the bundle is checked first)."""
    bundle: Path = args.bundle
    if not (bundle / "manifest.json").is_file() or not (bundle / "js/loader.js").is_file():
        raise PipelineError(
            "not a release bundle with js/loader.js",
            where=str(bundle),
            hint="release first: ./nox -s release",
        )
    dev_keys = REPO_ROOT / DEV_KEY_DIR / f"{DEV_KEY_NAME}.trusted-keys.json"
    trusted = _read(args.trusted_keys or dev_keys, "trusted keys")
    model = (
        _read(args.model, "model")
        if args.model is not None
        else pack(PRESETS[DEFAULT_PRESET], DEFAULT_SEED)
    )
    sha = hashlib.sha256(model).hexdigest()
    # without --trusted-keys the page trusts this checkout's development key, so allows it
    config = page_config(trusted, args.trusted_keys is None, sha)
    return Site(
        routes=[("/bundle/", bundle), ("/", REPO_ROOT / PAGE_DIR)],
        isolated=args.isolated,
        overrides={"/config.json": config, "/model.trlm": model},
    )


def run(args: argparse.Namespace) -> int:
    site = site_for(args)
    server, url = start(site, args.port)
    print(
        f"serving {args.bundle} (isolated: {'yes' if args.isolated else 'no'}); Ctrl-C stops",
        file=sys.stderr,
    )
    print(url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()
    return 0
