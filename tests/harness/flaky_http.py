"""A local HTTP server that fails the first N requests of a 1 MiB body as told (503, a body
that breaks off half-way, a wrong range, no range support), and records each request's Range:
what fetch's and the loader's retry and resume tests run against."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BODY = bytes(range(256)) * 4096  # 1 MiB


@dataclass
class Script:
    """How the server answers: the first `failures` requests fail as `mode`."""

    mode: str = "ok"  # "503", "break", "404", "bad-range", "no-range"
    failures: int = 0
    seen: list[str | None] = field(default_factory=list)  # each request's Range header


def _handler(script: Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            asked = self.headers.get("Range")
            script.seen.append(asked)
            failing = len(script.seen) <= script.failures
            if script.mode == "404" or (failing and script.mode == "503"):
                status = 404 if script.mode == "404" else 503
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            start = int(asked[len("bytes=") : -1]) if asked else 0
            if script.mode == "no-range":
                start = 0
            if script.mode == "bad-range" and asked:
                start += 1  # another range than the one asked for
            body = BODY[start:]
            self.send_response(206 if start else 200)
            if start:
                self.send_header("Content-Range", f"bytes {start}-{len(BODY) - 1}/{len(BODY)}")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if failing and script.mode in ("break", "no-range", "bad-range"):
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.connection.shutdown(2)  # the body breaks off half-way
                return
            self.wfile.write(body)

    return Handler


@contextmanager
def flaky_server() -> Iterator[tuple[str, Script]]:
    """(the body's URL, the script to set before requesting it)."""
    script = Script()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/target.bin", script
    finally:
        httpd.shutdown()
        httpd.server_close()
