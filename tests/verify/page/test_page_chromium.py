"""report.html of a real release in real Chromium (issue 34): it loads with no console
message (a CSP violation would be one), asks the server for nothing but itself, draws a
non-blank page at 1280 px, and Chromium's own DOM of it has every lane row and every cell
of the conformance matrix."""

from __future__ import annotations

import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pipeline.conformance.browsers import CHROMIUM_FLAGS
from tests.verify.page.dom import Node, parse
from tests.verify.page.png import png_facts
from verify.bundle.layout import REPORT_PAGE
from verify.bundle.opened import read_bundle_folder
from verify.bundle.page.inputs import page_inputs

pytestmark = pytest.mark.integration
WIDTH = 1280
SIZE_LIMIT = 500_000


class _Logged(ThreadingHTTPServer):
    paths: list[str]


class _Handler(SimpleHTTPRequestHandler):
    server: _Logged

    def do_GET(self) -> None:
        self.server.paths.append(self.path)
        super().do_GET()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def served(
    released_bundle: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, list[str]]]:
    """report.html alone in a folder, served; every path asked for is logged."""
    if shutil.which("chromium") is None:
        pytest.skip("chromium not installed (.ci/run installs it)")
    root = tmp_path_factory.mktemp("report-site")
    shutil.copy(released_bundle / REPORT_PAGE, root / REPORT_PAGE)

    def handler(*args: Any) -> _Handler:
        return _Handler(*args, directory=str(root))

    server = _Logged(("127.0.0.1", 0), handler)
    server.paths = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/{REPORT_PAGE}", server.paths
    server.shutdown()


def _chromium(url: str, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [
        "chromium",
        *CHROMIUM_FLAGS,
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        f"--window-size={WIDTH},1600",
        *extra,
        url,
    ]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)


@pytest.fixture(scope="module")
def loaded(
    served: tuple[str, list[str]], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Node, str, list[str]]:
    url, paths = served
    done = _chromium(url, tmp_path_factory.mktemp("chromium"), "--dump-dom")
    return parse(done.stdout.encode()), done.stderr, list(paths)


def test_no_console_message_and_no_request_but_the_page(
    loaded: tuple[Node, str, list[str]],
) -> None:
    _, log, paths = loaded
    console = [line for line in log.splitlines() if ":CONSOLE" in line]
    assert console == []
    assert paths == [f"/{REPORT_PAGE}"]


def test_every_lane_row_and_matrix_cell_is_in_chromiums_dom(
    loaded: tuple[Node, str, list[str]], released_bundle: Path
) -> None:
    dom = loaded[0]
    files = read_bundle_folder(released_bundle)
    assert len(files[REPORT_PAGE]) < SIZE_LIMIT
    inputs = page_inputs(files)
    manifest = inputs.release.manifest

    def first_cells(table_id: str) -> list[str]:
        (body,) = dom.by_id(table_id).find("tbody")
        return [tr.children[0].all_text() for tr in body.children]

    assert first_cells("wasm-lanes") == [a.id for a in manifest.artifacts]
    assert first_cells("native-lanes") == [a.id for a in manifest.native_artifacts]
    report = inputs.conformance
    assert report is not None, "a release runs the node matrix"
    matrix = dom.by_id("matrix")
    head = [th.all_text() for th in matrix.find("thead")[0].find("th")][1:]
    cells = {}
    for tr in matrix.find("tbody")[0].children:
        engine = tr.children[0].all_text()
        for column, td in zip(head, tr.children[1:], strict=True):
            cells[(engine, column)] = td.all_text()
    for row in report.rows:
        engine = next(e for e, _ in cells if e.startswith(f"{row.engine} {row.engine_version}"))
        text = cells[(engine, f"{row.lane} · {row.tier}")]
        total = row.cases_passed + row.cases_failed
        assert text.startswith(f"{row.outcome} {row.cases_passed}/{total}"), (row.lane, text)


def test_a_screenshot_at_1280_is_not_blank(served: tuple[str, list[str]], tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    _chromium(served[0], tmp_path / "profile", f"--screenshot={shot}")
    width, height, distinct = png_facts(shot.read_bytes())
    assert (width, height) == (WIDTH, 1600)
    assert distinct > 32, "blank"
