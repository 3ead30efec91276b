"""What every versioned format shares: frozen models that refuse unknown fields, hex digests."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class Frozen(BaseModel):
    """A format's model: immutable once read, and a field it does not know is an error."""

    model_config = ConfigDict(frozen=True, extra="forbid")


Sha256Hex = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class StrictFrozen(Frozen):
    """A data file people write (TOML): no coercion, so `"1"` is never taken for `1`."""

    model_config = ConfigDict(strict=True)  # merged with Frozen's config


# Which lanes exist is data (manifests/lanes.toml, the lane policy); formats check the shape.
LaneId = Annotated[
    str, Field(pattern=r"^[a-z0-9][a-z0-9_-]*$", description="lane id, as the lane policy names it")
]
