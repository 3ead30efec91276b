"""Canonical JSON (RFC 8785, JCS) for everything that is signed or hashed.

One function writes signed bytes for both sides: the pipeline signs exactly what
`canonical_json` returns and verifiers decode the signed payload as-is; they never
re-serialise it before checking a signature or a digest.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any, ClassVar

import rfc8785
from pydantic import BaseModel

from verify.errors import VerifyError

# Every JSON input is bounded: no release document comes near these, and nothing past them is
# parsed (deep nesting would exhaust the parser's recursion, a huge text the memory).
MAX_JSON_BYTES = 16 * 1024 * 1024
MAX_JSON_DEPTH = 64


class MalformedJson(VerifyError):
    """Bytes that should hold one JSON document do not."""

    error_id: ClassVar[str] = "json.malformed"
    default_hint = (
        "the file must be strict JSON (UTF-8, no duplicate keys, no NaN): regenerate it with the "
        "tool that writes it"
    )


class JsonTooLarge(MalformedJson):
    error_id = "json.too-large"
    default_hint = "no input of this kind is that large: check you gave the right file"


class JsonTooDeep(MalformedJson):
    error_id = "json.too-deep"
    default_hint = "no input of this kind nests that deep: check you gave the right file"


class JsonNotOfItsFormat(VerifyError):
    """Well-formed JSON that is not a valid document of the format it was read as."""

    error_id = "json.invalid"
    default_hint = (
        "the file is not of its format (the schema in manifests/schemas/): regenerate it with "
        "the tool that writes it, or check you gave the right file"
    )


class NotCanonicalizable(VerifyError):
    """A value RFC 8785 cannot write (a non-finite number, a non-string key, a huge integer)."""

    error_id = "json.not-canonical"
    default_hint = (
        "a value to be signed has no canonical JSON form (a non-finite number, a non-string "
        "key): report it with the message"
    )


def canonical_json(value: Any) -> bytes:
    """RFC 8785 bytes: sorted keys, no whitespace, UTF-8, shortest number forms."""
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise NotCanonicalizable(f"value cannot be written as canonical JSON: {exc}") from exc


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


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_NESTING = {"[": 1, "{": 1, "]": -1, "}": -1}


def nesting_depth(text: str) -> int:
    """Deepest bracket nesting outside strings (C-speed passes: no per-character Python loop
    over the text, only over its brackets)."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_NESTING.__getitem__, brackets)), default=0)


def parse_json(
    data: bytes, where: str, *, max_bytes: int = MAX_JSON_BYTES, max_depth: int = MAX_JSON_DEPTH
) -> Any:
    """Strict, bounded JSON parse: UTF-8, no duplicate keys, no NaN/Infinity, at most
    `max_bytes` long and `max_depth` deep; every error is a `MalformedJson` naming `where`."""
    if len(data) > max_bytes:
        raise JsonTooLarge(
            f"JSON document is {len(data)} bytes, more than the limit of {max_bytes}",
            where=where,
            offset=max_bytes,
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedJson("not UTF-8", where=where, offset=exc.start) from exc
    depth = nesting_depth(text)
    if depth > max_depth:
        raise JsonTooDeep(f"JSON nested {depth} deep, more than {max_depth}", where=where)
    try:
        return json.loads(
            text, object_pairs_hook=_refuse_duplicates, parse_constant=_refuse_constant
        )
    except RecursionError as exc:  # belt and braces: the depth check should stop it first
        raise JsonTooDeep("JSON nested too deep for the parser", where=where) from exc
    except json.JSONDecodeError as exc:
        offset = len(text[: exc.pos].encode("utf-8"))
        raise MalformedJson(f"not JSON: {exc.msg}", where=where, offset=offset) from exc
    except ValueError as exc:
        raise MalformedJson(f"not acceptable JSON: {exc}", where=where) from exc
