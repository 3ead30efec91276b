"""The bundle's file layout: one table shared by the writer (pipeline) and the verifier.

dist/tinyrustlm-<version>/
  artifacts/runtime.<lane>.<sha256[:16]>.wasm   content-addressed wasm modules
  artifacts/<native binaries>                   content-addressed native binaries
  js/*.js                                       JS host files (paired with the .wasm), with
                                                package.json and loader.d.ts: an npm package
  npm/tinyrustlm-loader-<version>.tgz           `npm pack` of js/ (what integrators install)
  manifest.json                                 the signed manifest payload, byte for byte
  manifest.sigstore.json                        DSSE over manifest.json (sigstore bundle v0.3)
  provenance.sigstore.json                      DSSE over the in-toto/SLSA statement
  sbom.cdx.json                                 CycloneDX 1.6
  verification-report.json                     what `verify` found for every artifact
  conformance.json                              the conformance matrix (absent: --no-conformance)
  memory-plan.json                              every wasm lane's memory plan, from its bytes
  report.html                                   the human view, from the documents above only
  previous/{manifest,verification-report}.json, previous/sbom.cdx.json
                                                optional: the previous release's documents, for
                                                report.html's diff (release --previous)
  SHA256SUMS                                    `sha256sum -c` list of every file above
  tinyrustlm-<version>.tar.gz                   all of the above under tinyrustlm-<version>/
"""

from __future__ import annotations

import hashlib
import re

MANIFEST = "manifest.json"
MANIFEST_SIGNATURE = "manifest.sigstore.json"
PROVENANCE_SIGNATURE = "provenance.sigstore.json"
SBOM = "sbom.cdx.json"
REPORT = "verification-report.json"
CHECKSUMS = "SHA256SUMS"
CONFORMANCE = "conformance.json"
MEMORY_PLAN = "memory-plan.json"
REPORT_PAGE = "report.html"
# The previous release's documents a bundle may carry for its page's diff (release --previous).
PREVIOUS_FILES = (
    "previous/manifest.json",
    "previous/verification-report.json",
    "previous/sbom.cdx.json",
)
# The provenance signature's payload (the in-toto statement): a rebuild compares it as a file.
PROVENANCE_STATEMENT = "provenance statement"

# Files every bundle has besides the ones the manifest lists.
FIXED_FILES = (
    MANIFEST,
    MANIFEST_SIGNATURE,
    PROVENANCE_SIGNATURE,
    SBOM,
    REPORT,
    REPORT_PAGE,
    CHECKSUMS,
)
# Bundle files that the provenance statement names as subjects, besides the manifest's files.
ATTESTED_FIXED_FILES = (MANIFEST, SBOM, REPORT, REPORT_PAGE)
# Files a bundle may have; when present they are attested and checksummed like the fixed ones.
OPTIONAL_ATTESTED_FILES = (CONFORMANCE, MEMORY_PLAN, *PREVIOUS_FILES)


def bundle_name(version: str) -> str:
    return f"tinyrustlm-{version}"


def tarball_name(version: str) -> str:
    return f"{bundle_name(version)}.tar.gz"


def checksums_text(files: dict[str, bytes]) -> bytes:
    """SHA256SUMS: `<hex>  <path>` lines sorted by path (GNU sha256sum text format)."""
    lines = [f"{hashlib.sha256(files[p]).hexdigest()}  {p}\n" for p in sorted(files)]
    return "".join(lines).encode("utf-8")


_CHECKSUM_LINE = re.compile(r"^([0-9a-f]{64})  ([^\n]+)$")


def parse_checksums(data: bytes) -> dict[str, str] | None:
    """path -> sha256, or None when any line is not `<64 hex>  <path>`."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text.endswith("\n"):
        return None
    rows: dict[str, str] = {}
    for line in text[:-1].split("\n"):
        match = _CHECKSUM_LINE.match(line)
        if match is None or match.group(2) in rows:
            return None
        rows[match.group(2)] = match.group(1)
    return rows
