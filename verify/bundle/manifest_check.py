"""Steps 5-7: the signed manifest (step 5 gives the `ModuleManifest` later steps hold the
bundle to), the digests it lists against the files, and no missing or extra file."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import ValidationError

from verify.bundle import errors as e
from verify.bundle.file_digests import sha256_hex
from verify.bundle.keyless import KEYLESS_SIGNATURE
from verify.bundle.layout import (
    FIXED_FILES,
    MANIFEST,
    MANIFEST_SIGNATURE,
    OPTIONAL_ATTESTED_FILES,
    tarball_name,
)
from verify.bundle.opened import Opened
from verify.bundle.signature_check import Signed
from verify.bundle.versions import version_key
from verify.canonical import MalformedJson, canonical_json, parse_json
from verify.formats.manifest import ModuleManifest, build_id


# -- step 5 -------------------------------------------------------------------------------
def check_manifest(
    signed: Signed, files: Mapping[str, bytes], now: int, version_floor: str | None
) -> ModuleManifest:
    payload = signed.payload(MANIFEST_SIGNATURE)
    where = f"{MANIFEST_SIGNATURE}: payload"
    try:
        doc = parse_json(payload, where)
    except MalformedJson as exc:
        raise e.ManifestInvalid(exc.message, where=where, offset=exc.offset) from exc
    if canonical_json(doc) != payload:
        raise e.ManifestInvalid("signed manifest is not canonical JSON (RFC 8785)", where=where)
    try:
        manifest = ModuleManifest.model_validate_json(payload, strict=True)  # a bool is no int
    except ValidationError as exc:
        first = exc.errors()[0]
        field_name = ".".join(str(p) for p in first["loc"])
        raise e.ManifestInvalid(first["msg"], where=f"{where}: {field_name}") from exc
    if MANIFEST not in files:
        raise e.MissingFile("the bundle has no manifest.json", where=MANIFEST)
    if files[MANIFEST] != payload:
        raise e.ManifestMismatch(
            "manifest.json is not byte-identical to the signed manifest payload", where=MANIFEST
        )
    for signer in signed.manifest_signers:
        if manifest.key_class != signer.role:
            raise e.KeyClassMismatch(
                f"manifest says key_class {manifest.key_class!r}, the role of signing key "
                f"{signer.keyid[:16]}… is {signer.role!r}",
                where=f"{MANIFEST}: key_class",
            )
    if now >= manifest.expires_epoch:
        raise e.ManifestExpired(
            f"manifest expired at epoch {manifest.expires_epoch} (now {now})",
            where=f"{MANIFEST}: expires_epoch",
        )
    if version_floor is not None:
        check_version_floor(manifest.version, version_floor)
    return manifest


def manifest_detail(manifest: ModuleManifest) -> str:
    return f"version {manifest.version}, revision {manifest.source_revision[:12]}"


def check_version_floor(version: str, floor: str) -> None:
    have, least = version_key(version), version_key(floor)
    if least is None:
        raise ValueError(f"--not-before-version {floor!r} is not a release version")
    where = f"{MANIFEST}: version"
    if have is None:
        raise e.VersionBelowFloor(
            f"version {version!r} is not a release version: cannot compare it to {floor}",
            where=where,
        )
    if have < least:
        raise e.VersionBelowFloor(
            f"version {version} is older than the accepted floor {floor} (a rollback?)",
            where=where,
        )


# -- step 6 -------------------------------------------------------------------------------
def check_listed_digests(files: Mapping[str, bytes], manifest: ModuleManifest) -> str:
    listed = manifest.listed_files()
    by_digest = {sha: url for url, sha in listed}
    sizes = {url: size for url, _, size in manifest.listed_sizes()}
    for url, sha in listed:
        data = files.get(url)
        if data is None:
            raise e.MissingFile("listed in the manifest but not in the bundle", where=url)
        actual = sha256_hex(data)
        if actual == sha and len(data) == sizes[url]:
            continue
        if actual in by_digest and by_digest[actual] != url:
            raise e.ArtifactSwapped(
                f"holds the bytes the manifest lists for {by_digest[actual]}", where=url
            )
        raise e.DigestMismatch(
            f"sha256 {actual[:16]}… ({len(data)} bytes), manifest says {sha[:16]}… "
            f"({sizes[url]} bytes)",
            where=url,
        )
    recomputed = build_id(manifest, files)
    if recomputed != manifest.build_id:
        raise e.BuildIdMismatch(
            f"build id recomputes to {recomputed[:16]}…, manifest says {manifest.build_id[:16]}…",
            where=f"{MANIFEST}: build_id",
        )
    return f"{len(listed)} files, build id {manifest.build_id[:16]}…"


# -- step 7 -------------------------------------------------------------------------------
def _expected_files(opened: Opened, manifest: ModuleManifest) -> set[str]:
    expected = {url for url, _ in manifest.listed_files()} | set(FIXED_FILES)
    expected |= {name for name in OPTIONAL_ATTESTED_FILES if name in opened.files}
    expected |= {KEYLESS_SIGNATURE} & opened.files.keys()
    if opened.is_directory:
        expected.add(tarball_name(manifest.version))
    return expected


def check_file_set(opened: Opened, manifest: ModuleManifest) -> str:
    expected = _expected_files(opened, manifest)
    missing = sorted(expected - opened.files.keys())
    extra = sorted(opened.files.keys() - expected)
    if missing:
        raise e.MissingFile(
            f"{len(missing)} file(s) missing: {', '.join(missing)}", where=missing[0]
        )
    if extra:
        raise e.ExtraFile(
            f"{len(extra)} file(s) not in the manifest: {', '.join(extra)}", where=extra[0]
        )
    return f"{len(expected)} files"
