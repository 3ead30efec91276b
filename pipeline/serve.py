"""`tinyrustlm-release serve BUNDLE [--isolated] [--port N] [--trusted-keys FILE] [--model FILE]`.

Serves a release bundle and the example page (examples/browser/) on 127.0.0.1 so the loader
can be tried in a browser: the page at `/`, the bundle under `/bundle/`, the model at
`/model.trlm` and `/config.json` telling the page its trusted keys, whether the development
key is allowed, and the model's URL and SHA-256. `--isolated` sends COOP/COEP (and CORP), as a
host that isolates its pages does; without them the page's service worker
(js/coi-serviceworker.js) isolates it after one reload, so the threads lane runs either way.
Correct MIME types matter: browsers refuse ES modules not served as JavaScript and
stream-compile only application/wasm.

The `Site` server is also what the loader tests run (tests/js/loader/), with per-path overrides.

Hostile requests are bounded: a request line or header that does not arrive within
`REQUEST_TIMEOUT_SECONDS` closes the connection (an HTTP/0.9 or half-sent request never holds
a thread); a POST body is at most `MAX_POST_BYTES` and JSON at most `MAX_POST_DEPTH` deep,
only the last `MAX_POSTS` are kept; a bad Content-Length, a NUL or any other odd path is a
4xx answer. Nothing a client sends prints a traceback. Bad arguments are errors with an id
(`SERVE_ERRORS`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import posixpath
import socket
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from pipeline.documents.keys import DEV_KEY_DIR, DEV_KEY_NAME
from pipeline.errors import TabledError
from pipeline.modelpack import MAGIC, PRESETS, pack
from verify.bundle.opened import read_bundle_file, read_bundle_folder
from verify.bundle.trusted_keys import trust_root_of
from verify.canonical import parse_json
from verify.errors import VerifyError
from verify.inputs import read_regular_file
from verify.shell.result import Outcome

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
# Bounds on what a client may make the server hold.
REQUEST_TIMEOUT_SECONDS = 30.0  # to send the request line and headers (and a POST body)
MAX_POST_BYTES = 1024 * 1024  # a capability receipt is a few KiB
MAX_POST_DEPTH = 64
MAX_POSTS = 64  # the page's reports kept for the tests that read them

# error id -> hint: every way `serve` refuses its arguments.
SERVE_ERRORS: dict[str, str] = {
    "serve.not-a-bundle": "give a bundle folder (dist/tinyrustlm-<version>/); "
    "release first: ./nox -s release",
    "serve.tarball": "serve takes the unpacked bundle folder: `tar -xzf` the tarball and serve "
    "the tinyrustlm-<version>/ folder it holds",
    "serve.trusted-keys": "give the trusted-keys JSON (e.g. <name>.trusted-keys.json from "
    "`keys generate`), not a key, a bundle or another file",
    "serve.model": "give a model file (a regular file, as `modelpack` writes), or no --model",
    "serve.port": "pick another --port (0 takes any free one), or stop what listens there",
}


class ServeError(TabledError):
    """`serve` cannot start with these arguments (ids: SERVE_ERRORS)."""

    table = SERVE_ERRORS


# An override: bytes to serve instead of the file, or STALL to never answer in time, or ENDLESS
# (+ optional leading bytes) for a body that never ends (no Content-Length; those bytes, then
# zeros until the client hangs up): a bounded download must stop at its bound.
STALL = b"\0stall\0"
ENDLESS = b"\0endless\0"
ENDLESS_CHUNK = 1 << 16
ENDLESS_LIMIT = 16 << 30
Route = tuple[str, Path]


@dataclass
class Site:
    """What one server serves: URL prefixes mapped to folders, plus exact-path overrides."""

    routes: list[Route]
    isolated: bool = False
    overrides: dict[str, bytes] = field(default_factory=dict)
    # the page's last reports (bounded: a client posting forever cannot grow it)
    posted: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=MAX_POSTS))
    got_post: threading.Event = field(default_factory=threading.Event)
    endless_sent: list[int] = field(default_factory=list)  # bytes each ENDLESS body got out
    requests: list[str] = field(default_factory=list)  # every GET/HEAD path, in order

    def resolve(self, path: str) -> Path | None:
        """The file a URL path names, never outside its route's folder."""
        clean = posixpath.normpath(unquote(path, errors="strict"))
        if "\0" in clean:  # no file name holds a NUL (the OS would refuse it)
            return None
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
    timeout = REQUEST_TIMEOUT_SECONDS  # socket timeout: a silent client is dropped

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        if self.request_version == "HTTP/0.9":  # no headers: nothing we serve works with it
            self.send_error(400, "HTTP/0.9 is not served")
            return False
        return True

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
        site.requests.append(path)
        body = site.overrides.get(path)
        if body == STALL:
            time.sleep(STALL_SECONDS)
            return
        if body is not None and body.startswith(ENDLESS):
            self._endless(body[len(ENDLESS) :])
            return
        ctype = MIME_TYPES.get(posixpath.splitext(path)[1], "application/octet-stream")
        if body is None:
            try:
                target = site.resolve(path)
            except (ValueError, UnicodeError, OSError):  # a path no file can have
                self.send_error(400, "bad path")
                return
            if target is None:
                self._headers(404, "text/plain; charset=utf-8", 10)
                if send_body:
                    self.wfile.write(b"not found\n")
                return
            try:  # checked at start, read bounded again: a file swapped in since is no hazard
                body = read_regular_file(target, "served-file")
            except VerifyError as exc:
                reason = f"{exc.error_id}: {exc.message}\n".encode()
                self._headers(403, "text/plain; charset=utf-8", len(reason))
                if send_body:
                    self.wfile.write(reason)
                return
            ctype = MIME_TYPES.get(target.suffix, "application/octet-stream")
        self._headers(200, ctype, len(body))
        if send_body:
            self.wfile.write(body)

    def _endless(self, head: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Cache-Control", "no-store")
        if self.server.site.isolated:
            for name, value in ISOLATION_HEADERS:
                self.send_header(name, value)
        self.end_headers()
        self.close_connection = True
        chunk = bytes(ENDLESS_CHUNK)
        sent = 0
        try:
            self.wfile.write(head)
            sent += len(head)
            while sent < ENDLESS_LIMIT:
                self.wfile.write(chunk)
                sent += len(chunk)
            self.server.site.endless_sent.append(sent)
        except OSError:  # the client stopped reading: what a bounded download does
            self.server.site.endless_sent.append(sent)

    def do_POST(self) -> None:
        text = self.headers.get("Content-Length", "0").strip()
        if not text.isdigit() or len(text) > 12:
            self.send_error(400, "bad Content-Length")
            return
        length = int(text)
        if length > MAX_POST_BYTES:
            self.send_error(413, f"a report is at most {MAX_POST_BYTES} bytes")
            return
        body = self.rfile.read(length)
        try:
            doc = parse_json(body, "POST body", max_bytes=MAX_POST_BYTES, max_depth=MAX_POST_DEPTH)
        except VerifyError as exc:
            doc = {"error": f"the page posted something that is not JSON: {exc.message}"}
        if not isinstance(doc, dict):
            doc = {"error": "the page posted JSON that is not an object"}
        self.server.site.posted.append(doc)
        self.server.site.got_post.set()
        self._headers(204, "text/plain", 0)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the page's own output is what matters


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    site: Site

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that fails (reset, timed out, anything): one line, never a traceback."""
        kind, exc, _ = sys.exc_info()
        if isinstance(exc, (ConnectionError, socket.timeout, TimeoutError)):
            return  # the client went away or went quiet: nothing to report
        print(
            f"serve: dropped a request from {client_address[0]}: "
            f"{kind.__name__ if kind else 'error'}: {exc}",
            file=sys.stderr,
        )


def start(site: Site, port: int = 0) -> tuple[ThreadingHTTPServer, str]:
    """Serve `site` on 127.0.0.1:`port` (0 = any free port) in a thread; returns its base URL."""
    try:
        server = _Server(("127.0.0.1", port), _Handler)
    except (OSError, OverflowError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ServeError(
            f"cannot listen on 127.0.0.1:{port}: {reason}", error_id="serve.port", where="--port"
        ) from exc
    server.site = site
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def page_config(trusted_keys: bytes, allow_dev_key: bool, model: bytes) -> bytes:
    """/config.json: what the example page passes to the loader."""
    doc = {
        "trustedKeys": json.loads(trusted_keys),
        "allowDevKey": allow_dev_key,
        "bundle": "bundle/",
        "model": {
            "url": "model.trlm",
            "size": len(model),
            "sha256": hashlib.sha256(model).hexdigest(),
        },
    }
    return json.dumps(doc, indent=2).encode() + b"\n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("bundle", type=Path, help="a release bundle folder (dist/tinyrustlm-<v>)")
    parser.add_argument(
        "--isolated",
        action="store_true",
        help=(
            "send COOP/COEP/CORP headers, as a host that isolates its pages does (without "
            "them the page's service worker, js/coi-serviceworker.js, isolates it after one "
            "reload: the threads lane runs either way)"
        ),
    )
    parser.add_argument(
        "--port", type=_port, default=8000, help="port on 127.0.0.1, 0..65535 (0 = any free)"
    )
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


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0..65535)")
    return port


def _read(path: Path, what: str, error_id: Literal["serve.trusted-keys", "serve.model"]) -> bytes:
    """A bounded regular file: a FIFO, a device or an oversized file is refused, not read."""
    try:
        return read_regular_file(path, what)
    except VerifyError as exc:
        raise ServeError(
            f"{what}: {exc.message} [{exc.error_id}]", error_id=error_id, where=str(path)
        ) from exc


def _trusted_keys(path: Path) -> bytes:
    data = _read(path, "trusted-keys", "serve.trusted-keys")
    try:
        trust_root_of(data, str(path))  # the page gets the file only if the verifier reads it
    except VerifyError as exc:  # a PEM key is named as such by the verifier's reader
        raise ServeError(
            f"{exc.message} [{exc.error_id}]",
            error_id="serve.trusted-keys",
            where=exc.where or str(path),
        ) from exc
    return data


def _check_bundle(bundle: Path) -> None:
    if bundle.is_file() and bundle.name.endswith((".tar.gz", ".tgz", ".tar")):
        raise ServeError(
            "a tarball, not a bundle folder", error_id="serve.tarball", where=str(bundle)
        )
    if not (bundle / "manifest.json").is_file() or not (bundle / "js/loader.js").is_file():
        raise ServeError(
            "not a release bundle folder with manifest.json and js/loader.js",
            error_id="serve.not-a-bundle",
            where=str(bundle),
        )
    try:  # every file bounded and regular: a FIFO or /dev/zero is never served
        files = read_bundle_folder(bundle)
        manifest = parse_json(files["manifest.json"], str(bundle / "manifest.json"))
    except VerifyError as exc:
        raise ServeError(
            f"{exc.message} [{exc.error_id}]", error_id="serve.not-a-bundle", where=exc.where
        ) from exc
    listed = (
        [a.get("url") for key in ("artifacts", "native_artifacts") for a in manifest.get(key, [])]
        if isinstance(manifest, dict)
        else []
    )
    missing = [url for url in listed if url not in files]
    if missing:  # a folder, or nothing, where the manifest names a file
        raise ServeError(
            f"the manifest's {missing[0]} is not a file of the bundle",
            error_id="serve.not-a-bundle",
            where=str(bundle / str(missing[0])),
        )


def site_for(args: argparse.Namespace) -> Site:
    """What `serve` serves for these arguments (the bundle is checked first)."""
    bundle: Path = args.bundle
    _check_bundle(bundle)
    dev_keys = REPO_ROOT / DEV_KEY_DIR / f"{DEV_KEY_NAME}.trusted-keys.json"
    trusted = _trusted_keys(args.trusted_keys or dev_keys)
    model = (
        _read(args.model, "model", "serve.model")
        if args.model is not None
        else pack(PRESETS[DEFAULT_PRESET], DEFAULT_SEED)
    )
    if not model.startswith(MAGIC):  # the page would only fail later, in the browser
        raise ServeError(
            "not a tinyrustlm model (no TRLMODEL header)",
            error_id="serve.model",
            where=str(args.model),
        )
    # without --trusted-keys the page trusts this checkout's development key, so allows it
    config = page_config(trusted, args.trusted_keys is None, model)
    overrides = {"/config.json": config, "/model.trlm": model}
    # the isolation service worker must sit beside the page (its scope is its folder); a
    # bundle older than it has none, and the page then stays as its headers make it
    coi = bundle / "js/coi-serviceworker.js"
    if coi.is_file():
        overrides["/coi-serviceworker.js"] = read_bundle_file(coi, "js/coi-serviceworker.js")
    return Site(
        routes=[("/bundle/", bundle), ("/", REPO_ROOT / PAGE_DIR)],
        isolated=args.isolated,
        overrides=overrides,
    )


def run(args: argparse.Namespace) -> Outcome:
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
    return Outcome(0, {"url": url, "bundle": str(args.bundle), "isolated": bool(args.isolated)})
