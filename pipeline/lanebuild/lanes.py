"""manifests/lanes.toml as frozen values, validated on load."""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from pipeline.errors import PipelineError


class LanesError(PipelineError):
    """lanes.toml is malformed, or a lane id is unknown."""


class Lane(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

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
    shared_memory_bytes: int | None = Field(
        None, description="threads lane: imported shared memory, initial == maximum"
    )

    @model_validator(mode="after")
    def _no_native_cpu(self) -> Lane:
        if any("target-cpu=native" in flag for flag in self.rustflags):
            raise ValueError("target-cpu=native is never allowed in a release lane")
        if self.shared_memory_bytes is not None and self.shared_memory_bytes % 65536:
            raise ValueError("shared_memory_bytes must be a whole number of 64 KiB pages")
        return self

    @property
    def extension(self) -> str:
        return Path(self.cargo_output).suffix  # ".wasm", ".exe" or ""

    def digest(self) -> str:
        """SHA-256 of this lane's canonical entry: part of the build's cache key."""
        text = json.dumps(self.model_dump(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


class LanesFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

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
        return self

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
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        return LanesFile.model_validate(data)
    except OSError as exc:
        raise LanesError(f"cannot read lanes file: {exc.strerror}", where=str(path)) from exc
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
