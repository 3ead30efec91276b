"""What every versioned format shares: frozen models that refuse unknown fields, hex digests."""

from __future__ import annotations

import json
from typing import Annotated, TypeVar

from pydantic import BaseModel, ConfigDict, Field


class Frozen(BaseModel):
    """A format's model: immutable once read, and a field it does not know is an error."""

    model_config = ConfigDict(frozen=True, extra="forbid")


Sha256Hex = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]

M = TypeVar("M", bound=BaseModel)


def strict_model(model: type[M], doc: object) -> M:
    """`doc`, a JSON value already parsed (by `verify.canonical.parse_json`: no duplicate keys,
    NaN or excess size), validated as the JSON it is with no coercion: `true` is not 1, `1.0`
    is not an int, `"1"` is not a number, and a time is an RFC 3339 string, never a number (of
    seconds, or of milliseconds above 2e10, as lax pydantic reads it). Every reader of a signed
    document or trust file reads it this way (or `model_validate_json(data, strict=True)` on
    the bytes). Raises pydantic's `ValidationError`."""
    return model.model_validate_json(json.dumps(doc, allow_nan=False), strict=True)


class StrictFrozen(Frozen):
    """A data file people write (TOML): no coercion, so `"1"` is never taken for `1`."""

    model_config = ConfigDict(strict=True)  # merged with Frozen's config


# Which lanes exist is data (manifests/lanes.toml, the lane policy); formats check the shape.
LaneId = Annotated[
    str, Field(pattern=r"^[a-z0-9][a-z0-9_-]*$", description="lane id, as the lane policy names it")
]
