"""What a build leaves behind: one record per lane and an index of all lanes (JSON, versioned)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from verify.formats.base import Frozen, Sha256Hex
from verify.formats.manifest import GitRevision

SmokeStatus = Literal["pass", "fail", "not-run"]


class SmokeResult(Frozen):
    """Outcome of running the artifact's startup self-test right after it was built."""

    status: SmokeStatus
    engine: str = Field(description="what ran it, e.g. 'wasmtime-py 50.0.1', 'qemu-aarch64-static'")
    detail: str = ""


class BuildInputs(Frozen):
    sources_sha256: Sha256Hex = Field(description="digest of every tracked file under crates/")
    cargo_lock_sha256: Sha256Hex
    lane_entry_sha256: Sha256Hex = Field(
        description="digest of the lane's canonical lanes.toml entry"
    )
    toolchain_lock_sha256: Sha256Hex
    input_digest: Sha256Hex = Field(description="digest over all of the above: the cache key")


class BuildOutput(Frozen):
    path: str = Field(description="content-addressed artifact, relative to the repo root")
    sha256: Sha256Hex
    size: int


class BuildRecord(Frozen):
    schema_: Literal["tinyrustlm.build-record.v1"] = Field(
        "tinyrustlm.build-record.v1", alias="schema"
    )
    lane: str
    target: str
    kind: Literal["wasm", "native"]
    argv: list[str] = Field(
        description="as run, with $WORKSPACE/$CARGO_HOME for the builder's paths"
    )
    post_link_argv: list[list[str]] = Field(
        [], description="commands run on cargo's output, in order (e.g. wasm-tools strip)"
    )
    env: dict[str, str] = Field(
        description="the complete environment the compiler ran with ($WORKSPACE/$CARGO_HOME "
        "for the builder's paths)"
    )
    source_date_epoch: int
    inputs: BuildInputs
    output: BuildOutput
    smoke: SmokeResult


class IndexEntry(Frozen):
    lane: str
    target: str
    kind: Literal["wasm", "native"]
    artifact: str = Field(description="path relative to the repo root")
    sha256: Sha256Hex
    size: int
    record: str = Field(description="path of the lane's BuildRecord, relative to the repo root")
    smoke: SmokeResult


class BuildIndex(Frozen):
    """build/index.json: the last build of every lane; what verify and release read."""

    schema_: Literal["tinyrustlm.build-index.v1"] = Field(
        "tinyrustlm.build-index.v1", alias="schema"
    )
    source_revision: GitRevision
    source_date_epoch: int
    toolchain_lock_sha256: Sha256Hex
    lanes: list[IndexEntry]
