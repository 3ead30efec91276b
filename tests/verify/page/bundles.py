"""Bundles for the page tests, changed as the release writer would change them: a document
added or edited, report.html made again by the writer's own function (or edited by hand),
its provenance subject updated and signed again by the release key, then repacked."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipeline.documents.keys import load_private_key
from pipeline.documents.sign import sign_to_sigstore_bundle
from tests.harness.release import Harness, rederive_page, repack
from verify.bundle.layout import (
    MANIFEST,
    MEMORY_PLAN,
    PROVENANCE_SIGNATURE,
    REPORT,
    REPORT_PAGE,
    SBOM,
)
from verify.canonical import canonical_json

PREVIOUS = ("previous/manifest.json", "previous/verification-report.json", "previous/sbom.cdx.json")


def statement(b: Path) -> dict[str, Any]:
    doc = json.loads((b / PROVENANCE_SIGNATURE).read_bytes())["dsseEnvelope"]["payload"]
    result: dict[str, Any] = json.loads(base64.b64decode(doc))
    return result


def resign(b: Path, h: Harness, doc: dict[str, Any]) -> None:
    key = load_private_key(h.key.private_pem)
    envelope = json.loads((b / PROVENANCE_SIGNATURE).read_bytes())["dsseEnvelope"]
    (b / PROVENANCE_SIGNATURE).write_bytes(
        sign_to_sigstore_bundle(key, envelope["payloadType"], canonical_json(doc))
    )
    repack(b)


def set_subject(doc: dict[str, Any], name: str, data: bytes) -> None:
    digest = {"sha256": hashlib.sha256(data).hexdigest()}
    for subject in doc["subject"]:
        if subject["name"] == name:
            subject["digest"] = digest
            return
    doc["subject"].append({"name": name, "digest": digest})


def carry_previous(
    b: Path, h: Harness, edit: Callable[[dict[str, dict[str, Any]]], object] = lambda d: None
) -> None:
    """The bundle's own documents as the previous release's (version 9.9.8, a wasm lane 1000
    bytes bigger in its report: `edit` changes them further), the page made again."""
    docs = {name: json.loads((b / name).read_bytes()) for name in (MANIFEST, REPORT, SBOM)}
    docs[MANIFEST]["version"] = "9.9.8"
    docs[REPORT]["artifacts"][0]["size"] += 1000
    edit(docs)
    doc = statement(b)
    for name, path in zip((MANIFEST, REPORT, SBOM), PREVIOUS, strict=True):
        data = canonical_json(docs[name])
        (b / path).parent.mkdir(exist_ok=True)
        (b / path).write_bytes(data)
        set_subject(doc, path, data)
    rederive_page(b, doc)
    resign(b, h, doc)


def edit_page(b: Path, h: Harness, change: Callable[[bytes], bytes]) -> None:
    """report.html edited by hand, signed as it is (a builder whose page lies)."""
    page = change((b / REPORT_PAGE).read_bytes())
    (b / REPORT_PAGE).write_bytes(page)
    doc = statement(b)
    set_subject(doc, REPORT_PAGE, page)
    resign(b, h, doc)


def add_memory_plan(b: Path, h: Harness, data: bytes, page: bool = True) -> None:
    """memory-plan.json added as the release writes it: a subject of the signed provenance,
    report.html made again from it (`page`; a malformed plan keeps the old page: the writer
    would never have made one), then repacked."""
    (b / MEMORY_PLAN).write_bytes(data)
    doc = statement(b)
    set_subject(doc, MEMORY_PLAN, data)
    if page:
        rederive_page(b, doc)
    resign(b, h, doc)
