"""Every refusal of the bundle verifier, word for word: one row per way a bundle is refused.

A row says how to tamper with a copy of the pristine release (`tests.harness.release`), which
error id the verifier must raise, at which step, and the exact message and `where` (the file
and field it names: that text is the user-facing contract, scripts and people act on it).
Signed documents are changed and signed again with the release key, as a builder holding the
key could, so only the step under test can refuse them. Message and place templates are
filled from the tampered bundle (`{keyid16}`, `{bundle}`, ...).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pipeline.documents.keys import generate_key_files, load_private_key
from pipeline.documents.sign import add_signature, sign_to_sigstore_bundle
from tests.harness.conformance import Row, report_v3
from tests.harness.release import Harness, copy_pristine, fake_report, rederive_page, repack
from verify.bundle import opened, step_titles, verifier
from verify.bundle.keyless import KEYLESS_SIGNATURE, KeylessIdentity
from verify.bundle.layout import (
    CONFORMANCE,
    MANIFEST,
    MANIFEST_SIGNATURE,
    PROVENANCE_SIGNATURE,
    REPORT,
    SBOM,
    bundle_name,
)
from verify.bundle.opened import Opened
from verify.bundle.report_check import check_report
from verify.bundle.tarball import HARD_LIMITS, deterministic_tarball
from verify.bundle.trusted_keys import load_trusted_keys, trust_root_from_keys
from verify.bundle.verifier import StepResult
from verify.canonical import canonical_json
from verify.errors import VerifyError
from verify.formats.conformance import MODEL_TIERS
from verify.formats.manifest import ModuleManifest
from verify.formats.report import VerificationReport, WasmSummary
from verify.inputs import InputError, read_regular_file

TARBALL = "tinyrustlm-9.9.9.tar.gz"
PROV_WHERE = f"{PROVENANCE_SIGNATURE}: payload"
SUBJECT_RULE = "subject needs a unique name and a sha256 digest"


@pytest.fixture(autouse=True)
def _fake_inspection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verifier, "default_deriver", lambda: fake_report)


@dataclass
class Tampered:
    """What a tamper did: template facts, `verify_bundle` options, another input or trust
    file."""

    facts: dict[str, object] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None
    trusted: Path | None = None


Tamper = Callable[[Path, Harness], Tampered]


@dataclass(frozen=True)
class Refusal:
    tamper: Tamper
    error_id: str
    step: int
    message: str  # a template, filled from the facts
    where: str  # a template too
    offset: int | str | None = None  # a template when it depends on the bundle


# -- helpers --------------------------------------------------------------------------------
def _key(h: Harness) -> Ed25519PrivateKey:
    return load_private_key(h.key.private_pem)


def _payload(b: Path, name: str) -> bytes:
    return base64.b64decode(json.loads((b / name).read_bytes())["dsseEnvelope"]["payload"])


def _sign(b: Path, h: Harness, name: str, payload: bytes, payload_type: str | None = None) -> None:
    envelope = json.loads((b / name).read_bytes())["dsseEnvelope"]
    (b / name).write_bytes(
        sign_to_sigstore_bundle(_key(h), payload_type or envelope["payloadType"], payload)
    )


def _manifest(b: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((b / MANIFEST).read_bytes())
    return doc


def _resign_manifest(change: Callable[[dict[str, Any]], object]) -> Tamper:
    """manifest.json changed, written canonical, and signed again by the release key."""

    def tamper(b: Path, h: Harness) -> Tampered:
        doc = _manifest(b)
        change(doc)
        payload = canonical_json(doc)
        (b / MANIFEST).write_bytes(payload)
        _sign(b, h, MANIFEST_SIGNATURE, payload)
        return Tampered()

    return tamper


def _signed_manifest_bytes(payload: bytes, keep_manifest_json: bool = False) -> Tamper:
    """The manifest signature over `payload` (manifest.json kept, or made the same bytes)."""

    def tamper(b: Path, h: Harness) -> Tampered:
        _sign(b, h, MANIFEST_SIGNATURE, payload)
        if not keep_manifest_json:
            (b / MANIFEST).write_bytes(payload)
        return Tampered()

    return tamper


def _resign_statement(change: Callable[[dict[str, Any]], object]) -> Tamper:
    """The provenance statement changed in place and signed again by the release key."""

    def tamper(b: Path, h: Harness) -> Tampered:
        statement = json.loads(_payload(b, PROVENANCE_SIGNATURE))
        change(statement)
        _sign(b, h, PROVENANCE_SIGNATURE, canonical_json(statement))
        return Tampered()

    return tamper


def _statement_in_a_list(b: Path, h: Harness) -> Tampered:
    _sign(
        b, h, PROVENANCE_SIGNATURE, canonical_json([json.loads(_payload(b, PROVENANCE_SIGNATURE))])
    )
    return Tampered()


def _signed_statement_bytes(payload: bytes) -> Tamper:
    def tamper(b: Path, h: Harness) -> Tampered:
        _sign(b, h, PROVENANCE_SIGNATURE, payload)
        return Tampered()

    return tamper


def _subject(name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def find(statement: dict[str, Any]) -> dict[str, Any]:
        found: dict[str, Any] = next(s for s in statement["subject"] if s["name"] == name)
        return found

    return find


def _files(b: Path) -> list[str]:
    """Every entry under the bundle, in the order the folder reader walks them."""
    return [p.relative_to(b).as_posix() for p in sorted(b.rglob("*"))]


def _sizes(b: Path) -> dict[str, int]:
    return {p.relative_to(b).as_posix(): p.stat().st_size for p in b.rglob("*") if p.is_file()}


def _wasm(b: Path, index: int) -> str:
    url: str = _manifest(b)["artifacts"][index]["url"]
    return url


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- step 1: reading the folder -------------------------------------------------------------
def _entries_over(b: Path, h: Harness) -> Tampered:
    names = _files(b)
    n = len(names) - 1
    return Tampered({"n": n, "last": names[n]}, {"limits": replace(HARD_LIMITS, entries=n)})


def _symlink(b: Path, h: Harness) -> Tampered:
    (b / "js/link.js").symlink_to("host.js")
    return Tampered()


def _named_pipe(b: Path, h: Harness) -> Tampered:
    os.mkfifo(b / "js/pipe")
    return Tampered()


def _total_over(b: Path, h: Harness) -> Tampered:
    """The uncompressed files add up to one byte over the total (the tarball is not counted)."""
    total = sum(size for name, size in _sizes(b).items() if name != TARBALL) - 1
    last = [n for n in _files(b) if (b / n).is_file() and n != TARBALL][-1]
    return Tampered({"n": total, "last": last}, {"limits": replace(HARD_LIMITS, total_bytes=total)})


def _largest_over(json_files: bool) -> Tamper:
    """The largest JSON file, or non-JSON member, one byte over its own limit (the member
    limit and the JSON limit are separate; the other stays high)."""
    limit = "json_bytes" if json_files else "member_bytes"

    def tamper(b: Path, h: Harness) -> Tampered:
        sizes = {
            n: s
            for n, s in _sizes(b).items()
            if n.endswith(".json") == json_files and not n.endswith(".tar.gz")
        }
        largest = max(sizes, key=lambda n: (sizes[n], n))
        cap = sizes[largest] - 1
        return Tampered(
            {"n": cap, "size": sizes[largest], "name": largest},
            {"limits": replace(HARD_LIMITS, **{limit: cap})},
        )

    return tamper


_member_over, _json_over = _largest_over(False), _largest_over(True)


def _tarball_over(b: Path, h: Harness) -> Tampered:
    """The folder's tarball is held to the compressed-size cap, not the member cap."""
    size = (b / TARBALL).stat().st_size
    return Tampered(
        {"n": size - 1, "size": size}, {"limits": replace(HARD_LIMITS, compressed_bytes=size - 1)}
    )


def _no_such_path(b: Path, h: Harness) -> Tampered:
    return Tampered({"path": b / "absent"}, path=b / "absent")


def _pipe_as_input(b: Path, h: Harness) -> Tampered:
    os.mkfifo(b.parent / "input.tar.gz")
    return Tampered({"path": b.parent / "input.tar.gz"}, path=b.parent / "input.tar.gz")


# -- steps 2-4 ------------------------------------------------------------------------------
def _drop(name: str) -> Tamper:
    def tamper(b: Path, h: Harness) -> Tampered:
        (b / name).unlink()
        return Tampered()

    return tamper


def _provenance_by_second_key(b: Path, h: Harness) -> Tampered:
    second = generate_key_files(b.parent / "second", "second", "release")
    (b / PROVENANCE_SIGNATURE).write_bytes(
        sign_to_sigstore_bundle(
            load_private_key(second.private_pem),
            json.loads((b / PROVENANCE_SIGNATURE).read_bytes())["dsseEnvelope"]["payloadType"],
            _payload(b, PROVENANCE_SIGNATURE),
        )
    )
    repack(b)
    both = json.loads(h.trusted.read_bytes())
    extra = json.loads(second.trusted_keys.read_bytes())["keys"]
    both["keys"] += extra
    trusted = b.parent / "both.json"
    trusted.write_text(json.dumps(both))
    return Tampered({"second16": extra[0]["keyid"][:16]}, trusted=trusted)


def _manifest_cosigned(b: Path, h: Harness) -> Tampered:
    """A second trusted key co-signs the manifest only: the signer sets differ, and both
    manifest signers are named in keyid order."""
    second = generate_key_files(b.parent / "second", "second", "release")
    (b / MANIFEST_SIGNATURE).write_bytes(
        add_signature(
            load_private_key(second.private_pem),
            (b / MANIFEST_SIGNATURE).read_bytes(),
            MANIFEST_SIGNATURE,
        )
    )
    both = json.loads(h.trusted.read_bytes())
    first = both["keys"][0]["keyid"]
    extra = json.loads(second.trusted_keys.read_bytes())["keys"]
    both["keys"] += extra
    trusted = b.parent / "both.json"
    trusted.write_text(json.dumps(both))
    two = ", ".join(f"{k[:16]}…" for k in sorted([first, extra[0]["keyid"]]))
    return Tampered({"two": two, "second_pem": second.private_pem}, trusted=trusted)


def _keyless_required(b: Path, h: Harness) -> Tampered:
    want = KeylessIdentity("maintainer@example.invalid", "https://issuer.example.invalid")
    return Tampered(options={"keyless": want})


def _keyless_without_manifest(b: Path, h: Harness) -> Tampered:
    (b / KEYLESS_SIGNATURE).write_text("{}")
    (b / MANIFEST).unlink()
    return _keyless_required(b, h)


def _hint(name: str) -> Tamper:
    def tamper(b: Path, h: Harness) -> Tampered:
        doc = json.loads((b / name).read_bytes())
        doc["verificationMaterial"]["publicKey"]["hint"] = "0123456789abcdef" * 4
        (b / name).write_text(json.dumps(doc))
        return Tampered()

    return tamper


def _payload_type(name: str) -> Tamper:
    def tamper(b: Path, h: Harness) -> Tampered:
        _sign(b, h, name, _payload(b, name), "application/json")
        return Tampered()

    return tamper


# -- steps 5-7 ------------------------------------------------------------------------------
def _development_role(b: Path, h: Harness) -> Tampered:
    doc = json.loads(h.trusted.read_bytes())
    doc["keys"][0]["role"] = "development"
    trusted = b.parent / "dev-role.json"
    trusted.write_text(json.dumps(doc))
    return Tampered(trusted=trusted, options={"allow_dev_key": True})


def _at_expiry(b: Path, h: Harness) -> Tampered:
    expires = _manifest(b)["expires_epoch"]
    return Tampered({"expires": expires}, {"now": expires})


def _manifest_json_newline(b: Path, h: Harness) -> Tampered:
    (b / MANIFEST).write_bytes((b / MANIFEST).read_bytes() + b"\n")
    return Tampered()


def _drop_artifact(b: Path, h: Harness) -> Tampered:
    url = _wasm(b, 1)
    (b / url).unlink()
    return Tampered({"url": url})


def _swap(b: Path, h: Harness) -> Tampered:
    one, two = _wasm(b, 0), _wasm(b, 1)
    data = (b / one).read_bytes()
    (b / one).write_bytes((b / two).read_bytes())
    (b / two).write_bytes(data)
    return Tampered({"one": one, "two": two})


def _other_bytes(b: Path, h: Harness) -> Tampered:
    url = _wasm(b, 0)
    listed = (b / url).read_bytes()
    (b / url).write_bytes(listed + b"!")
    return Tampered(
        {
            "url": url,
            "actual16": _sha(listed + b"!")[:16],
            "listed16": _sha(listed)[:16],
            "size": len(listed),
            "grown": len(listed) + 1,
        }
    )


def _wrong_size(b: Path, h: Harness) -> Tampered:
    """The listed digest is right and the listed size is not: the size alone refuses it."""
    url = _wasm(b, 0)
    size = (b / url).stat().st_size
    _resign_manifest(lambda m: m["artifacts"][0].update(size=size + 1))(b, h)
    sha16 = _sha((b / url).read_bytes())[:16]
    return Tampered({"url": url, "sha16": sha16, "size": size, "listed": size + 1})


def _wrong_build_id(b: Path, h: Harness) -> Tampered:
    real = _manifest(b)["build_id"]
    other = _sha(b"other files")
    _resign_manifest(lambda m: m.update(build_id=other))(b, h)
    return Tampered({"real16": real[:16], "other16": other[:16]})


def _extra_files(b: Path, h: Harness) -> Tampered:
    (b / "js/extra.js").write_text("export const evil = 1;\n")
    (b / "zz.txt").write_text("z")
    return Tampered()


# -- step 11 -------------------------------------------------------------------------------
def _tarball_of_another_time(b: Path, h: Harness) -> Tampered:
    """The folder's tarball holds the verified files, but stamped a second later than the
    release: it is not the writer's tarball of them."""
    manifest = ModuleManifest.model_validate_json((b / MANIFEST).read_bytes())
    files = {n: (b / n).read_bytes() for n in _sizes(b) if n != TARBALL}
    native = frozenset(a.url for a in manifest.native_artifacts)
    shipped = (b / TARBALL).read_bytes()
    other = deterministic_tarball(
        bundle_name(manifest.version), files, manifest.source_date_epoch + 1, native
    )
    (b / TARBALL).write_bytes(other)
    at = next(i for i, (x, y) in enumerate(zip(other, shipped, strict=False)) if x != y)
    return Tampered({"size": len(other), "rebuilt": len(shipped), "at": at})


# -- step 8 ---------------------------------------------------------------------------------
def _set(key: str, value: object) -> Callable[[dict[str, Any]], object]:
    return lambda d: d.update({key: value})


def _pop(key: str) -> Callable[[dict[str, Any]], object]:
    return lambda d: d.pop(key)


def _subject_edit(index: int, change: Callable[[Any], object]) -> Tamper:
    def edit(statement: dict[str, Any]) -> None:
        statement["subject"][index] = change(statement["subject"][index])

    return _resign_statement(edit)


def _changed(change: Callable[[dict[str, Any]], object]) -> Callable[[Any], Any]:
    def apply(value: dict[str, Any]) -> dict[str, Any]:
        change(value)
        return value

    return apply


def _names_not_strings(*indexes: int) -> Callable[[dict[str, Any]], None]:
    def edit(statement: dict[str, Any]) -> None:
        for i in indexes:
            statement["subject"][i]["name"] = 7

    return edit


def _three_differences(statement: dict[str, Any]) -> None:
    _subject("js/host.js")(statement)["digest"]["sha256"] = "0" * 64
    statement["subject"].remove(_subject(SBOM)(statement))
    statement["subject"].append({"name": "js/ghost.js", "digest": {"sha256": "1" * 64}})


def _source(statement: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = statement["predicate"]["buildDefinition"]["externalParameters"][
        "source"
    ]
    return found


REVISION_WHERE = f"{PROV_WHERE}: predicate.buildDefinition.externalParameters.source.revision"

# name -> the refusal
REFUSALS: dict[str, Refusal] = {
    # step 1: the folder's entries, links, kinds and sizes
    "entries-over-limit": Refusal(
        _entries_over, "bundle.limit", 1, "more than {n} entries", "{last}"
    ),
    "symbolic-link": Refusal(
        _symlink, "files.extra", 1, "symbolic links are not allowed in a bundle", "js/link.js"
    ),
    "named-pipe-in-folder": Refusal(_named_pipe, "files.extra", 1, "not a regular file", "js/pipe"),
    "total-over-limit": Refusal(
        _total_over, "bundle.limit", 1, "files add up to more than {n} bytes", "{last}"
    ),
    "member-over-limit": Refusal(
        _member_over,
        "bundle.limit",
        1,
        "bundle file is {size} bytes, more than the limit of {n}",
        "{name}",
    ),
    "json-over-limit": Refusal(
        _json_over,
        "bundle.limit",
        1,
        "bundle file is {size} bytes, more than the limit of {n}",
        "{name}",
    ),
    "folder-tarball-over-compressed-limit": Refusal(
        _tarball_over,
        "bundle.limit",
        1,
        "bundle file is {size} bytes, more than the limit of {n}",
        TARBALL,
    ),
    "no-such-path": Refusal(
        _no_such_path, "bundle.unreadable", 1, "no such bundle directory or tarball", "{path}"
    ),
    "named-pipe-as-input": Refusal(
        _pipe_as_input,
        "bundle.unreadable",
        1,
        "a FIFO, not a bundle directory or tarball",
        "{path}",
    ),
    # step 2: signatures
    "no-manifest-signature": Refusal(
        _drop(MANIFEST_SIGNATURE),
        "files.missing",
        2,
        "signature bundle is missing",
        MANIFEST_SIGNATURE,
    ),
    "no-provenance-signature": Refusal(
        _drop(PROVENANCE_SIGNATURE),
        "files.missing",
        2,
        "signature bundle is missing",
        PROVENANCE_SIGNATURE,
    ),
    "signers-differ": Refusal(
        _provenance_by_second_key,
        "signature.signers-differ",
        2,
        "manifest signed by {keyid16}…, provenance by {second16}…; one release key signs both "
        '(unless the trusted-keys file says "signers": "any-trusted-key")',
        f"{PROVENANCE_SIGNATURE}: dsseEnvelope.signatures[0].keyid",
    ),
    "manifest-cosigned-only": Refusal(
        _manifest_cosigned,
        "signature.signers-differ",
        2,
        "manifest signed by {two}, provenance by {keyid16}…; one release key signs both "
        '(unless the trusted-keys file says "signers": "any-trusted-key")',
        f"{PROVENANCE_SIGNATURE}: dsseEnvelope.signatures[0].keyid",
    ),
    "keyless-signature-absent": Refusal(
        _keyless_required,
        "signature.keyless",
        2,
        "a keyless signature by 'maintainer@example.invalid' is required, the bundle has none "
        "(the release job adds it with `tinyrustlm-release sign BUNDLE --keyless`)",
        KEYLESS_SIGNATURE,
    ),
    "keyless-without-manifest": Refusal(
        _keyless_without_manifest,
        "files.missing",
        2,
        "the bundle has no manifest.json",
        MANIFEST,
    ),
    # step 3: key hints
    "manifest-hint": Refusal(
        _hint(MANIFEST_SIGNATURE),
        "signature.hint-mismatch",
        3,
        "publicKey.hint 0123456789abcdef… is not the keyid of any signature ({keyid16}…)",
        f"{MANIFEST_SIGNATURE}: verificationMaterial.publicKey.hint",
    ),
    "provenance-hint": Refusal(
        _hint(PROVENANCE_SIGNATURE),
        "signature.hint-mismatch",
        3,
        "publicKey.hint 0123456789abcdef… is not the keyid of any signature ({keyid16}…)",
        f"{PROVENANCE_SIGNATURE}: verificationMaterial.publicKey.hint",
    ),
    # step 4: payload types
    "manifest-payload-type": Refusal(
        _payload_type(MANIFEST_SIGNATURE),
        "signature.payload-type",
        4,
        "payloadType 'application/json', expected "
        "'application/vnd.tinyrustlm.module-manifest.v1+json'",
        f"{MANIFEST_SIGNATURE}: dsseEnvelope.payloadType",
    ),
    "provenance-payload-type": Refusal(
        _payload_type(PROVENANCE_SIGNATURE),
        "signature.payload-type",
        4,
        "payloadType 'application/json', expected 'application/vnd.in-toto+json'",
        f"{PROVENANCE_SIGNATURE}: dsseEnvelope.payloadType",
    ),
    # step 5: the signed manifest
    "manifest-not-json": Refusal(
        _signed_manifest_bytes(b"[1,"),
        "manifest.invalid",
        5,
        "not JSON: Expecting value",
        f"{MANIFEST_SIGNATURE}: payload",
        offset=3,
    ),
    "manifest-not-canonical": Refusal(
        _signed_manifest_bytes(b'{"b": 1, "a": 2}'),
        "manifest.invalid",
        5,
        "signed manifest is not canonical JSON (RFC 8785)",
        f"{MANIFEST_SIGNATURE}: payload",
    ),
    "manifest-field-missing": Refusal(
        _resign_manifest(_pop("version")),
        "manifest.invalid",
        5,
        "Field required",
        f"{MANIFEST_SIGNATURE}: payload: version",
    ),
    "manifest-version-outside-the-grammar": Refusal(
        # semver's spelling: the loader once held it equal to 9.9.9 (tests/release_versions.json)
        _resign_manifest(lambda m: m.update(version="9.9.9-rc1")),
        "manifest.invalid",
        5,
        "Value error, '9.9.9-rc1' is not a release version (MAJOR.MINOR.PATCH, optionally "
        "followed by aN, bN or rcN)",
        f"{MANIFEST_SIGNATURE}: payload: version",
    ),
    "manifest-nested-field-wrong": Refusal(
        _resign_manifest(lambda m: m["artifacts"][1].update(size="big")),
        "manifest.invalid",
        5,
        "Input should be a valid integer",  # strict: a string is never read as a number
        f"{MANIFEST_SIGNATURE}: payload: artifacts.1.size",
    ),
    "manifest-json-absent": Refusal(
        _drop(MANIFEST), "files.missing", 5, "the bundle has no manifest.json", MANIFEST
    ),
    "manifest-json-not-the-payload": Refusal(
        _manifest_json_newline,
        "manifest.not-signed-bytes",
        5,
        "manifest.json is not byte-identical to the signed manifest payload",
        MANIFEST,
    ),
    "key-class-not-the-role": Refusal(
        _development_role,
        "manifest.key-class",
        5,
        "manifest says key_class 'release', the role of signing key {keyid16}… is 'development'",
        f"{MANIFEST}: key_class",
    ),
    "expired-at-its-second": Refusal(
        _at_expiry,
        "manifest.expired",
        5,
        "manifest expired at epoch {expires} (now {expires})",
        f"{MANIFEST}: expires_epoch",
    ),
    # step 6: the listed files
    "listed-file-absent": Refusal(
        _drop_artifact, "files.missing", 6, "listed in the manifest but not in the bundle", "{url}"
    ),
    "artifacts-swapped": Refusal(
        _swap, "files.swapped", 6, "holds the bytes the manifest lists for {two}", "{one}"
    ),
    "other-bytes": Refusal(
        _other_bytes,
        "files.digest-mismatch",
        6,
        "sha256 {actual16}… ({grown} bytes), manifest says {listed16}… ({size} bytes)",
        "{url}",
    ),
    "listed-size-wrong": Refusal(
        _wrong_size,
        "files.digest-mismatch",
        6,
        "sha256 {sha16}… ({size} bytes), manifest says {sha16}… ({listed} bytes)",
        "{url}",
    ),
    "build-id-not-the-files": Refusal(
        _wrong_build_id,
        "manifest.build-id",
        6,
        "build id recomputes to {real16}…, manifest says {other16}…",
        f"{MANIFEST}: build_id",
    ),
    # step 7: the file set
    "files-not-in-the-manifest": Refusal(
        _extra_files,
        "files.extra",
        7,
        "2 file(s) not in the manifest: js/extra.js, zz.txt",
        "js/extra.js",
    ),
    "fixed-files-missing": Refusal(
        lambda b, h: [_drop(REPORT)(b, h), _drop(SBOM)(b, h)][0],
        "files.missing",
        7,
        "2 file(s) missing: sbom.cdx.json, verification-report.json",
        SBOM,
    ),
    "folder-without-its-tarball": Refusal(
        _drop(TARBALL), "files.missing", 7, f"1 file(s) missing: {TARBALL}", TARBALL
    ),
    # step 8: the provenance statement
    "statement-not-json": Refusal(
        _signed_statement_bytes(b"{"),
        "provenance.invalid",
        8,
        "not JSON: Expecting property name enclosed in double quotes",
        PROV_WHERE,
        offset=1,
    ),
    "statement-a-list": Refusal(
        _statement_in_a_list,
        "provenance.invalid",
        8,
        "not an in-toto Statement (https://in-toto.io/Statement/v1)",
        PROV_WHERE,
    ),
    "statement-other-type": Refusal(
        _resign_statement(_set("_type", "https://in-toto.io/Statement/v0.1")),
        "provenance.invalid",
        8,
        "not an in-toto Statement (https://in-toto.io/Statement/v1)",
        PROV_WHERE,
    ),
    "statement-other-predicate": Refusal(
        _resign_statement(_set("predicateType", "https://slsa.dev/provenance/v0.2")),
        "provenance.invalid",
        8,
        "predicateType is not https://slsa.dev/provenance/v1",
        PROV_WHERE,
    ),
    "no-subject": Refusal(
        _resign_statement(_pop("subject")),
        "provenance.invalid",
        8,
        "no subjects",
        f"{PROV_WHERE}: subject",
    ),
    "empty-subjects": Refusal(
        _resign_statement(_set("subject", [])),
        "provenance.invalid",
        8,
        "no subjects",
        f"{PROV_WHERE}: subject",
    ),
    "subjects-an-object": Refusal(
        _resign_statement(_set("subject", {"name": MANIFEST})),
        "provenance.invalid",
        8,
        "no subjects",
        f"{PROV_WHERE}: subject",
    ),
    "subject-not-an-object": Refusal(
        _subject_edit(1, lambda s: [s]),
        "provenance.invalid",
        8,
        SUBJECT_RULE,
        f"{PROV_WHERE}: subject[1]",
    ),
    "subject-name-not-a-string": Refusal(
        _subject_edit(2, _changed(_set("name", 7))),
        "provenance.invalid",
        8,
        SUBJECT_RULE,
        f"{PROV_WHERE}: subject[2]",
    ),
    "subject-without-digest": Refusal(
        _subject_edit(1, _changed(_pop("digest"))),
        "provenance.invalid",
        8,
        SUBJECT_RULE,
        f"{PROV_WHERE}: subject[1]",
    ),
    "subject-digest-a-string": Refusal(
        _subject_edit(1, _changed(_set("digest", "0" * 64))),
        "provenance.invalid",
        8,
        SUBJECT_RULE,
        f"{PROV_WHERE}: subject[1]",
    ),
    "subject-sha256-not-a-string": Refusal(
        _subject_edit(1, _changed(lambda s: s["digest"].update(sha256=1))),
        "provenance.invalid",
        8,
        SUBJECT_RULE,
        f"{PROV_WHERE}: subject[1]",
    ),
    "two-bad-subjects-the-first-is-named": Refusal(
        _resign_statement(_names_not_strings(3, 1)),
        "provenance.invalid",
        8,
        SUBJECT_RULE,
        f"{PROV_WHERE}: subject[1]",
    ),
    "subject-twice": Refusal(
        _resign_statement(lambda s: s["subject"].append(dict(s["subject"][0]))),
        "provenance.invalid",
        8,
        SUBJECT_RULE,
        f"{PROV_WHERE}: subject[10]",
    ),
    "subject-digest-differs": Refusal(
        _resign_statement(lambda s: _subject("js/host.js")(s)["digest"].update(sha256="0" * 64)),
        "provenance.subjects",
        8,
        "subjects do not match the files: digest differs: js/host.js",
        PROV_WHERE,
    ),
    "file-not-named": Refusal(
        _resign_statement(lambda s: s["subject"].remove(_subject(REPORT)(s))),
        "provenance.subjects",
        8,
        "subjects do not match the files: not named: verification-report.json",
        PROV_WHERE,
    ),
    "subject-names-an-unknown-file": Refusal(
        _resign_statement(
            lambda s: s["subject"].append({"name": "js/ghost.js", "digest": {"sha256": "1" * 64}})
        ),
        "provenance.subjects",
        8,
        "subjects do not match the files: names unknown files: js/ghost.js",
        PROV_WHERE,
    ),
    "three-subject-differences": Refusal(
        _resign_statement(_three_differences),
        "provenance.subjects",
        8,
        "subjects do not match the files: digest differs: js/host.js; not named: sbom.cdx.json; "
        "names unknown files: js/ghost.js",
        PROV_WHERE,
    ),
    "other-revision": Refusal(
        _resign_statement(lambda s: _source(s).update(revision="0" * 40)),
        "provenance.subjects",
        8,
        "provenance source revision '{zero40}' is not the manifest's",
        REVISION_WHERE,
    ),
    "no-predicate": Refusal(
        _resign_statement(_pop("predicate")),
        "provenance.subjects",
        8,
        "provenance source revision None is not the manifest's",
        REVISION_WHERE,
    ),
    "predicate-not-an-object": Refusal(
        _resign_statement(_set("predicate", "built")),
        "provenance.subjects",
        8,
        "provenance source revision None is not the manifest's",
        REVISION_WHERE,
    ),
    "source-not-an-object": Refusal(
        _resign_statement(
            lambda s: s["predicate"]["buildDefinition"]["externalParameters"].update(source="git")
        ),
        "provenance.subjects",
        8,
        "provenance source revision None is not the manifest's",
        REVISION_WHERE,
    ),
    # step 11: the folder's tarball
    "folder-tarball-not-the-writers": Refusal(
        _tarball_of_another_time,
        "tarball.not-reproducible",
        11,
        "not the deterministic tarball of the verified files ({size} bytes, rebuilt "
        "{rebuilt}; first difference at byte {at})",
        TARBALL,
        offset="{at}",
    ),
}


def _facts(h: Harness, bundle: Path) -> dict[str, object]:
    keyid: str = json.loads(h.trusted.read_bytes())["keys"][0]["keyid"]
    return {"keyid16": keyid[:16], "bundle": bundle, "zero40": "0" * 40}


@pytest.mark.parametrize("name", list(REFUSALS), ids=list(REFUSALS))
def test_refusal(pristine: tuple[Harness, Path], tmp_path: Path, name: str) -> None:
    row = REFUSALS[name]
    h = pristine[0]
    bundle = copy_pristine(pristine, tmp_path)
    tampered = row.tamper(bundle, h)
    steps: list[StepResult] = []
    with pytest.raises(VerifyError) as caught:
        h.verify(
            tampered.path or bundle, tampered.trusted, progress=steps.append, **tampered.options
        )
    facts = {**_facts(h, bundle), **tampered.facts}
    error = caught.value
    assert (error.error_id, len(steps) + 1, error.message, error.where, error.offset) == (
        row.error_id,
        row.step,
        row.message.format(**facts),
        row.where.format(**facts),
        int(row.offset.format(**facts)) if isinstance(row.offset, str) else row.offset,
    )
    assert [s.number for s in steps] == list(range(1, row.step))


def test_every_step_before_the_refusal_is_reported(pristine: tuple[Harness, Path]) -> None:
    """The control: the pristine copy passes all 14 steps, each reported once, in order, with
    its title; the verdict names the counted signer."""
    h, bundle = pristine
    steps: list[StepResult] = []
    verdict = h.verify(bundle, progress=steps.append)
    assert [(s.number, s.title) for s in steps] == list(enumerate(step_titles.STEP_TITLES, start=1))
    keyid = json.loads(h.trusted.read_bytes())["keys"][0]["keyid"]
    files = [p for p in bundle.rglob("*") if p.is_file()]
    assert (verdict.keyid, verdict.keyids, verdict.key_class, verdict.files) == (
        keyid,
        (keyid,),
        "release",
        len(files),
    )
    assert verdict.steps == tuple(steps)


# -- boundaries of the step-1 limits: exactly at the limit passes ---------------------------
@pytest.mark.parametrize(
    "tamper", [_entries_over, _total_over, _member_over, _json_over, _tarball_over]
)
def test_exactly_at_a_read_limit_passes(
    pristine: tuple[Harness, Path], tmp_path: Path, tamper: Tamper
) -> None:
    """One more than each refused limit is enough: the refusal is at the first unit over."""
    h = pristine[0]
    bundle = copy_pristine(pristine, tmp_path)
    limits = tamper(bundle, h).options["limits"]
    grown = {
        k: getattr(limits, k) + (getattr(limits, k) != getattr(HARD_LIMITS, k))
        for k in ("entries", "member_bytes", "json_bytes", "total_bytes", "compressed_bytes")
    }
    verdict = h.verify(bundle, limits=replace(limits, **grown))
    assert verdict.version == "9.9.9"


def test_folder_tarball_is_not_held_to_the_member_limit(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    """The folder's own .tar.gz gets the compressed cap; other files the member cap."""
    h = pristine[0]
    bundle = copy_pristine(pristine, tmp_path)
    sizes = _sizes(bundle)
    others = max(s for n, s in sizes.items() if not n.endswith((".json", ".tar.gz")))
    assert sizes[TARBALL] > others
    h.verify(bundle, limits=replace(HARD_LIMITS, member_bytes=others))


def test_a_nested_tar_gz_is_a_member(pristine: tuple[Harness, Path], tmp_path: Path) -> None:
    """Only the top-level .tar.gz is the folder's tarball: one in a subfolder gets the member
    cap (and is then an extra file)."""
    h = pristine[0]
    bundle = copy_pristine(pristine, tmp_path)
    sizes = _sizes(bundle)
    others = max(s for n, s in sizes.items() if not n.endswith((".json", ".tar.gz")))
    (bundle / "js/inner.tar.gz").write_bytes(b"x" * (others + 1))
    with pytest.raises(VerifyError) as caught:
        h.verify(bundle, limits=replace(HARD_LIMITS, member_bytes=others))
    assert (caught.value.error_id, caught.value.where) == ("bundle.limit", "js/inner.tar.gz")


def test_a_keyless_signature_is_an_expected_file(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    """manifest.keyless.sigstore.json may be present without a keyless requirement (it is not
    judged then), and is not an extra file."""
    h = pristine[0]
    bundle = copy_pristine(pristine, tmp_path)
    (bundle / KEYLESS_SIGNATURE).write_text("{}")
    repack(bundle)
    verdict = h.verify(bundle)
    assert verdict.files == len(_sizes(bundle))


# -- step 12 on its own: the shipped report against the re-derived one ----------------------
def _opened(bundle: Path, report: VerificationReport) -> tuple[Opened, ModuleManifest]:
    """The pristine bundle's files, with `report` shipped, and its manifest."""
    files = {p.relative_to(bundle).as_posix(): p.read_bytes() for p in bundle.rglob("*")
             if p.is_file()}  # fmt: skip
    files[REPORT] = report.model_dump_json(by_alias=True).encode()
    return Opened(bundle, files, True), ModuleManifest.model_validate_json(files[MANIFEST])


def _artifacts(bundle: Path) -> list[tuple[Path, str]]:
    manifest = ModuleManifest.model_validate_json((bundle / MANIFEST).read_bytes())
    return [(bundle / url, lane) for url, lane in manifest.lanes()]


def _failing(lanes: set[str]) -> Callable[[Any], VerificationReport]:
    """fake_report with every finding of each lane in `lanes` failing."""

    def derive(artifacts: Any) -> VerificationReport:
        doc = fake_report(artifacts).model_dump(by_alias=True)
        for row in doc["artifacts"]:
            if row["lane"] in lanes:
                row["ok"] = False
                for finding in row["findings"]:
                    finding["ok"] = False
        doc["ok"] = not lanes
        return VerificationReport.model_validate(doc)

    return derive


def _twice(artifacts: Any) -> VerificationReport:
    """fake_report with its first lane reported twice."""
    report = fake_report(artifacts)
    return report.model_copy(update={"artifacts": [*report.artifacts, report.artifacts[0]]})


def _holding_relaxed(lane: str) -> Any:
    """fake_report with `lane`'s module holding one relaxed dot (its manifest lists none)."""

    def derive(artifacts: Any) -> VerificationReport:
        report = fake_report(artifacts)
        summary = WasmSummary(
            instruction_count=1, function_count=1, required_proposals=["relaxed-simd"],
            proposal_counts={"relaxed-simd": 1}, declared_target_features=[],
            target_features_section=False, imports=[], exports=[], memories=[],
            custom_sections=[], memory_grow_count=0, cross_checked=False,
            relaxed_instructions={"i32x4.relaxed_dot_i8x16_i7x16_add_s": 1},
        )  # fmt: skip
        rows = [r.model_copy(update={"wasm": summary}) if r.lane == lane else r
                for r in report.artifacts]  # fmt: skip
        return report.model_copy(update={"artifacts": rows})

    return derive


LANES = sorted(["scalar-wasm32", "simd128-wasm32", "simd128-threads-wasm32",
                "x86_64-unknown-linux-gnu"])  # fmt: skip
# name -> (what the bundle ships, what re-inspection derives, (id, message, where))
REPORT_REFUSALS: dict[str, tuple[Any, Any, tuple[str, str, str]]] = {
    # agreeing with re-inspection is not enough: the first failing lane in lane order is
    # named with its failing finding ids
    "failing-findings-shipped": (
        _failing({"simd128-wasm32", "x86_64-unknown-linux-gnu"}),
        _failing({"simd128-wasm32", "x86_64-unknown-linux-gnu"}),
        ("report.mismatch", "lane simd128-wasm32: failing findings fake.magic, fake.size",
         f"{REPORT}: simd128-wasm32"),
    ),
    "first-differing-lane": (
        _failing({LANES[2], LANES[3]}),
        fake_report,
        ("report.mismatch", f"lane {LANES[2]}: the bundle's findings differ from re-inspection "
         "with the verifier's policy", f"{REPORT}: {LANES[2]}"),
    ),
    # the signed manifest names the relaxed instructions each module holds: a module whose
    # bytes hold one the manifest does not list is refused
    "relaxed-instructions-the-manifest-does-not-list": (
        fake_report,
        _holding_relaxed("simd128-wasm32"),
        ("report.mismatch", "lane simd128-wasm32: the manifest lists relaxed instructions {}, "
         "the module holds {'i32x4.relaxed_dot_i8x16_i7x16_add_s': 1}",
         "manifest.json: artifacts[simd128-wasm32].relaxed_instructions"),
    ),
    # re-inspection itself reporting a lane twice names the verifier's report, not the
    # bundle's file, so nobody goes looking for the fault in the bundle
    "lane-twice-in-the-verifiers-own-report": (
        fake_report,
        _twice,
        ("report.invalid", "lane scalar-wasm32 is reported twice",
         "the verifier's report: artifacts.4.lane"),
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(REPORT_REFUSALS), ids=list(REPORT_REFUSALS))
def test_report_refusals(pristine: tuple[Harness, Path], case: str) -> None:
    shipped, derive, expected = REPORT_REFUSALS[case]
    bundle = pristine[1]
    assert sorted(lane for _, lane in _artifacts(bundle)) == LANES
    with pytest.raises(VerifyError) as caught:
        check_report(*_opened(bundle, shipped(_artifacts(bundle))), derive)
    assert (caught.value.error_id, caught.value.message, caught.value.where) == expected


def test_the_report_step_says_what_it_derived(pristine: tuple[Harness, Path]) -> None:
    bundle = pristine[1]
    files, manifest = _opened(bundle, fake_report(_artifacts(bundle)))
    assert check_report(files, manifest, fake_report) == "4 artifacts, 8 findings, all pass"


def test_without_a_deriver_the_verifiers_own_re_inspects(
    pristine: tuple[Harness, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`BundleVerifier(derive=None)`: step 12 asks `default_deriver` (here a spy) for the
    verifier's own inspectors."""
    h, bundle = pristine
    asked: list[int] = []

    def spy() -> Any:
        asked.append(1)
        return fake_report

    monkeypatch.setattr(verifier, "default_deriver", spy)
    verdict = h.verify(bundle, derive=None)
    assert (asked, verdict.steps[11].detail) == ([1], "4 artifacts, 8 findings, all pass")


# -- the verifier's own arguments -----------------------------------------------------------
def test_a_version_floor_that_is_not_a_version_is_a_value_error(
    pristine: tuple[Harness, Path],
) -> None:
    h, bundle = pristine
    with pytest.raises(ValueError) as caught:
        h.verify(bundle, version_floor="latest")
    assert str(caught.value) == "version floor 'latest' is not a release version"


@pytest.mark.parametrize("one_signer", [True, False])
def test_bare_keys_follow_the_one_signer_argument(
    pristine: tuple[Harness, Path], tmp_path: Path, one_signer: bool
) -> None:
    """Bare keys (not a trust root) take the v1 rule: one key signs both documents unless
    `one_signer=False`; the default is one signer."""
    h = pristine[0]
    bundle = copy_pristine(pristine, tmp_path)
    trusted = _provenance_by_second_key(bundle, h).trusted
    assert trusted is not None
    keys = load_trusted_keys(trusted)
    options: dict[str, Any] = {} if one_signer else {"one_signer": False}

    def run() -> verifier.Verdict:
        trust = trust_root_from_keys(keys, **options)
        requires = verifier.Requirements(now=int(time.time()))
        return verifier.BundleVerifier(trust, fake_report).verify(bundle, requires)

    if one_signer:
        with pytest.raises(VerifyError) as caught:
            run()
        assert caught.value.error_id == "signature.signers-differ"
    else:
        assert run().version == "9.9.9"


# -- step 13 reads the bundle's conformance.json against the manifest ----------------------
def _with_conformance(b: Path, h: Harness, version: str = "9.9.9") -> None:
    """conformance.json with a passing chromium row (and its loader receipt) per lane and
    model tier, added as the release writer adds it: attested by the re-signed provenance,
    checksummed, packed."""
    manifest = ModuleManifest.model_validate_json((b / MANIFEST).read_bytes())
    manifest_sha = _sha((b / MANIFEST).read_bytes())
    lanes = [(a.id, a.sha256) for a in manifest.artifacts]
    lanes += [(a.id, a.sha256) for a in manifest.native_artifacts]
    rows: list[Row] = [("chromium", True, "pass", tier) for tier in MODEL_TIERS]
    report = report_v3(version, manifest.source_revision, lanes, rows, manifest_sha)
    data = report.model_dump_json(by_alias=True).encode()
    (b / CONFORMANCE).write_bytes(data)
    statement = json.loads(_payload(b, PROVENANCE_SIGNATURE))
    statement["subject"].append({"name": CONFORMANCE, "digest": {"sha256": _sha(data)}})
    rederive_page(b, statement)
    _sign(b, h, PROVENANCE_SIGNATURE, canonical_json(statement))
    repack(b)


def test_a_shipped_conformance_report_is_read(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    """With conformance.json in the bundle, step 13 judges it (the manifest and its digest
    are the ones the receipts name) and an engine it passed can be required."""
    h = pristine[0]
    bundle = copy_pristine(pristine, tmp_path)
    _with_conformance(bundle, h)
    verdict = h.verify(bundle, require_engines=("chromium",))
    assert verdict.steps[6].detail == f"{len(_sizes(bundle))} files"
    assert verdict.steps[12].detail == (
        "8 rows, 8 pass, tiers f32/int8, required engines chromium pass; no memory plan"
    )


def test_a_conformance_report_of_another_release(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    h = pristine[0]
    bundle = copy_pristine(pristine, tmp_path)
    _with_conformance(bundle, h, version="9.9.8")
    steps: list[StepResult] = []
    with pytest.raises(VerifyError) as caught:
        h.verify(bundle, progress=steps.append)
    revision = _manifest(bundle)["source_revision"][:12]
    assert (caught.value.error_id, len(steps) + 1, caught.value.message, caught.value.where) == (
        "conformance.mismatch",
        13,
        f"report is of 9.9.8 at {revision}, the manifest of 9.9.9 at {revision}",
        f"{CONFORMANCE}: release_version",
    )


# -- what a passing run reports at steps 1 and 2 ---------------------------------------------
def test_a_tarball_input_is_named_as_one(pristine: tuple[Harness, Path]) -> None:
    h, bundle = pristine
    verdict = h.verify(bundle / TARBALL)
    members = len(_sizes(bundle)) - 1  # every file but the tarball itself
    assert verdict.steps[0].detail == f"{members} files (tarball)"


def test_co_signers_are_each_named_at_step_2(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    h = pristine[0]
    bundle = copy_pristine(pristine, tmp_path)
    cosigned = _manifest_cosigned(bundle, h)
    assert isinstance(cosigned.facts["second_pem"], Path) and cosigned.trusted is not None
    second = load_private_key(cosigned.facts["second_pem"])
    (bundle / PROVENANCE_SIGNATURE).write_bytes(
        add_signature(second, (bundle / PROVENANCE_SIGNATURE).read_bytes(), PROVENANCE_SIGNATURE)
    )
    repack(bundle)
    verdict = h.verify(bundle, cosigned.trusted)
    keys = ", ".join(f"{k[:16]}… (release)" for k in verdict.keyids)
    assert sorted(verdict.keyids) == list(verdict.keyids) and len(verdict.keyids) == 2
    assert verdict.steps[1].detail == f"manifest 2 of 1: {keys}; provenance 2 of 1: {keys}"


def test_an_unreadable_bundle_file_is_named(
    pristine: tuple[Harness, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that cannot be opened is `bundle.unreadable` with the reader's words and place.
    Root reads any file here, so the open fails by injection (the real reader's error)."""
    h = pristine[0]
    bundle = copy_pristine(pristine, tmp_path)
    real = read_regular_file

    def read(path: Path, what: str, limit: int | None = None) -> bytes:
        if path.name == "host.js":
            raise InputError(f"cannot read {what} file: Permission denied", where=str(path))
        return real(path, what, limit)

    monkeypatch.setattr(opened, "read_regular_file", read)
    with pytest.raises(VerifyError) as caught:
        h.verify(bundle)
    assert (caught.value.error_id, caught.value.message, caught.value.where) == (
        "bundle.unreadable",
        "cannot read bundle file: Permission denied",
        str(bundle / "js/host.js"),
    )
