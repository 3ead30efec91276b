"""verify/canonical.py's writers: a model's canonical bytes (aliases, JSON-mode values, `None`
fields left out) and every value JCS cannot write refused as one typed error; the strict
reader's refusals word for word."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import BaseModel, Field

from verify.canonical import MalformedJson, canonical_json, canonical_model, parse_json
from verify.errors import VerifyError


class _Doc(BaseModel):
    a_b: int = Field(alias="aB")
    when: datetime
    gone: int | None = None
    kept: int | None = 0


def test_canonical_model_uses_aliases_json_values_and_drops_none() -> None:
    doc = _Doc.model_validate({"aB": 1, "when": datetime(2020, 1, 1, tzinfo=UTC)})
    assert canonical_model(doc) == b'{"aB":1,"kept":0,"when":"2020-01-01T00:00:00Z"}'


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (float("nan"), "nan is not representable in JCS"),
        ({1: 2}, "object keys must be strings"),
        (object(), "unsupported type: <class 'object'>"),
        (2**64, "18446744073709551616 exceeds safe integer domain for JSON floats"),
    ],
    ids=["nan", "int-key", "object", "huge-int"],
)
def test_values_jcs_cannot_write_are_one_typed_error(value: object, reason: str) -> None:
    with pytest.raises(VerifyError) as caught:
        canonical_json(value)
    assert caught.value.message == f"value cannot be written as canonical JSON: {reason}"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"[NaN]", "not acceptable JSON: non-standard JSON constant NaN"),
        (b"[-Infinity]", "not acceptable JSON: non-standard JSON constant -Infinity"),
        (b'{"k": 1, "k": 1}', "not acceptable JSON: duplicate key 'k'"),
        (b"[1,]", "not JSON: Expecting value"),
        (b"\xfe", "not UTF-8"),
    ],
    ids=["nan", "minus-infinity", "duplicate", "trailing-comma", "not-utf8"],
)
def test_the_reader_refuses_word_for_word(data: bytes, message: str) -> None:
    with pytest.raises(MalformedJson) as caught:
        parse_json(data, "doc")
    assert (caught.value.message, caught.value.where) == (message, "doc")


def test_the_reader_keeps_distinct_keys_and_order() -> None:
    assert list(parse_json(b'{"b": 1, "a": {"b": 2}}', "doc").items()) == [
        ("b", 1),
        ("a", {"b": 2}),
    ]
