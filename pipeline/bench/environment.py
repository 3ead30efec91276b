"""What each bench run ran on (issue 36): every decode and prefill run of a bench document
names its engine and version, the OS and architecture, the module and model digests, the
context, the workers and the cache state, so a figure read alone still says what it measured.

The cache state is the bench's own procedure, said per run: each repetition is a fresh process
(node: the module is compiled anew, no code cache; native: the binary is run anew); the model
file is read from disk each repetition (the OS page cache is warm after the first); the build
is whatever `build/` held (the lanes are built, cached when unchanged, before measuring); and
`warmup_tokens` are generated before the measured generation.

The browser runs (pipeline/bench/browser.py) say more: the lane js/loader.js chose, and the
loader's cache state — `first-load` (a fresh browser profile: the loader fetches, hashes and
stores module and model) or `cached` (a profile whose loader store holds both from a priming
load; every hit re-hashed) — with what the loader's receipt observed for each (`fetched`).
"""

from __future__ import annotations

import platform
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, model_validator

from verify.formats.base import Frozen, Sha256Hex

INT8_SUFFIX = "-int8"


FetchCache = Literal["off", "miss", "stored", "hit", "poisoned", "quota-exceeded", "write-failed"]
LoaderState = Literal["first-load", "cached"]


class LoaderFetched(Frozen):
    """What the loader's receipt says of the files it fetched (`fetched[].cache`)."""

    module: FetchCache
    model: FetchCache


class CacheState(Frozen):
    process: Literal["fresh-per-repetition"] = Field(
        description="node: a process; native: the binary; browser: a browser launch"
    )
    module: Literal["compiled-fresh", "native-binary"] = Field(
        description="compiled-fresh: compiled by the engine in each process, no code cache"
    )
    model: Literal["read-from-file", "fetched-by-loader"]
    warmup_tokens: int = Field(ge=0, description="generated before the measured generation")
    loader: LoaderState | None = Field(
        default=None,
        description="browser: first-load (a fresh profile) or cached (the loader's store "
        "primed by an earlier load in the same profile)",
    )
    fetched: LoaderFetched | None = Field(
        default=None, description="browser: what the loader's receipt observed"
    )


@dataclass(frozen=True)
class BrowserFacts:
    """What a browser run adds to its `ran_on` (every repetition agreed on them)."""

    engine: Literal["chromium"]
    engine_version: str
    lane: str  # the lane js/loader.js chose
    loader: LoaderState
    fetched: LoaderFetched
    context: int


class RanOn(Frozen):
    engine: Literal["node", "native", "chromium"]
    engine_version: str = Field(
        description="node: `vX.Y.Z (V8 …)`; native: the rustc that built it; chromium: "
        "`chromium --version`"
    )
    lane: str | None = Field(
        default=None, description="browser: the lane js/loader.js chose (its artifact id)"
    )
    os: str = Field(description="platform.system() and release, e.g. `Linux 6.1.0`")
    arch: str = Field(description="platform.machine(), e.g. `x86_64`")
    module_sha256: Sha256Hex
    model_sha256: Sha256Hex
    tier: str
    context: int = Field(ge=1, description="admitted context of the session (the model's C_max)")
    workers: int = Field(ge=0)
    cache: CacheState

    @model_validator(mode="after")
    def _browser_says_more(self) -> RanOn:
        """A browser run names its lane and loader cache state; node and native runs do not."""
        browser = self.engine == "chromium"
        said = (self.lane, self.cache.loader, self.cache.fetched)
        if browser and None in said:
            raise ValueError("a browser run names its lane, loader cache state and fetches")
        if not browser and said != (None, None, None):
            raise ValueError(f"a {self.engine} run has no loader: no lane or loader cache state")
        if browser != (self.cache.model == "fetched-by-loader"):
            raise ValueError("the model is fetched by the loader exactly in a browser run")
        return self


def host() -> tuple[str, str]:
    """(os, arch) of this machine."""
    return f"{platform.system()} {platform.release()}", platform.machine()


def ran_on(
    run: Mapping[str, Any],
    *,
    native_names: frozenset[str],
    node_version: str,
    rustc_version: str,
    model_digests: Mapping[str, str],
    context: int,
    warmup_tokens: int,
    os_arch: tuple[str, str],
    browser_runs: Mapping[str, BrowserFacts] | None = None,
) -> dict[str, Any]:
    """The `ran_on` object of one run (a summarized decode or prefill run)."""
    browser = (browser_runs or {}).get(run["name"])
    if browser is not None:
        return _browser_ran_on(run, browser, model_digests, warmup_tokens, os_arch)
    native = run["name"] in native_names
    tier = "int8" if str(run["name"]).endswith(INT8_SUFFIX) else "f32"
    doc = RanOn(
        engine="native" if native else "node",
        engine_version=rustc_version if native else node_version,
        os=os_arch[0],
        arch=os_arch[1],
        module_sha256=run["module_sha256"],
        model_sha256=model_digests[tier],
        tier=tier,
        context=context,
        workers=int(run.get("workers", 0)),
        cache=CacheState(
            process="fresh-per-repetition",
            module="native-binary" if native else "compiled-fresh",
            model="read-from-file",
            warmup_tokens=warmup_tokens,
        ),
    )
    return doc.model_dump(mode="json", exclude_none=True)


def _browser_ran_on(
    run: Mapping[str, Any],
    facts: BrowserFacts,
    model_digests: Mapping[str, str],
    warmup_tokens: int,
    os_arch: tuple[str, str],
) -> dict[str, Any]:
    tier = "int8" if str(run["name"]).endswith(INT8_SUFFIX) else "f32"
    doc = RanOn(
        engine=facts.engine,
        engine_version=facts.engine_version,
        lane=facts.lane,
        os=os_arch[0],
        arch=os_arch[1],
        module_sha256=run["module_sha256"],
        model_sha256=model_digests[tier],
        tier=tier,
        context=facts.context,
        workers=int(run.get("workers", 0)),
        cache=CacheState(
            process="fresh-per-repetition",
            module="compiled-fresh",
            model="fetched-by-loader",
            warmup_tokens=warmup_tokens,
            loader=facts.loader,
            fetched=facts.fetched,
        ),
    )
    return doc.model_dump(mode="json", exclude_none=True)


def stamp_runs(doc: dict[str, Any], **facts: Any) -> dict[str, Any]:
    """`doc` with `ran_on` on every decode and prefill run."""
    for key in ("runs", "prefill_runs"):
        doc[key] = [{**run, "ran_on": ran_on(run, **facts)} for run in doc[key]]
    return doc
