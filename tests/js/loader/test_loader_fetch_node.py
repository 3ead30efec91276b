"""The loader's downloads in node against a real release: every fetch bounded (an endless
manifest, signature, module or model body is refused at its bound, memory bounded), progress
events monotonic and complete, the content-addressed cache (hit, poisoned entry refetched), the
version floor (Rollback across loads through a versionFile, minVersion), and bundle paths and
file: URLs read from disk."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.js.package import release_version
from pipeline.serve import ENDLESS, Site
from pipeline.toolchain import nodejs
from tests.js.loader.cases import Case, Env
from tests.js.loader.checks import by_name, check_ran, check_receipt
from tests.js.loader.conftest import serve
from tests.js.loader.site import (
    NEWER_VERSION,
    RELAXED_THREADS_LANE,
    SIMD_LANE,
    artifact,
    deny_above,
    manifest_of,
)
from verify.bundle.layout import bundle_name

pytestmark = pytest.mark.integration
MANIFEST_CAP = 4 << 20
SIGNATURE_CAP = 1 << 20
# What a bounded download may have let the server push past the bound (socket buffers, one
# chunk in flight); an unbounded one runs to ENDLESS_LIMIT (16 GiB) or out of memory.
SLACK = 64 << 20
MAX_RSS = 1 << 30
WRONG_MODEL = "/wrong-model.trlm"  # the model's size, its last bit flipped
DENY_THREADS = deny_above(SIMD_LANE)  # every lane above simd128 (threads, relaxed)


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[tuple[Site, str]]:
    """A server of its own (the endless bodies and the request log are this module's)."""
    yield from serve(site, isolated=True)


def endless_overrides(site: Path, served: Site) -> None:
    b = site / "b"
    manifest = (b / "manifest.json").read_bytes()
    signature = (b / "manifest.sigstore.json").read_bytes()
    served.overrides["/e-manifest/manifest.json"] = ENDLESS
    served.overrides["/e-manifest/manifest.sigstore.json"] = signature
    served.overrides["/e-signature/manifest.json"] = manifest
    served.overrides["/e-signature/manifest.sigstore.json"] = ENDLESS
    served.overrides["/e-module/manifest.json"] = manifest
    served.overrides["/e-module/manifest.sigstore.json"] = signature
    for a in json.loads(manifest)["artifacts"]:
        served.overrides[f"/e-module/{a['url']}"] = ENDLESS
    # the real model (its header passes the preflight), then zeros without end
    served.overrides["/e-model.trlm"] = ENDLESS + (site / "model.trlm").read_bytes()
    # the cache's second visit: only the signed manifest is served here, no module, no model
    served.overrides["/cached/manifest.json"] = manifest
    served.overrides["/cached/manifest.sigstore.json"] = signature


def cases(site: Path, env: Env, tmp: Path, prompt: str) -> list[dict[str, Any]]:
    cache = tmp / "cache"
    versions = tmp / "versions.json"
    model_size = (site / "model.trlm").stat().st_size
    module_sha = artifact(manifest_of(site / "b"), SIMD_LANE)["sha256"]
    specs: list[dict[str, Any]] = []

    def add(case: Case, **extra: Any) -> None:
        spec = case.spec(env)
        spec.update(extra)
        specs.append(spec)

    for what in ("manifest", "signature", "module"):
        add(Case(f"endless {what}"), base=f"{env.url}e-{what}/")
    add(Case("endless model", options={"model": {"url": f"{env.url}e-model.trlm"}}))
    add(Case("model file: /dev/zero", options={"model": {"url": "file:///dev/zero"}}))
    add(Case("model larger than declared", options={"model": {"size": model_size - 1}}))
    add(Case("progress", prompt=prompt, options=DENY_THREADS), progress=True)
    # the content-addressed cache, three loads sharing one cacheDir
    cached = {**DENY_THREADS, "cacheDir": str(cache)}
    add(Case("cache first", prompt=prompt, options=cached))
    add(
        Case(
            "cache second",
            prompt=prompt,
            options={**cached, "model": {"url": f"{env.url}cached/model.trlm"}},
        ),
        base=f"{env.url}cached/",
        progress=True,
    )
    add(
        Case("cache poisoned", prompt=prompt, options=cached),
        poisonFile=[str(cache / module_sha), str(cache / env.model_sha256)],
    )
    # a poisoned header (its magic): refused before the copy's hash is checked, so the copy is
    # hashed then, found poisoned, and the load starts again from the network
    add(
        Case("cache poisoned head", prompt=prompt, options=cached),
        poisonFile=[str(cache / env.model_sha256)],
        poisonAt=0,
    )
    # a poisoned copy and a wrong network copy: one restart, then the network copy's HashMismatch
    add(
        Case(
            "cache poisoned twice",
            prompt=prompt,
            options={**cached, "model": {"url": f"{env.url}{WRONG_MODEL.lstrip('/')}"}},
        ),
        poisonFile=[str(cache / env.model_sha256)],
    )
    # the version floor: a versionFile remembers the newest accepted release
    add(Case("accept newer", variant="newer-version", options={"versionFile": str(versions)}))
    add(Case("older after newer", options={"versionFile": str(versions)}))
    add(
        Case(
            "older allowed",
            options={"versionFile": str(versions), "allowDowngrade": True},
        )
    )
    add(Case("minVersion above", options={"minVersion": "1.0.0"}))
    add(Case("minVersion below", options={"minVersion": "0.0.1"}))
    return specs


@pytest.fixture(scope="module")
def results(
    site: Path,
    server: tuple[Site, str],
    golden: dict[str, Any],
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, dict[str, Any]]:
    served, url = server
    endless_overrides(site, served)
    model = bytearray((site / "model.trlm").read_bytes())
    model[-1] ^= 1
    served.overrides[WRONG_MODEL] = bytes(model)
    env = Env(
        url=url,
        loader_root=site.as_uri() + "/",
        model_sha256=golden["model_sha256"],
        stalled_worker=(site / "silent-worker.mjs").as_uri(),
        model_size=(site / "model.trlm").stat().st_size,
    )
    tmp = tmp_path_factory.mktemp("fetch")
    spec = tmp / "cases.json"
    spec.write_text(json.dumps(cases(site, env, tmp, golden["prompt"])))
    served.requests.clear()
    done = subprocess.run(
        [str(nodejs.executable()), str(site / "drive.mjs"), str(spec)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    out = by_name(json.loads(done.stdout))
    out["_requests"] = {"paths": list(served.requests), "endless_sent": list(served.endless_sent)}
    return out


@pytest.mark.parametrize(
    ("name", "limit"),
    [("endless manifest", MANIFEST_CAP), ("endless signature", SIGNATURE_CAP)],
)
def test_an_endless_manifest_or_signature_stops_at_its_cap(
    results: dict[str, dict[str, Any]], name: str, limit: int
) -> None:
    error = results[name]["error"]
    assert error["code"] == "BoundExceeded", error
    assert error["detail"]["limit"] == limit
    assert results[name]["stats"]["instantiations"] == 0


def test_an_endless_module_stops_at_its_signed_size(
    results: dict[str, dict[str, Any]], site: Path
) -> None:
    error = results["endless module"]["error"]
    assert error["code"] == "BoundExceeded", error
    first = next(  # the loader's first candidate in node
        a
        for a in json.loads((site / "b/manifest.json").read_bytes())["artifacts"]
        if a["id"] == RELAXED_THREADS_LANE
    )
    assert error["detail"]["limit"] == first["size"]
    assert results["endless module"]["stats"]["instantiations"] == 0


def test_an_endless_model_stops_at_its_declared_size(
    results: dict[str, dict[str, Any]], site: Path
) -> None:
    result = results["endless model"]
    assert result["error"]["code"] == "BoundExceeded", result["error"]
    assert result["error"]["detail"]["limit"] == (site / "model.trlm").stat().st_size
    assert result["stats"]["modelLoads"] == 0 and result["stats"]["live"] == 0


def test_a_model_path_to_a_device_is_refused_at_its_header(
    results: dict[str, dict[str, Any]],
) -> None:
    """file:///dev/zero (no size, never ends): read as far as the header, which is refused."""
    result = results["model file: /dev/zero"]
    assert result["error"]["code"] == "ModelInvalid", result["error"]
    assert result["stats"]["modelLoads"] == 0 and result["stats"]["live"] == 0


def test_a_model_larger_than_declared_is_refused(results: dict[str, dict[str, Any]]) -> None:
    assert results["model larger than declared"]["error"]["code"] == "BoundExceeded"


def test_endless_bodies_leave_memory_and_the_server_bounded(
    results: dict[str, dict[str, Any]],
) -> None:
    sent = results["_requests"]["endless_sent"]
    assert len(sent) >= 4, sent  # manifest, signature, a module, the model (each stopped)
    assert max(sent) < MANIFEST_CAP + SLACK, sent
    assert max(r.get("maxRssBytes", 0) for r in results.values()) < MAX_RSS


def test_progress_is_monotonic_and_complete(results: dict[str, dict[str, Any]]) -> None:
    check_ran(results["progress"], SIMD_LANE)
    events = results["progress"]["progress"]
    assert {e["phase"] for e in events} == {"manifest", "signature", "probes", "module", "model"}
    streams: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for e in events:
        streams.setdefault((e["phase"], e.get("url", "")), []).append(e)
    for key, stream in streams.items():
        loaded = [e["loaded"] for e in stream]
        assert loaded == sorted(loaded), key
        assert stream[-1]["loaded"] == stream[-1]["total"], key
        assert len({e["total"] for e in stream}) == 1, key
        assert stream[0]["loaded"] == 0, key


def cache_of(result: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f.what, f.cache) for f in check_receipt(result["receipt"]).fetched]


def test_the_cache_serves_a_second_load_without_a_request(
    results: dict[str, dict[str, Any]], golden: dict[str, Any], site: Path
) -> None:
    check_ran(results["cache first"], SIMD_LANE, golden["tokens"])
    assert cache_of(results["cache first"]) == [
        (f"module {SIMD_LANE}", "stored"),
        ("model", "stored"),
    ]
    check_ran(results["cache second"], SIMD_LANE, golden["tokens"])
    assert cache_of(results["cache second"]) == [(f"module {SIMD_LANE}", "hit"), ("model", "hit")]
    # each entry read once, the model hashed once (in place, after it landed), no pre-pass
    module_size = artifact(manifest_of(site / "b"), SIMD_LANE)["size"]
    model_size = (site / "model.trlm").stat().st_size
    stats = results["cache second"]["stats"]
    assert stats["storeBytesRead"] == module_size + model_size, stats
    assert stats["modelBytesHashed"] == model_size, stats
    assert stats["cacheRestarts"] == 0, stats
    paths = results["_requests"]["paths"]
    # the second load's own URLs were never requested: both came from the cache
    assert "/cached/manifest.json" in paths
    assert not [p for p in paths if p.startswith("/cached/") and not p.endswith(".json")], paths
    model_events = [e for e in results["cache second"]["progress"] if e["phase"] == "model"]
    assert model_events[-1]["loaded"] == model_events[-1]["total"]


def test_a_same_size_poisoned_module_and_model_are_dropped_and_fetched_again(
    results: dict[str, dict[str, Any]], golden: dict[str, Any], site: Path
) -> None:
    result = results["cache poisoned"]
    # both files were poisoned in place and kept their size: only re-hashing can tell
    module = artifact(manifest_of(site / "b"), SIMD_LANE)
    assert [p["size"] for p in result["poisoned"]] == [
        module["size"],
        (site / "model.trlm").stat().st_size,
    ]
    check_ran(result, SIMD_LANE, golden["tokens"])
    assert cache_of(result) == [(f"module {SIMD_LANE}", "poisoned"), ("model", "poisoned")]
    # the model's copy read once (header and rest), hashed in place, found poisoned: the load
    # started again from the network once (the module, already read from it, reused)
    size = (site / "model.trlm").stat().st_size
    assert result["stats"]["cacheRestarts"] == 1, result["stats"]
    assert result["stats"]["storeBytesRead"] == module["size"] + size, result["stats"]
    assert result["stats"]["modelBytesHashed"] == 2 * size, result["stats"]
    assert result["stats"]["live"] == 0  # the first lane's runtime was closed (and the second)


def test_a_poisoned_cached_header_restarts_the_load_from_the_network(
    results: dict[str, dict[str, Any]], golden: dict[str, Any], site: Path
) -> None:
    """A header poisoned in the cached copy is refused before the copy's hash is checked: the
    copy is then read and hashed (the failure path), dropped, and the load starts again from
    the network, once."""
    result = results["cache poisoned head"]
    check_ran(result, SIMD_LANE, golden["tokens"])
    assert cache_of(result) == [(f"module {SIMD_LANE}", "hit"), ("model", "poisoned")]
    size = (site / "model.trlm").stat().st_size
    assert result["stats"]["cacheRestarts"] == 1, result["stats"]
    assert result["stats"]["modelBytesHashed"] == 2 * size, result["stats"]


def test_a_poisoned_cached_copy_restarts_once_only(results: dict[str, dict[str, Any]]) -> None:
    """The network copy is wrong too: one restart, then its HashMismatch, every runtime closed."""
    result = results["cache poisoned twice"]
    assert result["error"]["code"] == "HashMismatch", result["error"]
    assert result["stats"]["cacheRestarts"] == 1, result["stats"]
    assert result["stats"]["modelLoads"] == 0 and result["stats"]["live"] == 0, result["stats"]
    # the poisoned copy was dropped, and the wrong network copy not stored in its place
    assert not Path(result["poisoned"][0]["path"]).exists()


def test_an_older_release_is_refused_after_a_newer_one(
    results: dict[str, dict[str, Any]],
) -> None:
    assert "error" not in results["accept newer"], results["accept newer"]["error"]
    refused = results["older after newer"]["error"]
    assert refused["code"] == "Rollback", refused
    assert refused["detail"]["floor"] == NEWER_VERSION
    assert results["older after newer"]["stats"]["instantiations"] == 0
    assert "error" not in results["older allowed"], results["older allowed"]["error"]


def test_min_version_is_a_floor(results: dict[str, dict[str, Any]]) -> None:
    assert results["minVersion above"]["error"]["code"] == "Rollback"
    assert "error" not in results["minVersion below"]


def run_script(folder: Path, name: str) -> str:
    """`node NAME` in `folder` (the pinned node); its stdout, after asserting it succeeded."""
    done = subprocess.run(
        [str(nodejs.executable()), name],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


BUNDLE_PATH_SCRIPT = """\
import { readFileSync } from 'node:fs';
import { load } from LOADER;
const trustedKeys = JSON.parse(readFileSync('keys.json', 'utf-8'));
const model = { url: 'model.trlm', size: SIZE, sha256: SHA256 };
const options = { baseUrl: 'bundle', allowDevKey: true, denyLanes: DENY };
const lm = await load({ ...options, trustedKeys, model });
console.log(lm.receipt.module.artifact_id, lm.receipt.fetched.map((f) => f.url).join(' '));
await lm.close();
"""


def test_node_loads_a_bundle_path(site: Path, golden: dict[str, Any], tmp_path: Path) -> None:
    """A bundle folder given as a path (relative to the working directory), the model as a
    path: node reads both from disk (its fetch cannot)."""
    (tmp_path / "keys.json").write_bytes((site / "keys/dev.json").read_bytes())
    script = tmp_path / "run.mjs"
    script.write_text(
        BUNDLE_PATH_SCRIPT.replace("LOADER", json.dumps((site / "b/js/loader.js").as_uri()))
        .replace("DENY", json.dumps(DENY_THREADS["denyLanes"]))
        .replace("SIZE", str((site / "model.trlm").stat().st_size))
        .replace("SHA256", json.dumps(golden["model_sha256"]))
    )
    (tmp_path / "bundle").symlink_to(site / "b")
    (tmp_path / "model.trlm").symlink_to(site / "model.trlm")
    lane, *urls = run_script(tmp_path, "run.mjs").split()
    assert lane == SIMD_LANE
    assert all(u.startswith(f"file://{tmp_path}/") for u in urls), urls


README = Path(__file__).resolve().parents[3] / "README.md"
SNIPPET_MARK = "<!-- node-snippet -->\n```js\n"


def readme_node_snippet() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(SNIPPET_MARK) + len(SNIPPET_MARK)
    return text[start : text.index("```\n", start)]


def test_the_readme_node_snippet_runs_as_written(
    site: Path, golden: dict[str, Any], tmp_path: Path
) -> None:
    """The snippet, unedited, in a folder holding what it names: the bundle (as released, under
    its release name), trusted-keys.json, model.trlm and model.json. Run twice: the second run
    is served by its cache, and the remembered version is the bundle's."""
    snippet = readme_node_snippet()
    name = bundle_name(release_version())
    assert f"./{name}/js/loader.js" in snippet, "the snippet names another release"
    (tmp_path / name).symlink_to(site / "b")
    (tmp_path / "trusted-keys.json").write_bytes((site / "keys/dev.json").read_bytes())
    (tmp_path / "model.trlm").symlink_to(site / "model.trlm")
    model = {
        "url": "model.trlm",
        "size": (site / "model.trlm").stat().st_size,
        "sha256": golden["model_sha256"],
    }
    (tmp_path / "model.json").write_text(json.dumps(model))
    (tmp_path / "run.mjs").write_text(snippet)
    outputs = []
    for _ in range(2):
        outputs.append(run_script(tmp_path, "run.mjs"))
    # greedy decoding of the README's prompt: the same text both times, cached or not
    assert outputs[0] == outputs[1] != "", outputs
    assert len(list((tmp_path / ".tinyrustlm-cache").iterdir())) == 2  # the module, the model
    remembered = json.loads((tmp_path / ".tinyrustlm-version.json").read_text())
    assert list(remembered.values()) == [release_version()]
