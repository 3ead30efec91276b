"""`tinyrustlm-release serve`: the bundle and the example page with the right MIME types,
COOP/COEP only with --isolated, a config naming the model's SHA-256, nothing outside; hostile
requests and bad arguments answered with a status or a typed error, never a traceback or a
held thread (issue 26)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import socket
import threading
import urllib.error
import urllib.request
from argparse import Namespace
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pipeline import serve
from pipeline.cli import main as cli_main
from pipeline.documents.keys import generate_key_files
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


def _args(folder: Path, tmp_path: Path, **kw: Any) -> Namespace:
    model = tmp_path / "m.trlm"
    model.write_bytes(b"TRLMODEL model bytes")
    keys = tmp_path / "keys" / "t.trusted-keys.json"
    if not keys.exists():
        generate_key_files(tmp_path / "keys", "t", "release")
    options: dict[str, Any] = {"bundle": folder, "isolated": False, "port": 0,
                               "trusted_keys": keys, "model": model}  # fmt: skip
    options.update(kw)
    return Namespace(**options)


def served(bundle: Path, tmp_path: Path, isolated: bool) -> tuple[str, threading.Event]:
    args = _args(bundle, tmp_path, isolated=isolated)
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
        return e.code, dict(e.headers), e.read()


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
        "size": len(b"TRLMODEL model bytes"),  # the loader's bound of the model's download
        "sha256": hashlib.sha256(b"TRLMODEL model bytes").hexdigest(),
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


@pytest.mark.parametrize("swap", ["sparse", "fifo", "dev-zero"])
def test_a_file_swapped_after_start_is_refused_not_read(
    bundle: Path, tmp_path: Path, swap: str
) -> None:
    """The folder is read bounded at start; a file swapped in later is refused on request,
    never read without end: a sparse 10 GB file over its bound (403, the reader's id), a FIFO
    or a link to /dev/zero (not a regular file of the folder: 404)."""
    url, stop = served(bundle, tmp_path, isolated=False)
    target = bundle / "js" / "loader.js"
    target.unlink()
    if swap == "sparse":
        with target.open("wb") as f:
            f.truncate(10 * 1024**3)
    elif swap == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/zero")
    try:
        status, _, body = fetch(url + "bundle/js/loader.js")
        again, _, _ = fetch(url + "config.json")  # still serving
    finally:
        stop.set()
    if swap == "sparse":
        assert status == 403 and b"input.too-large" in body, (status, body[:200])
    else:
        assert status == 404, (status, body[:200])
    assert again == 200


def test_a_folder_that_is_not_a_bundle_is_refused(tmp_path: Path) -> None:
    args = Namespace(bundle=tmp_path, isolated=False, port=0, trusted_keys=None, model=None)
    with pytest.raises(PipelineError, match="not a release bundle"):
        serve.site_for(args)


def test_the_example_page_loads_the_bundled_loader() -> None:
    page = serve.REPO_ROOT / serve.PAGE_DIR
    assert (page / "index.html").is_file()
    assert "from './bundle/js/loader.js'" in (page / "app.mjs").read_text()


# -- issue 26: hostile requests -------------------------------------------------------------
def _raw(url: str, data: bytes, read: bool = True) -> bytes:
    """Send raw bytes to the server; the reply (until the server closes), or b"" if none."""
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while read and (chunk := sock.recv(65536)):
            chunks.append(chunk)
    return b"".join(chunks)


def _post(body: bytes, length: str | None = None) -> bytes:
    size = str(len(body)) if length is None else length
    return (f"POST /report HTTP/1.1\r\nHost: x\r\nContent-Length: {size}\r\n\r\n").encode() + body


HOSTILE = {
    "nul-in-path": (b"GET /bundle/a%00b.js HTTP/1.1\r\nHost: x\r\n\r\n", b" 404 "),
    "raw-nul-in-path": (b"GET /bundle/a\x00b.js HTTP/1.1\r\nHost: x\r\n\r\n", b" 40"),
    "bad-utf8-path": (b"GET /bundle/%ff.js HTTP/1.1\r\nHost: x\r\n\r\n", b" 400 "),
    "content-length-abc": (_post(b"{}", "abc"), b" 400 "),
    "content-length-negative": (_post(b"{}", "-5"), b" 400 "),
    "post-too-large": (_post(b"", str(serve.MAX_POST_BYTES + 1)), b" 413 "),
    "deep-json": (_post(b"[" * 100_000 + b"]" * 100_000), b" 204 "),
    "http-0.9": (b"GET /\r\n", b"HTTP/0.9 is not served"),
}


@pytest.mark.parametrize(("request_bytes", "answer"), HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_request_gets_an_answer_not_a_traceback(
    bundle: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str], request_bytes: bytes,
    answer: bytes,
) -> None:  # fmt: skip
    site = serve.site_for(_args(bundle, tmp_path))
    server, url = serve.start(site)
    try:
        reply = _raw(url, request_bytes)
        status, _, _ = fetch(url + "config.json")  # still serving
    finally:
        server.shutdown()
        server.server_close()
    assert answer in reply, reply[:200]
    assert status == 200
    assert "Traceback" not in capfd.readouterr().err
    for doc in site.posted:  # a deep or bad body is recorded as an error, not kept as is
        assert set(doc) == {"error"}


def test_posted_reports_are_bounded(bundle: Path, tmp_path: Path) -> None:
    site = serve.site_for(_args(bundle, tmp_path))
    server, url = serve.start(site)
    try:
        for i in range(serve.MAX_POSTS + 10):
            request = urllib.request.Request(url + "report", data=json.dumps({"n": i}).encode())
            with urllib.request.urlopen(request) as r:
                assert r.status == 204
    finally:
        server.shutdown()
        server.server_close()
    assert len(site.posted) == serve.MAX_POSTS
    assert site.posted[-1] == {"n": serve.MAX_POSTS + 9}


def test_a_silent_client_does_not_hold_a_thread(
    bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert 0 < serve._Handler.timeout <= 60  # the default is bounded; the test waits less
    monkeypatch.setattr(serve._Handler, "timeout", 0.5)
    server, url = serve.start(serve.site_for(_args(bundle, tmp_path)))
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    try:
        with socket.create_connection((host, int(port)), timeout=20) as sock:
            sock.sendall(b"GET /")  # never finishes the request line
            assert sock.recv(100) == b""  # the server hangs up after its timeout
    finally:
        server.shutdown()
        server.server_close()


# -- issue 26: bad arguments ------------------------------------------------------------------
def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


def _pem(tmp_path: Path) -> Path:
    return generate_key_files(tmp_path / "pem", "p", "release").public_pem


def _tarball(tmp_path: Path) -> Path:
    path = tmp_path / "tinyrustlm-1.0.0.tar.gz"
    path.write_bytes(b"\x1f\x8b not really")
    return path


ARGUMENTS: dict[str, tuple[Callable[[Path, Path], dict[str, Any]], str]] = {
    "model-fifo": (lambda b, t: {"model": _fifo(t)}, "serve.model"),
    "model-dev-zero": (lambda b, t: {"model": Path("/dev/zero")}, "serve.model"),
    "model-missing": (lambda b, t: {"model": t / "none.trlm"}, "serve.model"),
    "trusted-keys-binary": (lambda b, t: {"trusted_keys": Path("/bin/ls")}, "serve.trusted-keys"),
    "trusted-keys-pem": (lambda b, t: {"trusted_keys": _pem(t)}, "serve.trusted-keys"),
    "trusted-keys-fifo": (lambda b, t: {"trusted_keys": _fifo(t)}, "serve.trusted-keys"),
    "tarball": (lambda b, t: {"bundle": _tarball(t)}, "serve.tarball"),
    "not-a-bundle": (lambda b, t: {"bundle": t}, "serve.not-a-bundle"),
}


@pytest.mark.parametrize(("make", "error_id"), ARGUMENTS.values(), ids=ARGUMENTS.keys())
def test_bad_arguments_are_typed_errors(
    bundle: Path, tmp_path: Path, make: Callable[[Path, Path], dict[str, Any]], error_id: str
) -> None:
    args = _args(bundle, tmp_path, **make(bundle, tmp_path))
    raised: list[BaseException] = []

    def attempt() -> None:
        try:
            serve.site_for(args)
        except BaseException as exc:  # handed to the test's thread
            raised.append(exc)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), "serve hangs reading its arguments"
    assert raised and isinstance(raised[0], serve.ServeError), raised
    error = raised[0]
    assert error.error_id == error_id, error.diagnostics()
    text = error.diagnostics()
    assert text.startswith(f"error[{error_id}]: ") and "hint: " in text
    if error_id == "serve.tarball":
        assert "tar -xzf" in text and "release first" not in text
    if "pem" in str(args.trusted_keys):
        assert "a PEM key, not a trusted-keys JSON file" in text


def test_a_busy_port_is_a_typed_error(bundle: Path, tmp_path: Path) -> None:
    site = serve.site_for(_args(bundle, tmp_path))
    server, url = serve.start(site)
    try:
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        with pytest.raises(serve.ServeError) as info:
            serve.start(site, port)
        assert info.value.error_id == "serve.port" and info.value.hint
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("port", ["70000", "-1", "http"])
def test_a_port_out_of_range_is_a_usage_error(port: str, bundle: Path) -> None:
    with pytest.raises(SystemExit) as caught, contextlib.redirect_stderr(io.StringIO()) as err:
        cli_main(["serve", str(bundle), "--port", port])
    assert caught.value.code == 2 and "not a port number" in err.getvalue()
