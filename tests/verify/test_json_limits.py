"""The JSON and input-size limits at their exact boundaries (issue 26).

Each limit is taken from the code (`MAX_JSON_DEPTH`, `MAX_JSON_BYTES`, `LIMITS`), never
copied: a document exactly at a limit is accepted, one step past it is refused with the
limit's own error id. The deep case is only one level past the limit, far below Python's
recursion limit, so it is the depth check that refuses it and never the `RecursionError`
fallback (a 100,000-deep document would be refused by the fallback alone).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from verify.canonical import (
    MAX_JSON_BYTES,
    MAX_JSON_DEPTH,
    JsonTooDeep,
    JsonTooLarge,
    MalformedJson,
    nesting_depth,
    parse_json,
)
from verify.errors import VerifyError
from verify.inputs import LIMITS, read_json_file, read_regular_file


def _nested(depth: int, open_: str = "[", close: str = "]") -> bytes:
    return (open_ * depth + close * depth).encode()


def _objects(depth: int) -> bytes:
    return ('{"a":' * depth + "1" + "}" * depth).encode()


@pytest.mark.parametrize("make", [_nested, _objects], ids=["arrays", "objects"])
def test_json_exactly_at_the_depth_limit_parses(make: object) -> None:
    assert callable(make)
    assert nesting_depth(make(MAX_JSON_DEPTH).decode()) == MAX_JSON_DEPTH
    parse_json(make(MAX_JSON_DEPTH), "doc")


@pytest.mark.parametrize("make", [_nested, _objects], ids=["arrays", "objects"])
def test_json_one_level_deeper_is_refused_by_the_depth_check(make: object) -> None:
    assert callable(make)
    with pytest.raises(JsonTooDeep) as caught:
        parse_json(make(MAX_JSON_DEPTH + 1), "doc")
    # the depth check's own message (the RecursionError fallback says "too deep for the parser")
    assert caught.value.error_id == "json.too-deep"
    assert caught.value.message == (
        f"JSON nested {MAX_JSON_DEPTH + 1} deep, more than {MAX_JSON_DEPTH}"
    )
    assert caught.value.where == "doc"


def test_brackets_inside_strings_do_not_count_towards_depth() -> None:
    text = b'["' + b"[" * (4 * MAX_JSON_DEPTH) + b'\\"' + b"{" * MAX_JSON_DEPTH + b'"]'
    assert parse_json(text, "doc") == ["[" * (4 * MAX_JSON_DEPTH) + '"' + "{" * MAX_JSON_DEPTH]


def test_the_depth_limit_is_a_parameter() -> None:
    parse_json(_nested(3), "doc", max_depth=3)
    with pytest.raises(JsonTooDeep):
        parse_json(_nested(4), "doc", max_depth=3)


def _padded(size: int) -> bytes:
    """A JSON string value exactly `size` bytes long."""
    return b'"' + b"x" * (size - 2) + b'"'


def test_json_exactly_at_the_size_limit_parses() -> None:
    data = _padded(MAX_JSON_BYTES)
    assert len(data) == MAX_JSON_BYTES
    assert len(parse_json(data, "doc")) == MAX_JSON_BYTES - 2


def test_json_one_byte_over_the_size_limit_is_refused() -> None:
    with pytest.raises(JsonTooLarge) as caught:
        parse_json(_padded(MAX_JSON_BYTES + 1), "doc")
    assert (caught.value.error_id, caught.value.offset) == ("json.too-large", MAX_JSON_BYTES)
    assert str(MAX_JSON_BYTES + 1) in caught.value.message


def test_the_size_limit_is_a_parameter() -> None:
    assert parse_json(b"[1]", "doc", max_bytes=3) == [1]
    with pytest.raises(JsonTooLarge):
        parse_json(b"[1] ", "doc", max_bytes=3)


@pytest.mark.parametrize(
    ("data", "error_id", "offset"),
    [
        (b'{"a": 1, "a": 2}', "json.malformed", None),
        (b"[NaN]", "json.malformed", None),
        (b"[Infinity]", "json.malformed", None),
        (b'["\xff"]', "json.malformed", 2),
        (b'["\xc3\xa9", ]', "json.malformed", 7),
    ],
    ids=["duplicate-key", "nan", "infinity", "not-utf8", "offset-in-bytes"],
)
def test_strict_json_errors(data: bytes, error_id: str, offset: int | None) -> None:
    with pytest.raises(MalformedJson) as caught:
        parse_json(data, "doc")
    assert (caught.value.error_id, caught.value.offset, caught.value.where) == (
        error_id,
        offset,
        "doc",
    )


# -- file limits (verify/inputs.py LIMITS) -----------------------------------------------
SMALL_KINDS = [kind for kind, limit in LIMITS.items() if limit <= MAX_JSON_BYTES]


@pytest.mark.parametrize("kind", SMALL_KINDS)
def test_a_file_exactly_at_its_limit_is_read(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "input"
    path.write_bytes(b"x" * LIMITS[kind])
    assert len(read_regular_file(path, kind)) == LIMITS[kind]


@pytest.mark.parametrize("kind", list(LIMITS))
def test_a_file_one_byte_over_its_limit_is_refused(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "input"
    with path.open("wb") as f:
        f.truncate(LIMITS[kind] + 1)  # sparse: costs no disk
    with pytest.raises(VerifyError) as caught:
        read_regular_file(path, kind)
    assert caught.value.error_id == "input.too-large"
    assert str(LIMITS[kind]) in caught.value.message


def test_a_file_that_reads_longer_than_its_size_stops_at_the_limit() -> None:
    """/proc files report size 0 and then yield bytes: the read loop's own bound refuses."""
    proc = Path("/proc/self/cmdline")
    content = proc.read_bytes()
    assert proc.stat().st_size == 0 and len(content) > 2
    assert read_regular_file(proc, "json", limit=len(content)) == content
    with pytest.raises(VerifyError) as caught:
        read_regular_file(proc, "json", limit=len(content) - 1)
    assert caught.value.error_id == "input.too-large" and "grew" in caught.value.message


def test_json_file_at_the_limit_then_over(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    path.write_bytes(_padded(LIMITS["json"]))
    assert len(read_json_file(path, "json")) == LIMITS["json"] - 2
    path.write_bytes(_padded(LIMITS["json"] + 1))
    with pytest.raises(VerifyError) as caught:
        read_json_file(path, "json")
    assert caught.value.error_id == "input.too-large"


def test_too_large_names_the_document() -> None:
    with pytest.raises(JsonTooLarge) as caught:
        parse_json(b"[1, 2]", "the/doc.json", max_bytes=5)
    assert caught.value.where == "the/doc.json"
    assert caught.value.message == "JSON document is 6 bytes, more than the limit of 5"


def test_a_scalar_has_depth_zero() -> None:
    assert nesting_depth('"[{"') == 0
    assert parse_json(b'"[{"', "doc", max_depth=0) == "[{"
    with pytest.raises(JsonTooDeep):
        parse_json(b"[]", "doc", max_depth=0)


def test_the_recursion_fallback_is_typed_too() -> None:
    """With the depth check lifted, the parser's own recursion limit still ends in a typed
    error (the fallback), never a RecursionError."""
    deep = _nested(100_000)
    with pytest.raises(JsonTooDeep) as caught:
        parse_json(deep, "doc", max_depth=len(deep))
    assert (caught.value.message, caught.value.where) == (
        "JSON nested too deep for the parser",
        "doc",
    )
