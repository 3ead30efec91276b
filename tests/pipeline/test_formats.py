"""Canonical JSON, DSSE PAE, strict parsing, and the committed JSON Schemas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pipeline.documents.sign import sign_envelope
from pipeline.formats import FORMATS
from verify.bundle.dsse import (
    Envelope,
    pae,
    parse_sigstore_bundle,
    sigstore_bundle_json,
    verify_signature,
)
from verify.bundle.errors import MalformedSignatureBundle, SignatureInvalid
from verify.canonical import MalformedJson, canonical_json, parse_json
from verify.formats.registry import schema_json

REPO_ROOT = Path(__file__).resolve().parents[2]

CANONICAL_CASES = [
    ({"b": 1, "a": [True, None]}, b'{"a":[true,null],"b":1}'),
    ({"n": 1.0, "m": 1e21, "s": "\u00e9\n"}, b'{"m":1e+21,"n":1,"s":"\xc3\xa9\\n"}'),
    ({"\u20ac": 1, "\r": 2, "1": 3}, b'{"\\r":2,"1":3,"\xe2\x82\xac":1}'),
    # U+1F600 is the surrogate pair D83D DE00 in UTF-16, before U+E000; in code points (or
    # UTF-8 bytes) it sorts after U+E000: only UTF-16 order gives these bytes
    (
        {"\ue000": 1, "\U0001f600": 2, "\uffff": 3},
        b'{"\xf0\x9f\x98\x80":2,"\xee\x80\x80":1,"\xef\xbf\xbf":3}',
    ),
]


@pytest.mark.parametrize(
    ("value", "expected"),
    CANONICAL_CASES,
    ids=["sorted-compact", "numbers-utf8", "utf16-key-order", "utf16-key-order-non-bmp"],
)
def test_canonical_json_is_rfc8785(value: Any, expected: bytes) -> None:
    assert canonical_json(value) == expected


@pytest.mark.parametrize(
    ("data", "offset"),
    [(b'{"a": 1, "a": 2}', None), (b'{"a": NaN}', None), (b'{"a": \xff}', 6), (b'{"a" 1}', 5)],
    ids=["duplicate-key", "nan", "not-utf8", "syntax"],
)
def test_strict_json_parse(data: bytes, offset: int | None) -> None:
    with pytest.raises(MalformedJson) as info:
        parse_json(data, "x.json")
    assert info.value.where == "x.json"
    assert info.value.offset == offset


def test_pae_matches_dsse_spec_example() -> None:
    # https://github.com/secure-systems-lab/dsse/blob/v1.0.0/protocol.md#signature-definition
    assert pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )


def test_sigstore_bundle_round_trip_and_signature() -> None:
    key = Ed25519PrivateKey.generate()
    envelope = sign_envelope(key, "application/x-test", b"payload")
    parsed = parse_sigstore_bundle(sigstore_bundle_json(envelope, "hint"), "t")
    assert parsed.envelope == envelope and parsed.hint == "hint"
    verify_signature(parsed.envelope, parsed.envelope.signatures[0], key.public_key(), "t")
    forged = Envelope("application/x-test", b"payloaD", envelope.signatures)
    with pytest.raises(SignatureInvalid):
        verify_signature(forged, forged.signatures[0], key.public_key(), "t")


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(mediaType="application/vnd.dev.sigstore.bundle+json;version=0.1"),
        lambda d: d["dsseEnvelope"].update(payload="@@@"),
        lambda d: d["dsseEnvelope"].update(extra=1),
        lambda d: d["verificationMaterial"].pop("publicKey"),
    ],
    ids=["old-media-type", "bad-base64", "unknown-field", "no-public-key"],
)
def test_sigstore_bundle_is_parsed_strictly(mutate: Any) -> None:
    import json

    key = Ed25519PrivateKey.generate()
    doc = json.loads(sigstore_bundle_json(sign_envelope(key, "t", b"p"), "h"))
    mutate(doc)
    with pytest.raises(MalformedSignatureBundle):
        parse_sigstore_bundle(json.dumps(doc).encode(), "t")


@pytest.mark.parametrize("name", list(FORMATS))
def test_committed_schema_matches_model(name: str) -> None:
    path = REPO_ROOT / "manifests/schemas" / f"{name}.json"
    assert path.is_file(), f"run `tinyrustlm-release schemas`: {path} is missing"
    assert path.read_text(encoding="utf-8") == schema_json(FORMATS[name])


def test_every_committed_schema_has_a_model() -> None:
    folder = REPO_ROOT / "manifests/schemas"
    committed = {p.name.removesuffix(".json") for p in folder.glob("*.json")}
    assert committed == set(FORMATS)
