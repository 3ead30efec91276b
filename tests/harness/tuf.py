"""Two real signed bundles, a fresh TUF repository per test, and a real HTTP mirror.

The bundles come from the release harness (tests/harness/release.py: real signing, real bundle
writer, the fake build and report): 9.9.8 and 9.9.9 from two commits of one fake source tree,
made once per test session. `Mirror` is `http.server` in a thread on 127.0.0.1 serving the
repository folder; a test makes it hostile by mapping a URL path to what the attacker sends.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pipeline.documents.keys import generate_key_files
from pipeline.fetch.client import Fetched, FetchRequest, fetch_release
from pipeline.publish.keys import KeyFolders
from pipeline.publish.publish import Published, publish_bundle
from pipeline.publish.repo import RepoSummary, init_repository
from pipeline.tuf.policy import RepositoryPolicy, load_policy
from tests.harness.release import Harness, _git, fake_report, make_repo, write_build
from verify.bundle.trusted_keys import TrustedKey, load_trusted_keys

OLD, NEW = "9.9.8", "9.9.9"

# What the mirror sends for one path: bytes, or a generator of chunks (may never end).
Body = bytes | Callable[[], Iterator[bytes]]


@dataclass(frozen=True)
class Bundles:
    paths: dict[str, Path]  # version -> dist/tinyrustlm-<version>/
    trusted_keys: Path

    def trusted(self) -> dict[str, TrustedKey]:
        return load_trusted_keys(self.trusted_keys)


def _release_version(h: Harness, version: str) -> Path:
    pyproject = h.repo / "pyproject.toml"
    pyproject.write_text(f'[project]\nname = "fake"\nversion = "{version}"\n')
    stamp = f"@{h.commit_time} +0000"
    _git(h.repo, "add", "-A")
    _git(
        h.repo,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.invalid",
        "commit",
        "-q",
        "-m",
        version,
        env={"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp},
    )
    write_build(h.repo, h.commit_time)
    ctx = h.release()
    assert ctx.bundle is not None
    return ctx.bundle


@pytest.fixture(scope="session")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> Bundles:
    tmp = tmp_path_factory.mktemp("bundles")
    commit_time = int(time.time()) // 86400 * 86400 - 86400
    repo = make_repo(tmp, commit_time)
    key = generate_key_files(tmp / "keys", "release", "release")
    h = Harness(tmp, repo, key, commit_time)
    paths = {version: _release_version(h, version) for version in (OLD, NEW)}
    return Bundles(paths, key.trusted_keys)


class _Handler(SimpleHTTPRequestHandler):
    mirror: Mirror

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        self.mirror.requests.append(path)
        body = self.mirror.attacks.get(path)
        if body is None:
            super().do_GET()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        if isinstance(body, bytes):
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_header("Connection", "close")  # no length: the body ends when we stop
        self.end_headers()
        try:
            for chunk in body():
                self.wfile.write(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client hung up: what a length limit should make it do

    def log_message(self, format: str, *args: Any) -> None:
        pass


@dataclass
class Mirror:
    """A real HTTP server over `root`; `attacks` maps URL paths to what is sent instead."""

    root: Path
    attacks: dict[str, Body] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    url: str = ""

    def file(self, rel: str) -> bytes:
        return (self.root / rel).read_bytes()


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[Mirror]:
    root = tmp_path / "repo"
    root.mkdir()
    state = Mirror(root)
    handler = type("Handler", (_Handler,), {"mirror": state})
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(root)))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class World:
    """A repository served by `mirror`, its keys, the bundles, and a client to fetch with."""

    tmp: Path
    mirror: Mirror
    keys: KeyFolders
    policy: RepositoryPolicy
    bundles: Bundles
    init: RepoSummary

    @property
    def repo(self) -> Path:
        return self.mirror.root

    @property
    def root_v1(self) -> Path:
        return self.repo / "metadata" / "1.root.json"

    def publish(
        self, bundle: str | Path, now: datetime | None = None, keys: KeyFolders | None = None
    ) -> Published:
        """Publish a version of `bundles` (or any bundle folder) with the fake report."""
        return publish_bundle(
            self.bundles.paths[bundle] if isinstance(bundle, str) else bundle,
            self.repo,
            keys or self.keys,
            self.bundles.trusted(),
            self.policy,
            now=now,
            derive=fake_report,
        )

    def request(
        self, out: str = "out", state: str | Path | None = "state", **kw: Any
    ) -> FetchRequest:
        options: dict[str, Any] = {
            "url": self.mirror.url,
            "root": self.root_v1,
            "out": self.tmp / out,
            "trusted_keys": self.bundles.trusted_keys,
            "version": None,
            "state": None if state is None else self.tmp / state,  # None: the default
        }
        options.update(kw)
        return FetchRequest(**options)

    def fetch(self, out: str = "out", state: str | Path | None = "state", **kw: Any) -> Fetched:
        return fetch_release(
            self.request(out, state, **kw), self.policy, now=int(time.time()), derive=fake_report
        )

    def snapshot_of(self, rel: str) -> bytes:
        return (self.repo / rel).read_bytes()


@pytest.fixture
def world(tmp_path: Path, mirror: Mirror, bundles: Bundles) -> World:
    shutil.rmtree(mirror.root)
    keys = KeyFolders(tmp_path / "keys")
    policy = load_policy()
    summary = init_repository(mirror.root, keys, policy, "development", now=datetime.now(UTC))
    return World(tmp_path, mirror, keys, policy, bundles, summary)


def entries(folder: Path) -> list[str]:
    """Everything in `folder`, hidden files included (a failed fetch must leave nothing)."""
    if not folder.exists():
        return []
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))
