"""One browser harness: serve a page from 127.0.0.1, start an engine on it, collect what the
page POSTs back, within a time bound, then stop every process the engine started.

The server answers only the routes it was given (no directory listing, nothing outside
them), with or without COOP/COEP. The engine runs in a process group of its own; at the end
the whole group and any descendant that left it get SIGTERM, then SIGKILL. A page that
goes silent, or an engine that dies, ends the run with an error instead of a hang.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pipeline.conformance.browsers import Browser

# POST endpoints of the page (pipeline/conformance/page/main.mjs), under PAGE_ROOT
PAGE_ROOT = "/conformance/"
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".mjs": "text/javascript",
    ".js": "text/javascript",
    ".json": "application/json",
    ".wasm": "application/wasm",
}
TERM_GRACE_SECONDS = 2.0
Route = Path | bytes


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    routes: Mapping[str, Route]
    isolated: bool
    posts: queue.Queue[tuple[str, Any]]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def _headers(self, status: int, ctype: str | None, length: int) -> None:
        self.send_response(status)
        if self.server.isolated:
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        if ctype:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(length))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        route = self.server.routes.get(path)
        if route is None:
            self._headers(404, None, 0)
            return
        body = route if isinstance(route, bytes) else route.read_bytes()
        self._headers(
            200, CONTENT_TYPES.get(Path(path).suffix, "application/octet-stream"), len(body)
        )
        self.wfile.write(body)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            doc = json.loads(body)
        except ValueError:
            doc = {"error": f"unreadable POST body ({len(body)} bytes)"}
        self.server.posts.put((self.path, doc))
        self._headers(204, None, 0)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the report says what happened; no access log on stderr


@dataclass
class PageRun:
    """What one engine run of the page reported."""

    start: dict[str, Any] | None = None
    lanes: list[dict[str, Any]] = field(default_factory=list)
    done: dict[str, Any] | None = None
    error: str | None = None  # the run itself failed (timeout, engine died, page error)
    timed_out: bool = False  # that failure was the time bound
    seconds: float = 0.0


class Launched:
    """A started engine: its process group can be killed (fault injection in tests)."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc

    def kill(self) -> None:
        stop_group(self.proc, grace=0.0)


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def descendants(pid: int) -> list[int]:
    tree, out, todo = _children(), [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def stop_group(proc: subprocess.Popen[bytes], grace: float = TERM_GRACE_SECONDS) -> None:
    """SIGTERM then SIGKILL the engine's process group and every descendant of it."""
    family = [proc.pid, *descendants(proc.pid)]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if sig == signal.SIGKILL and grace > 0:
            deadline = time.monotonic() + grace
            while proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        for pid in family:  # a descendant that started its own session left the group
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
    proc.wait()


def run_page(
    browser: Browser,
    executable: str,
    routes: Mapping[str, Route],
    *,
    isolated: bool,
    timeout: float,
    workdir: Path,
    on_lane: Callable[[Launched, dict[str, Any]], None] | None = None,
    port: int = 0,
) -> PageRun:
    """Start `browser` on PAGE_ROOT/index.html and collect its POSTs until `done`.

    `timeout` bounds the whole run; the page posts `start`, one `lane` per lane, `done`.
    `port` 0 is any free one; a fixed port keeps the origin, so a profile's storage, across
    runs (the bench's cached loads).
    """
    server = _Server(("127.0.0.1", port), _Handler)
    server.routes, server.isolated, server.posts = routes, isolated, queue.Queue()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}{PAGE_ROOT}index.html"
    launch = browser.launch(executable, url, workdir)
    log = (workdir / f"{browser.name}.log").open("wb")
    run = PageRun()
    started = time.monotonic()
    proc = subprocess.Popen(
        launch.argv,
        env=launch.env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        cwd=workdir,
    )
    launched = Launched(proc)
    try:
        while run.done is None:
            left = timeout - (time.monotonic() - started)
            if left <= 0:
                run.error = f"the page reported nothing final within {timeout:.0f}s"
                run.timed_out = True
                break
            try:
                path, doc = server.posts.get(timeout=min(0.25, left))
            except queue.Empty:
                if proc.poll() is not None and server.posts.empty():
                    run.error = (
                        f"{browser.name} exited (code {proc.returncode}) before the page finished"
                    )
                    break
                continue
            name = path.rsplit("/", 1)[-1]
            if name == "start":
                run.start = doc
            elif name == "lane":
                run.lanes.append(doc)
                if on_lane is not None:
                    on_lane(launched, doc)
            elif name == "done":
                run.done = doc
                if doc.get("error"):
                    run.error = f"page error: {doc['error']}"
    finally:
        stop_group(proc)
        log.close()
        server.shutdown()
        server.server_close()
        run.seconds = time.monotonic() - started
    if run.error is not None and run.done is None:
        run.error += f"; last output: {_tail(workdir / f'{browser.name}.log')}"
    return run


def _tail(path: Path, lines: int = 3) -> str:
    """The engine's last words (why it exited), for the row's detail."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    kept = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
    return " | ".join(kept)[-600:] or "(empty)"
