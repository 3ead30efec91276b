"""Canonical JSON (RFC 8785, JCS) for everything that is signed or hashed.

One function writes signed bytes for both sides: the pipeline signs exactly what
`canonical_json` returns and verifiers decode the signed payload as-is; they never
re-serialise it before checking a signature or a digest.
"""

from __future__ import annotations

import json
from typing import Any

import rfc8785
from pydantic import BaseModel

from verify.errors import VerifyError


class MalformedJson(VerifyError):
    """Bytes that should hold one JSON document do not."""


def canonical_json(value: Any) -> bytes:
    """RFC 8785 bytes: sorted keys, no whitespace, UTF-8, shortest number forms."""
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise VerifyError(f"value cannot be written as canonical JSON: {exc}") from exc


def canonical_model(model: BaseModel) -> bytes:
    """A pydantic model's canonical JSON (field aliases, `None` fields left out)."""
    return canonical_json(model.model_dump(mode="json", by_alias=True, exclude_none=True))


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"duplicate key {key!r}")
        seen[key] = value
    return seen


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def parse_json(data: bytes, where: str) -> Any:
    """Strict JSON parse: UTF-8, no duplicate keys, no NaN/Infinity; errors name `where`."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedJson("not UTF-8", where=where, offset=exc.start) from exc
    try:
        return json.loads(
            text, object_pairs_hook=_refuse_duplicates, parse_constant=_refuse_constant
        )
    except json.JSONDecodeError as exc:
        offset = len(text[: exc.pos].encode("utf-8"))
        raise MalformedJson(f"not JSON: {exc.msg}", where=where, offset=offset) from exc
    except ValueError as exc:
        raise MalformedJson(f"not acceptable JSON: {exc}", where=where) from exc
