"""Fixtures of the loader tests: one real release, its test site, a server, the golden run."""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.modelpack import PRESETS, pack
from pipeline.serve import STALL, Site, start
from pipeline.toolchain import nodejs
from tests.clones import bundle_and_dev_keys
from tests.harness.release import pristine  # noqa: F401  (the fake release: test_trust_agreement)
from tests.js.loader.site import make_site

REPO_ROOT = Path(__file__).resolve().parents[3]
GOLDEN = REPO_ROOT / "tests/golden/e2e_decode.json"
STALLED_WORKER = "/stalled/worker.js"
NODE_TIMEOUT_SECONDS = 900


def run_node_cases(specs: list[dict[str, Any]], folder: Path, site: Path) -> list[dict[str, Any]]:
    """The site's node driver (`drive.mjs`) over `specs` (written to `folder`): its results."""
    spec = folder / "cases.json"
    spec.write_text(json.dumps(specs))
    done = subprocess.run(
        [str(nodejs.executable()), str(site / "drive.mjs"), str(spec)],
        capture_output=True,
        text=True,
        timeout=NODE_TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    results: list[dict[str, Any]] = json.loads(done.stdout)
    return results


@pytest.fixture(scope="session")
def golden() -> dict[str, Any]:
    """The greedy end-to-end golden run of the `small` model (prompt, tokens)."""
    rows = json.loads(GOLDEN.read_text())
    row: dict[str, Any] = next(r for r in rows if r["id"] == "e2e_decode.small.greedy")
    return {
        "prompt": row["params"]["prompt"],
        "tokens": row["expected"]["values"],
        "model_sha256": row["inputs"]["model"]["sha256"],
    }


@pytest.fixture(scope="session")
def loader_bundle(request: pytest.FixtureRequest) -> tuple[Path, Path]:
    """(bundle, development private key that signed it)."""
    bundle, keys = bundle_and_dev_keys(request)
    return bundle, keys / "development.key.pem"


@pytest.fixture(scope="session")
def site(
    loader_bundle: tuple[Path, Path],
    golden: dict[str, Any],
    tmp_path_factory: pytest.TempPathFactory,
) -> Path:
    model = pack(PRESETS["small"], 7)
    assert hashlib.sha256(model).hexdigest() == golden["model_sha256"]
    bundle, key = loader_bundle
    return make_site(tmp_path_factory.mktemp("loader") / "site", bundle, key, model)


def serve(site: Path, isolated: bool) -> Iterator[tuple[Site, str]]:
    served = Site(routes=[("/", site)], isolated=isolated, overrides={STALLED_WORKER: STALL})
    server, url = start(served)
    try:
        yield served, url
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def isolated_server(site: Path) -> Iterator[tuple[Site, str]]:
    yield from serve(site, isolated=True)


@pytest.fixture(scope="session")
def plain_server(site: Path) -> Iterator[tuple[Site, str]]:
    yield from serve(site, isolated=False)
