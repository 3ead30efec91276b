"""manifests/lanes.toml as frozen values, validated on load."""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, model_validator

from pipeline.errors import PipelineError
from verify.canonical import canonical_json
from verify.errors import VerifyError
from verify.formats.base import StrictFrozen
from verify.inputs import read_regular_file

# The engines that can smoke-test a lane: the names lanes.toml may use. Each one's code is in
# pipeline/lanebuild/smoke.py (`RUNNERS`, keyed by exactly these names; a test keeps them equal).
SmokeRunner = Literal[
    "wasmtime-mvp",
    "wasmtime-simd128",
    "wasmtime-relaxed-simd",
    "node-workers",
    "native",
    "qemu-aarch64",
    "wine64",
]


class LanesError(PipelineError):
    """lanes.toml is malformed, or a lane id is unknown."""

    error_id = "lanes.invalid"
    default_hint = "fix lanes.toml at the field named, or pass a lane id that lanes.toml defines"


class BenchRun(StrictFrozen):
    name: str = Field(description="the name the bench reports this run under")
    workers: int = Field(ge=0, description="threads lane: pool workers; 0: no pool")


class BenchRole(StrictFrozen):
    """How `nox -s bench` measures a lane (pipeline/bench/lanes.py)."""

    runs: list[BenchRun] = Field(min_length=1, description="decode runs of the bench model")
    kernels: str | None = Field(
        None, description="build the kernel harness with this lane's flags, reported as this name"
    )
    parser_input: bool = Field(False, description="seed module of the Wasm parser benchmark")


WASM_PAGE = 65536
WASM32_MAX_BYTES = 1 << 32  # 65536 pages: the wasm32 address space


class SharedMemory(StrictFrozen):
    """The imported shared memory's declared limits (the driver's --initial-memory and
    --max-memory). The host creates the memory itself, initial == maximum, at the plan's size
    within them; engines reserve the Memory the host creates, never the import's maximum."""

    min_bytes: int = Field(
        gt=0, description="the declared minimum: static data, worker stacks, the self-test's heap"
    )
    max_bytes: int = Field(
        le=WASM32_MAX_BYTES, description="the declared maximum: the largest plan a host may create"
    )

    @model_validator(mode="after")
    def _whole_pages(self) -> SharedMemory:
        if self.min_bytes % WASM_PAGE or self.max_bytes % WASM_PAGE:
            raise ValueError("shared_memory sizes must be whole numbers of 64 KiB pages")
        if self.min_bytes > self.max_bytes:
            raise ValueError("shared_memory.min_bytes must not exceed max_bytes")
        return self


# Fields that say how a lane is used after its build: not part of the build's cache key.
_NOT_BUILD_INPUTS = frozenset({"bench", "golden_oracle", "native_runner"})


class Lane(StrictFrozen):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    kind: Literal["wasm", "native"]
    target: str
    package: str
    cargo_output: str = Field(description="file name cargo writes under target/<triple>/release/")
    linker: str = Field(pattern=r"^/", description="absolute path, from toolchain.lock")
    rustflags: list[str]
    link_args: list[str]
    env: dict[str, str] = Field(description="extra environment for this lane's compiler run")
    expected_features: list[str]
    strip_custom_sections: list[str] = Field(
        [], description="wasm: custom sections `wasm-tools strip` deletes after linking"
    )
    build_std: list[str] = Field(
        [],
        description="std crates rebuilt from toolchain.lock's std_source with this lane's "
        "rustflags (pipeline/lanebuild/stdbuild.py); empty: the target's prebuilt Debian std",
    )
    shared_memory: SharedMemory | None = Field(
        None, description="threads lane: the limits its imported shared memory declares"
    )
    smoke: SmokeRunner = Field(
        description="the engine that self-tests it (pipeline/lanebuild/smoke.py)"
    )
    golden_oracle: bool = Field(False, description="the native scalar oracle of tests/golden/")
    bench: BenchRole | None = None
    native_runner: str | None = Field(
        None,
        pattern=r"^[a-z0-9][a-z0-9.-]*$",
        description="GitHub Actions runner label whose hardware runs the artifact natively "
        "(release.yml's smoke job); for lanes whose `smoke` engine emulates it",
    )

    @model_validator(mode="after")
    def _no_native_cpu(self) -> Lane:
        if any("target-cpu=native" in flag for flag in self.rustflags):
            raise ValueError("target-cpu=native is never allowed in a release lane")
        return self

    @property
    def extension(self) -> str:
        return Path(self.cargo_output).suffix  # ".wasm", ".exe" or ""

    def digest(self) -> str:
        """SHA-256 of this lane's canonical entry: part of the build's cache key."""
        entry = self.model_dump(mode="json", exclude=set(_NOT_BUILD_INPUTS))
        return hashlib.sha256(canonical_json(entry)).hexdigest()


class LanesFile(StrictFrozen):
    schema_: Literal["tinyrustlm.lanes.v1"] = Field(alias="schema")
    workspace: str
    remap_workspace: str = Field(pattern=r"^/")
    remap_cargo_home: str = Field(pattern=r"^/")
    lane: list[Lane] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> LanesFile:
        ids = [lane.id for lane in self.lane]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"duplicate lane id(s): {', '.join(duplicates)}")
        oracles = [lane.id for lane in self.lane if lane.golden_oracle]
        if len(oracles) != 1:
            raise ValueError(f"exactly one lane must be the golden_oracle, not {oracles}")
        return self

    @property
    def golden_oracle(self) -> Lane:
        return next(lane for lane in self.lane if lane.golden_oracle)

    def of_kind(self, kind: str) -> list[Lane]:
        return [lane for lane in self.lane if lane.kind == kind]

    def select(self, ids: list[str] | None) -> list[Lane]:
        if not ids:
            return list(self.lane)
        known = {lane.id: lane for lane in self.lane}
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise LanesError(
                f"unknown lane(s): {', '.join(unknown)}",
                hint="known lanes: " + ", ".join(known),
            )
        return [known[i] for i in ids]


def load_lanes(path: Path) -> LanesFile:
    try:
        data = tomllib.loads(read_regular_file(path, "toml").decode("utf-8"))
        return LanesFile.model_validate(data)
    except VerifyError as exc:  # missing, not a regular file, too large
        raise LanesError(
            f"cannot read lanes file: {exc.message} [{exc.error_id}]", where=str(path)
        ) from exc
    except UnicodeDecodeError as exc:
        raise LanesError(f"not UTF-8 at byte {exc.start}", where=str(path)) from exc
    except tomllib.TOMLDecodeError as exc:
        raise LanesError(f"not valid TOML: {exc}", where=str(path)) from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = list(first["loc"])
        if len(loc) >= 2 and loc[0] == "lane" and isinstance(loc[1], int):
            lanes = data.get("lane", [])
            lane_id = lanes[loc[1]].get("id", "?") if loc[1] < len(lanes) else "?"
            loc[1] = f"{loc[1]}(id={lane_id})"
        field = ".".join(str(p) for p in loc) or "(file)"
        raise LanesError(f"field '{field}': {first['msg']}", where=str(path)) from exc
