"""The build id: one function, `verify.formats.manifest.build_id`, that the pipeline computes
and the bundle verifier recomputes; the order of the files is `ModuleManifest.listed_sizes`."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from verify.canonical import canonical_json, canonical_model
from verify.formats.manifest import ModuleManifest, build_id

WASM = {"artifacts/a.wasm": b"\0asm\1\0\0\0a", "artifacts/b.wasm": b"\0asm\1\0\0\0b"}
NATIVE = {"artifacts/tinyrustlm.x86_64": b"\x7fELF native"}
JS = {"js/host.js": b"export const host = 1;\n", "js/a-loader.js": b"export const l = 2;\n"}
FILES = {**WASM, **NATIVE, **JS}
# The id of the manifest below as computed before there was one build_id function (commit
# 252f6f0: `build_id_of` and the pipeline's own `manifest_without_build_id`). Pinned: a change
# of the order, the canonical form or the hashed fields would change every bundle's id.
PINNED = "82fd8dd5e0ca9fb3931cd0a57a47da170050321d424eef7578355e19b14d51ea"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _manifest(**changes: Any) -> ModuleManifest:
    doc: dict[str, Any] = {
        "version": "1.2.3",
        "source_revision": "a" * 40,
        "toolchain_lock_sha256": "b" * 64,
        "source_date_epoch": 1_700_000_000,
        "expires_epoch": 1_800_000_000,
        "key_class": "release",
        "build_id": "0" * 64,
        "artifacts": [
            {"id": f"lane-{url[-6]}", "url": url, "sha256": _sha(data), "size": len(data),
             "required_features": [], "forbidden_features": []}
            for url, data in WASM.items()
        ],
        "native_artifacts": [
            {"id": "x86_64-unknown-linux-gnu", "target": "x86_64-unknown-linux-gnu", "url": url,
             "sha256": _sha(data), "size": len(data)}
            for url, data in NATIVE.items()
        ],
        "js_files": [
            {"url": url, "sha256": _sha(data), "size": len(data)} for url, data in JS.items()
        ],
    }  # fmt: skip
    doc.update(changes)
    return ModuleManifest.model_validate(doc)


def test_build_id_is_the_documented_formula() -> None:
    """Written out apart from the code: SHA-256 over the canonical manifest without
    `build_id`, then the wasm artifacts', the native artifacts' and the JS files' bytes, each
    in manifest order (so not by url, nor by kind in another order)."""
    manifest = _manifest()
    doc = json.loads(canonical_model(manifest))
    del doc["build_id"]
    hashed = canonical_json(doc) + b"".join([*WASM.values(), *NATIVE.values(), *JS.values()])
    assert build_id(manifest, FILES) == _sha(hashed) == PINNED


def test_build_id_ignores_its_own_value_and_binds_every_file() -> None:
    manifest = _manifest()
    expected = build_id(manifest, FILES)
    assert build_id(manifest.model_copy(update={"build_id": "1" * 64}), FILES) == expected
    for url in FILES:
        assert build_id(manifest, {**FILES, url: FILES[url] + b"!"}) != expected, url
    assert build_id(_manifest(version="1.2.4"), FILES) != expected


def test_a_listed_file_that_is_not_given_is_an_error() -> None:
    with pytest.raises(KeyError, match=r"js/host\.js"):
        build_id(_manifest(), {u: d for u, d in FILES.items() if u != "js/host.js"})
