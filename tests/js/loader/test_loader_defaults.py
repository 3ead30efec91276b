"""loader.js's defaults and its expiry boundaries, in node (issue 26).

Every other loader case passes `allowDevKey` explicitly; here `load()` gets only the bundle
URL, the trusted keys and the model, so the defaults decide: a development-signed bundle is
refused (`DevelopmentKey`), and expiry is judged by the clock (`Date.now`, replaced per case)
at the exact second: the manifest's `expires_epoch` and the trusted key's `not_after` refuse
at that second and pass one second before. The same boundaries hold for an explicit `now`.

The bundles are the fake release harness's (tests/harness/release.py: real documents, really
signed, tiny wasm modules) served over real HTTP; the loader is this tree's
crates/wasm/js/loader.js. A case that gets past step 1 (the signed manifest) fails later, at
a lane's ABI check (`UnsupportedAbi`: the fake modules export nothing) or at the model
(`FetchFailed` for a model URL that is not served): that is how "accepted" shows.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pipeline.documents.keys import generate_key_files, load_private_key
from pipeline.serve import Site, start
from pipeline.toolchain import nodejs
from tests.harness.release import Harness, make_repo
from verify.bundle.layout import MANIFEST
from verify.bundle.trusted_keys import trusted_key_entry, trusted_keys_json

REPO_ROOT = Path(__file__).resolve().parents[3]
LOADER = REPO_ROOT / "crates/wasm/js/loader.js"
NODE_TIMEOUT_SECONDS = 300
MISSING_MODEL = "no-such-model.trlm"
ACCEPTED = "accepted"  # got past step 1: refused only later, by what the fake bundle lacks


def _past_the_manifest(code: str, message: str) -> bool:
    """The loader accepted the signed manifest and stopped at a later step: the fake bundle's
    tiny modules export no `tr_*` ABI (lanes start before the model streams in), or the
    model URL is not served."""
    return code == "UnsupportedAbi" or (code == "FetchFailed" and MISSING_MODEL in message)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(base URL, folder) serving a release-signed bundle at r/ and a dev-signed one at d/,
    with their trusted keys beside them."""
    tmp = tmp_path_factory.mktemp("loader-defaults")
    commit_time = int(time.time()) // 86400 * 86400 - 86400
    site = tmp / "site"
    site.mkdir()
    key = generate_key_files(tmp / "keys", "r", "release")
    h = Harness(tmp, make_repo(tmp, commit_time), key, commit_time)
    released = h.release(dist=tmp / "dist-release").bundle
    dev = h.release(dist=tmp / "dist-dev", key_path=None, env={}).bundle
    assert released is not None and dev is not None
    shutil.copytree(released, site / "r")
    shutil.copytree(dev, site / "d")
    shutil.copy(h.trusted, site / "r.keys.json")
    shutil.copy(h.repo / ".dev-keys/development.trusted-keys.json", site / "d.keys.json")
    # the release key again, trusted only until an hour before the manifest expires
    public = load_private_key(h.key.private_pem).public_key()
    until = datetime.fromtimestamp(_expires(site / "r") - 3600, UTC)
    (site / "r.until.keys.json").write_bytes(
        trusted_keys_json([trusted_key_entry(public, "release", until)])
    )
    server, url = start(Site(routes=[("/", site)]))
    try:
        yield url, site
    finally:
        server.shutdown()
        server.server_close()


def _expires(bundle: Path) -> int:
    value = json.loads((bundle / MANIFEST).read_text())["expires_epoch"]
    assert isinstance(value, int)
    return value


def _not_after(keys: Path) -> int:
    stamp = json.loads(keys.read_text())["keys"][0]["not_after"]
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp())


def _cases(url: str, site: Path) -> list[tuple[dict[str, Any], str]]:
    """(case for defaults.mjs, expected code or ACCEPTED)."""
    expires = _expires(site / "r")
    until = _not_after(site / "r.until.keys.json")
    assert until < expires
    rows: list[tuple[str, str, str, dict[str, Any], int | None, str]] = [
        # name, bundle, keys, options, clock, expected
        ("dev key, defaults", "d", "d", {}, None, "DevelopmentKey"),
        ("dev key, allowDevKey", "d", "d", {"allowDevKey": True}, None, ACCEPTED),
        ("release key, defaults", "r", "r", {}, None, ACCEPTED),
        ("relaxedSimd 'auto' (the default)", "r", "r", {"relaxedSimd": "auto"}, None, ACCEPTED),
        ("relaxedSimd 'off'", "r", "r", {"relaxedSimd": "off"}, None, ACCEPTED),
        ("relaxedSimd 'on' is not a value", "r", "r", {"relaxedSimd": "on"}, None, "BadOptions"),
        ("clock at manifest expiry", "r", "r", {}, expires, "ManifestExpired"),
        ("clock a second before manifest expiry", "r", "r", {}, expires - 1, ACCEPTED),
        ("now at manifest expiry", "r", "r", {"now": expires}, None, "ManifestExpired"),
        ("now a second before manifest expiry", "r", "r", {"now": expires - 1}, None, ACCEPTED),
        ("clock at key not_after", "r", "r.until", {}, until, "KeyExpired"),
        ("clock a second before key not_after", "r", "r.until", {}, until - 1, ACCEPTED),
        ("now at key not_after", "r", "r.until", {"now": until}, None, "KeyExpired"),
        ("now a second before key not_after", "r", "r.until", {"now": until - 1}, None, ACCEPTED),
    ]
    cases = []
    for name, bundle, keys, options, clock, expected in rows:
        case: dict[str, Any] = {
            "name": name,
            "base": f"{url}{bundle}/",
            "trustedKeys": json.loads((site / f"{keys}.keys.json").read_text()),
            "model": {"url": f"{url}{MISSING_MODEL}", "sha256": "0" * 64, "size": 1024},
            "options": options,
        }
        if clock is not None:
            case["clock"] = clock
        cases.append((case, expected))
    return cases


@pytest.fixture(scope="module")
def outcomes(
    served: tuple[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> list[tuple[str, str, str]]:
    """(case name, expected, got) for every case, from one node run."""
    url, site = served
    cases = _cases(url, site)
    spec = tmp_path_factory.mktemp("spec") / "cases.json"
    spec.write_text(json.dumps({"loader": LOADER.as_uri(), "cases": [c for c, _ in cases]}))
    done = subprocess.run(
        [str(nodejs.executable()), str(Path(__file__).with_name("defaults.mjs")), str(spec)],
        capture_output=True, text=True, timeout=NODE_TIMEOUT_SECONDS,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    rows = []
    for (case, expected), result in zip(cases, results, strict=True):
        code, message = result["code"], result["message"]
        got = ACCEPTED if _past_the_manifest(code, message) else str(code)
        rows.append((case["name"], expected, f"{got}: {message}"))
    return rows


def test_loader_defaults_and_expiry_boundaries(outcomes: list[tuple[str, str, str]]) -> None:
    wrong = [row for row in outcomes if not row[2].startswith(f"{row[1]}: ")]
    assert wrong == [], "\n".join(f"{n}: expected {e}, got {g}" for n, e, g in wrong)
