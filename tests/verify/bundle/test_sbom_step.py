"""Steps 9 and 10 on their own: the SBOM's file components against the files, and no builder
path in a signed document. The SBOM is itself listed in the signed manifest, so a changed SBOM
stops at step 6 in a whole run; these tests give the step a state (the pristine bundle's files
and manifest) with one document changed, and require each refusal's words and place."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.harness.release import Harness
from verify.bundle import errors as e
from verify.bundle.document_check import check_builder_paths, check_sbom
from verify.bundle.dsse import parse_sigstore_bundle
from verify.bundle.layout import MANIFEST, MANIFEST_SIGNATURE, PROVENANCE_SIGNATURE, SBOM
from verify.bundle.signature_check import Signed
from verify.formats.manifest import ModuleManifest


@dataclass(frozen=True)
class _Bundle:
    """What steps 9 and 10 read: the files, the verified manifest, the signed payloads."""

    files: dict[str, bytes]
    manifest: ModuleManifest
    signed: Signed


def _state(bundle: Path, sbom: Any = None) -> _Bundle:
    files = {
        p.relative_to(bundle).as_posix(): p.read_bytes() for p in bundle.rglob("*") if p.is_file()
    }
    if sbom is not None:
        files[SBOM] = sbom if isinstance(sbom, bytes) else json.dumps(sbom).encode()
    bundles = {
        n: parse_sigstore_bundle(files[n], n) for n in (MANIFEST_SIGNATURE, PROVENANCE_SIGNATURE)
    }
    manifest = ModuleManifest.model_validate_json(files[MANIFEST])
    return _Bundle(files, manifest, Signed(bundles, {}, ""))


def _check_sbom(b: _Bundle) -> str:
    return check_sbom(b.files, b.manifest)


def _check_builder_paths(b: _Bundle) -> str:
    return check_builder_paths(b.signed, b.files, b.manifest)


def _sbom(bundle: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((bundle / SBOM).read_text())
    return doc


def test_the_pristine_sbom_passes(pristine: tuple[Harness, Path]) -> None:
    bundle = pristine[1]
    files = [c for c in _sbom(bundle)["components"] if c.get("type") == "file"]
    assert _check_sbom(_state(bundle)) == f"{len(files)} file components"
    assert _check_builder_paths(_state(bundle)) == "4 documents"


def _edit(fn: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def edit(doc: dict[str, Any]) -> dict[str, Any]:
        fn(doc)
        return doc

    return edit


def _first_file(doc: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in doc["components"] if c.get("type") == "file")
    return found


NOT_CYCLONEDX: dict[str, Callable[[dict[str, Any]], Any]] = {
    "a-list": lambda d: [d],
    "bom-format": _edit(lambda d: d.update(bomFormat="SPDX")),
    "spec-version": _edit(lambda d: d.update(specVersion="1.5")),
    "components-not-a-list": _edit(lambda d: d.update(components={})),
}


@pytest.mark.parametrize("case", list(NOT_CYCLONEDX))
def test_not_cyclonedx_16(pristine: tuple[Harness, Path], case: str) -> None:
    bundle = pristine[1]
    with pytest.raises(e.SbomInvalid) as caught:
        _check_sbom(_state(bundle, NOT_CYCLONEDX[case](_sbom(bundle))))
    assert (caught.value.message, caught.value.where) == (
        "not a CycloneDX 1.6 JSON document", SBOM
    )  # fmt: skip


def test_sbom_not_json(pristine: tuple[Harness, Path]) -> None:
    with pytest.raises(e.SbomInvalid) as caught:
        _check_sbom(_state(pristine[1], b'{"bomFormat": }'))
    assert caught.value.message.startswith("not JSON: ")
    assert (caught.value.where, caught.value.offset) == (SBOM, 14)


BAD_FILE: dict[str, Callable[[dict[str, Any]], None]] = {
    "no-name": lambda c: c.pop("name"),
    "two-sha256": lambda c: c["hashes"].append(dict(c["hashes"][0])),
    "no-sha256": lambda c: c.update(hashes=[{"alg": "SHA-512", "content": "0"}]),
    "hash-not-text": lambda c: c.update(hashes=[{"alg": "SHA-256", "content": 5}]),
    "no-hashes": lambda c: c.pop("hashes"),
}


@pytest.mark.parametrize("case", list(BAD_FILE))
def test_a_file_component_needs_a_name_and_one_sha256(
    pristine: tuple[Harness, Path], case: str
) -> None:
    bundle = pristine[1]
    doc = _sbom(bundle)
    index = doc["components"].index(_first_file(doc))
    BAD_FILE[case](doc["components"][index])
    with pytest.raises(e.SbomInvalid) as caught:
        _check_sbom(_state(bundle, doc))
    assert (caught.value.message, caught.value.where) == (
        "file component needs a name and one SHA-256", f"{SBOM}: components[{index}]"
    )  # fmt: skip


def test_of_two_bad_file_components_the_first_is_named(pristine: tuple[Harness, Path]) -> None:
    bundle = pristine[1]
    doc = _sbom(bundle)
    files = [i for i, c in enumerate(doc["components"]) if c.get("type") == "file"]
    for i in (files[2], files[1]):
        doc["components"][i].pop("name")
    with pytest.raises(e.SbomInvalid) as caught:
        _check_sbom(_state(bundle, doc))
    assert caught.value.where == f"{SBOM}: components[{files[1]}]"


def test_not_cyclonedx_is_said_before_any_component(pristine: tuple[Harness, Path]) -> None:
    bundle = pristine[1]
    doc = _sbom(bundle)
    _first_file(doc).pop("name")
    doc["specVersion"] = "1.5"
    with pytest.raises(e.SbomInvalid) as caught:
        _check_sbom(_state(bundle, doc))
    assert (caught.value.message, caught.value.where) == ("not a CycloneDX 1.6 JSON document", SBOM)


def test_other_components_and_other_hashes_are_ignored(pristine: tuple[Harness, Path]) -> None:
    bundle = pristine[1]
    doc = _sbom(bundle)
    doc["components"].append({"type": "library", "name": 7, "hashes": "anything"})
    doc["components"].append("not even an object")
    _first_file(doc)["hashes"].append({"alg": "SHA-512", "content": "ab"})
    _first_file(doc)["hashes"].append("not a hash object")
    files = sum(c.get("type") == "file" for c in doc["components"] if isinstance(c, dict))
    assert _check_sbom(_state(bundle, doc)) == f"{files} file components"


def test_a_component_before_the_files_is_skipped_not_the_end(
    pristine: tuple[Harness, Path],
) -> None:
    """A non-file component first: the file components after it are still read."""
    bundle = pristine[1]
    doc = _sbom(bundle)
    files = [c for c in doc["components"] if c.get("type") == "file"]
    doc["components"] = [{"type": "library", "name": "lib"}, *doc["components"]]
    assert _check_sbom(_state(bundle, doc)) == f"{len(files)} file components"


def test_a_component_of_other_bytes_is_named(pristine: tuple[Harness, Path]) -> None:
    bundle = pristine[1]
    doc = _sbom(bundle)
    component = _first_file(doc)
    component["hashes"] = [{"alg": "SHA-256", "content": "0" * 64}]
    with pytest.raises(e.SbomMismatch) as caught:
        _check_sbom(_state(bundle, doc))
    assert caught.value.where == SBOM
    assert caught.value.message == (
        f"file components do not match the files: digest differs: {component['name']}"
    )


def test_every_differing_component_is_named(pristine: tuple[Harness, Path]) -> None:
    bundle = pristine[1]
    doc = _sbom(bundle)
    files = [c for c in doc["components"] if c.get("type") == "file"]
    for component in files[:2]:
        component["hashes"] = [{"alg": "SHA-256", "content": "0" * 64}]
    doc["components"].remove(files[2])
    with pytest.raises(e.SbomMismatch) as caught:
        _check_sbom(_state(bundle, doc))
    first, second = sorted(c["name"] for c in files[:2])
    assert caught.value.message == (
        f"file components do not match the files: digest differs: {first}, {second}; "
        f"not named: {files[2]['name']}"
    )


def test_a_builder_path_in_a_signed_document(pristine: tuple[Harness, Path]) -> None:
    bundle = pristine[1]
    doc = _sbom(bundle)
    doc["metadata"] = {"note": "/home/builder/src/x.rs", "other": "/root/y"}
    with pytest.raises(e.BuilderPathLeaked) as caught:
        _check_builder_paths(_state(bundle, doc))
    assert caught.value.message == (
        "names the builder's absolute path '/home/builder/src/x.rs' (2 in all); signed "
        "documents name locations as $WORKSPACE/... or $CARGO_HOME/..."
    )
    assert caught.value.where == f"{SBOM}: metadata.note"


def test_a_builder_path_is_placed_by_its_whole_key(pristine: tuple[Harness, Path]) -> None:
    """Only the leading dot of the path is dropped: a key's own first letters stay."""
    bundle = pristine[1]
    doc = _sbom(bundle)
    doc["XLocation"] = "/home/builder/src"
    with pytest.raises(e.BuilderPathLeaked) as caught:
        _check_builder_paths(_state(bundle, doc))
    assert caught.value.where == f"{SBOM}: XLocation"


def test_a_signed_document_that_is_not_json(pristine: tuple[Harness, Path]) -> None:
    with pytest.raises(e.BuilderPathLeaked) as caught:
        _check_builder_paths(_state(pristine[1], b"[1,"))
    assert (caught.value.where, caught.value.offset) == (SBOM, 3)
    assert caught.value.message.startswith("not JSON: ")
