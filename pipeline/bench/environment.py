"""What each bench run ran on (issue 36): every decode and prefill run of a bench document
names its engine and version, the OS and architecture, the module and model digests, the
context, the workers and the cache state, so a figure read alone still says what it measured.

The cache state is the bench's own procedure, said per run: each repetition is a fresh process
(node: the module is compiled anew, no code cache; native: the binary is run anew); the model
file is read from disk each repetition (the OS page cache is warm after the first); the build
is whatever `build/` held (the lanes are built, cached when unchanged, before measuring); and
`warmup_tokens` are generated before the measured generation.
"""

from __future__ import annotations

import platform
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from verify.formats.base import Frozen, Sha256Hex

INT8_SUFFIX = "-int8"


class CacheState(Frozen):
    process: Literal["fresh-per-repetition"]
    module: Literal["compiled-fresh", "native-binary"] = Field(
        description="compiled-fresh: compiled by the engine in each process, no code cache"
    )
    model: Literal["read-from-file"]
    warmup_tokens: int = Field(ge=0, description="generated before the measured generation")


class RanOn(Frozen):
    engine: Literal["node", "native"]
    engine_version: str = Field(
        description="node: `vX.Y.Z (V8 …)`; native: the rustc that built it"
    )
    os: str = Field(description="platform.system() and release, e.g. `Linux 6.1.0`")
    arch: str = Field(description="platform.machine(), e.g. `x86_64`")
    module_sha256: Sha256Hex
    model_sha256: Sha256Hex
    tier: str
    context: int = Field(ge=1, description="admitted context of the session (the model's C_max)")
    workers: int = Field(ge=0)
    cache: CacheState


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
) -> dict[str, Any]:
    """The `ran_on` object of one run (a summarized decode or prefill run)."""
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
    return doc.model_dump(mode="json")


def stamp_runs(doc: dict[str, Any], **facts: Any) -> dict[str, Any]:
    """`doc` with `ran_on` on every decode and prefill run."""
    for key in ("runs", "prefill_runs"):
        doc[key] = [{**run, "ran_on": ran_on(run, **facts)} for run in doc[key]]
    return doc
