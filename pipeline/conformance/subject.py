"""What the matrix runs: the lanes of a release, from a bundle folder (`release --conformance`
stages one before signing).

A lane's needs come from the signed manifest's own fields (`required_features`,
`requires_cross_origin_isolation`, a native `target`), never from its id. The JS engines run
the lanes through js/loader.js, which fetches the signed manifest itself: `signed_files` are
manifest.json and its signature, served at the bundle root beside js/ and artifacts/.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from pydantic import ValidationError

from pipeline.errors import TabledError
from verify.bundle.layout import MANIFEST, MANIFEST_SIGNATURE
from verify.bundle.opened import read_bundle_file
from verify.errors import VerifyError
from verify.formats.manifest import ModuleManifest


class SubjectError(TabledError):
    """The bundle under test cannot be read or is not signed."""

    table: ClassVar[Mapping[str, str]] = {
        "conformance.artifact-unreadable": (
            "verify the bundle first: tinyrustlm-verify bundle DIR --trusted-keys FILE"
        ),
        "conformance.artifact-digest": (
            "verify the bundle first: tinyrustlm-verify bundle DIR --trusted-keys FILE"
        ),
        "conformance.not-a-bundle": "give the bundle folder dist/tinyrustlm-<version>/",
        "conformance.unsigned": (
            "sign the bundle (tinyrustlm-release release or sign) before the matrix runs"
        ),
    }


@dataclass(frozen=True)
class WasmLane:
    lane: str
    url: str  # bundle-relative
    path: Path
    sha256: str
    simd: bool
    threads: bool
    relaxed: bool = False  # requires relaxed SIMD (wasmtime runs it deterministic and native)


@dataclass(frozen=True)
class NativeLane:
    lane: str
    target: str
    path: Path
    sha256: str
    url: str = ""  # bundle-relative


@dataclass(frozen=True)
class Subject:
    version: str
    source_revision: str
    wasm: tuple[WasmLane, ...]
    native: tuple[NativeLane, ...]
    js_files: tuple[tuple[str, Path], ...]  # (bundle url, file)
    signed_files: tuple[tuple[str, Path], ...] = ()  # (bundle url, file): what the loader verifies
    source_date_epoch: int = 0  # the manifest's: the time a signed receipt says it was made

    def bundle_urls(self) -> list[str]:
        """Every bundle path the loader may fetch (a receipt names them, not the builder's)."""
        urls = [u for u, _ in (*self.signed_files, *self.js_files)]
        return urls + [w.url for w in self.wasm] + [n.url for n in self.native]


def _checked(root: Path, url: str, sha256: str) -> Path:
    path = root / url
    try:  # bounded, regular files only: a FIFO or /dev/zero is refused, never hashed
        actual = hashlib.sha256(read_bundle_file(path, url)).hexdigest()
    except VerifyError as exc:
        raise SubjectError(
            f"cannot read {url}: {exc.message} [{exc.error_id}]",
            where=str(path),
            error_id="conformance.artifact-unreadable",
        ) from exc
    if actual != sha256:
        raise SubjectError(
            f"{url} has SHA-256 {actual}, the manifest says {sha256}",
            where=str(path),
            hint="verify the bundle first",
            error_id="conformance.artifact-digest",
        )
    return path


def from_bundle(bundle: Path) -> Subject:
    where = str(bundle / MANIFEST)
    try:
        data = read_bundle_file(bundle / MANIFEST, MANIFEST)
        manifest = ModuleManifest.model_validate_json(data, strict=True)
    except VerifyError as exc:  # missing, not a regular file, too large
        raise SubjectError(
            f"not a bundle: {exc.message} [{exc.error_id}]",
            where=where,
            error_id="conformance.not-a-bundle",
        ) from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise SubjectError(
            f"not a tinyrustlm.module-manifest.v1: {field}: {first['msg']}",
            where=where,
            error_id="conformance.not-a-bundle",
        ) from exc
    return Subject(
        version=manifest.version,
        source_revision=manifest.source_revision,
        wasm=tuple(
            WasmLane(
                a.id,
                a.url,
                _checked(bundle, a.url, a.sha256),
                a.sha256,
                simd="simd128" in a.required_features,
                threads=a.requires_cross_origin_isolation,
                relaxed="relaxed-simd" in a.required_features,
            )
            for a in manifest.artifacts
        ),
        native=tuple(
            NativeLane(a.id, a.target, _checked(bundle, a.url, a.sha256), a.sha256, a.url)
            for a in manifest.native_artifacts
        ),
        js_files=tuple((f.url, _checked(bundle, f.url, f.sha256)) for f in manifest.js_files),
        signed_files=((MANIFEST, bundle / MANIFEST), (MANIFEST_SIGNATURE, _signature(bundle))),
        source_date_epoch=manifest.source_date_epoch,
    )


def _signature(bundle: Path) -> Path:
    path = bundle / MANIFEST_SIGNATURE
    if not path.is_file():
        raise SubjectError(
            "the bundle has no manifest signature: the loader verifies one before any lane runs",
            where=str(path),
            error_id="conformance.unsigned",
        )
    return path
