"""The bench's browser runs (issue 36): the `bench` model in real headless Chromium through the
shipped npm loader, crates/wasm/js/loader.js, as a user's page runs it.

The lanes just built are staged as a bundle with a manifest signed by this checkout's
development key, by the release's own steps 1-5 (pipeline/release/steps.py: build, verify,
smoke, sign; nothing is written to dist/). The bundle is served from 127.0.0.1 with COOP/COEP
and Chromium is started on the page (page/main.mjs) by the conformance matrix's harness
(pipeline/conformance/harness.py: the server, the engine's process group, the time bound; its
flags and version from browsers.py). The loader verifies the signed manifest, probes, picks a
lane, self-tests it and fetches the model; the page then times one prefill of the bench prompt
and a streamed decode. The loader checks the manifest as of its own time (`now`, the
manifest's SOURCE_DATE_EPOCH), so a bench of an old commit still runs.

Two runs, each repetition a fresh browser launch (interleaved with the node and native figures,
pipeline/bench/lanes.py):
- `chromium`: a fresh profile every repetition, so the loader fetches, hashes, stores and
  compiles everything (a first visit);
- `chromium-cached`: one profile primed by a load before the first repetition, so module and
  model come from the loader's content-addressed store (re-hashed; a second visit).
The loader's receipt says what it fetched from where (`fetched[].cache`); a run whose receipt
disagrees with its cache state, or whose lane changes between repetitions, is an error.
"""

from __future__ import annotations

import json
import shutil
import socket
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, get_args

from pipeline.bench.environment import BrowserFacts, FetchCache, LoaderFetched, LoaderState
from pipeline.bench.errors import BenchError
from pipeline.bench.memory import loader_memory_row
from pipeline.conformance import browsers, harness
from pipeline.conformance.matrix import Trust, bundle_files
from pipeline.conformance.subject import Subject, from_bundle
from pipeline.release.conformance import stage, trust_of
from pipeline.release.steps import (
    ReleaseRequest,
    preflight,
    step_build,
    step_sign_manifest,
    step_smoke,
    step_verify,
)
from pipeline.tree.snapshot import read_tree

ENGINE: Final = "chromium"
PAGE = Path(__file__).resolve().parent / "page"
PAGE_FILES = ("index.html", "main.mjs")
MODEL_URL = "/model/model.trlm"
WORKERS = 2  # the loader's default: what a page gets without asking
PAGE_TIMEOUT_SECONDS = 600.0
# run name -> the loader cache state it measures
RUNS: dict[str, LoaderState] = {"chromium": "first-load", "chromium-cached": "cached"}
# what each state's receipt must say of module and model
EXPECTED_CACHE: dict[LoaderState, frozenset[str]] = {
    "first-load": frozenset({"miss", "stored", "quota-exceeded", "write-failed"}),
    "cached": frozenset({"hit"}),
}
Say = Callable[[str], None]


@dataclass(frozen=True)
class Staged:
    """A signed bundle of the measured lanes, and whom its loader trusts."""

    subject: Subject
    trust: Trust


def stage_bundle(repo_root: Path, lanes: Sequence[str], folder: Path) -> Staged:
    """The release's steps 1-5 on `lanes` (development key, dirty tree allowed), staged under
    `folder`: the bundle a loader verifies, nothing in dist/."""
    request = ReleaseRequest(
        repo_root=repo_root,
        dist=folder / "dist",
        lanes=tuple(lanes),
        allow_dirty=True,
        env={},  # never $TINYRUSTLM_RELEASE_KEY: a bench signs with the development key
        # signed as of its commit, and verified as of then by the page (`now`): an old commit
        # (a bisection) is measured, not refused as expired
        now=read_tree(repo_root).git.commit_time,
        say=lambda _line: None,
    )
    checked = preflight(request)
    signed = step_sign_manifest(checked, step_smoke(step_verify(step_build(checked))))
    manifest = signed.documents.manifest
    bundle = stage(folder / "bundle", signed.files, manifest)
    return Staged(from_bundle(bundle), trust_of(checked.key, manifest))


@dataclass(frozen=True)
class Plan:
    """What the page is told (plan.json) and served."""

    staged: Staged
    model: Path
    model_sha256: str
    prompt_tokens: Sequence[int]
    warmup: int
    tokens: int

    def page_plan(self) -> dict[str, Any]:
        return {
            "base": "/",
            "trusted_keys": dict(self.staged.trust.trusted_keys),
            "allow_dev_key": self.staged.trust.allow_dev_key,
            "model": {
                "url": MODEL_URL,
                "size": self.model.stat().st_size,
                "sha256": self.model_sha256,
            },
            "workers": WORKERS,
            "now": self.staged.subject.source_date_epoch,
            "prompt_tokens": list(self.prompt_tokens),
            "warmup": self.warmup,
            "tokens": self.tokens,
        }

    def routes(self) -> dict[str, harness.Route]:
        routes: dict[str, harness.Route] = {
            f"/{url}": path for url, path in bundle_files(self.staged.subject)
        }
        routes.update({harness.PAGE_ROOT + f: PAGE / f for f in PAGE_FILES})
        routes[harness.PAGE_ROOT + "plan.json"] = json.dumps(self.page_plan()).encode()
        routes[MODEL_URL] = self.model
        return routes


def fetched_of(doc: dict[str, Any]) -> LoaderFetched:
    """Module and model cache outcomes from the page's copy of the receipt's `fetched`."""
    lane = f"module {doc['chosen_lane']}"
    cache = {str(r.get("what")): r.get("cache") for r in doc.get("fetched", [])}
    module, model = cache.get(lane), cache.get("model")
    allowed = get_args(FetchCache)
    if module not in allowed or model not in allowed:
        raise BenchError(
            f"the loader's receipt does not say how it fetched {lane!r} and the model: {cache}",
            where="receipt fetched",
        )
    return LoaderFetched(module=module, model=model)


def page_sample(name: str, doc: dict[str, Any]) -> dict[str, Any]:
    """One repetition's run as lanes.py's samples hold it (summary.summarize reads it)."""
    return {
        "name": name,
        "workers": int(doc["workers"]),
        "lane": int(doc["lane"]),
        "module_sha256": str(doc["module_sha256"]),
        "decode_ms": float(doc["decode_ms"]),
        "prefill_ms": float(doc["prefill_ms"]),
        "ttft_ms": float(doc["ttft_ms"]),
        "load_ms": float(doc["load_ms"]),
    }


def facts_of(name: str, version: str, docs: Sequence[dict[str, Any]]) -> BrowserFacts:
    """The run's `ran_on` facts: every repetition ran the same lane, with its cache state."""
    state = RUNS[name]
    lanes = sorted({str(d["chosen_lane"]) for d in docs})
    if len(lanes) != 1:
        raise BenchError(
            f"{name}: the loader chose different lanes in different repetitions: {lanes}",
            where=f"bench run {name}",
        )
    fetched = {fetched_of(d) for d in docs}
    wrong = [f for f in fetched if not {f.module, f.model} <= EXPECTED_CACHE[state]]
    if wrong or len(fetched) != 1:
        raise BenchError(
            f"{name} measures a {state} but the loader's receipts say "
            f"{sorted(f.model_dump_json() for f in fetched)}",
            where=f"bench run {name}",
            hint="a browser profile the bench does not own, or a loader cache that failed",
        )
    return BrowserFacts(
        engine=ENGINE,
        engine_version=version,
        lane=lanes[0],
        loader=state,
        fetched=fetched.pop(),
        context=int(docs[0]["context"]),
    )


def free_port() -> int:
    """A port free now on 127.0.0.1: the cached runs' origin (the loader's store is per origin)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _profile(kind: str) -> Path:
    # a short path: Chromium's sockets live in its profile, and one over 107 bytes aborts it
    return Path(tempfile.mkdtemp(prefix=f"trlm-bench-{kind}-"))


@dataclass
class ChromiumBench:
    """The Chromium runs of one bench: `start`, `prime()` once, `repetition()` per
    repetition, then `facts()`; `close()` removes the cached run's profile."""

    plan: Plan
    executable: str
    version: str
    cached_profile: Path
    port: int  # one origin for every load: the loader's store is per origin
    docs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @classmethod
    def start(cls, plan: Plan) -> ChromiumBench:
        b = browsers.browser(ENGINE)
        exe = b.executable()
        if exe is None:
            raise BenchError(
                "the bench runs the loader in Chromium, which is not installed",
                where="chromium",
                hint="install Debian's chromium (.ci/run does), or pass --no-browser",
            )
        profile = _profile("cached")
        version = browsers.browser_version(b, exe, profile)
        return cls(plan, exe, version, profile, free_port())

    def _page(self, profile: Path) -> dict[str, Any]:
        run = harness.run_page(
            browsers.browser(ENGINE),
            self.executable,
            self.plan.routes(),
            isolated=True,
            timeout=PAGE_TIMEOUT_SECONDS,
            workdir=profile,
            port=self.port,
        )
        if run.error is not None or len(run.lanes) != 1:
            raise BenchError(
                f"the Chromium bench page failed: {run.error or 'no run reported'}",
                where=str(PAGE / "main.mjs"),
                hint="read the loader's error code in the message; the loader tests "
                "(tests/js/loader) run the same bundle in Chromium",
            )
        return run.lanes[0]

    def prime(self) -> None:
        """The cached run's profile: one load that fills the loader's store (not measured)."""
        self._page(self.cached_profile)

    def repetition(self) -> list[dict[str, Any]]:
        """One sample of each run: a first load in a fresh profile, then a cached load."""
        fresh = _profile("fresh")
        try:
            first = self._page(fresh)
        finally:
            shutil.rmtree(fresh, ignore_errors=True)
        cached = self._page(self.cached_profile)
        samples = []
        for name, doc in (("chromium", first), ("chromium-cached", cached)):
            self.docs.setdefault(name, []).append(doc)
            samples.append(page_sample(name, doc))
        return samples

    def memory_rows(self) -> list[dict[str, Any]]:
        """The first-load run's plan beside what it measured (bytes: its first repetition)."""
        docs = self.docs.get(ENGINE, [])
        return [loader_memory_row(ENGINE, ENGINE, docs[0])] if docs else []

    def facts(self) -> dict[str, BrowserFacts]:
        return {name: facts_of(name, self.version, docs) for name, docs in self.docs.items()}

    def close(self) -> None:
        shutil.rmtree(self.cached_profile, ignore_errors=True)
