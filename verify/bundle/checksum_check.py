"""Step 11: SHA256SUMS lists exactly the bundle's files, and the tarball is byte for byte the
one the release writer makes of them (`tarball.deterministic_tarball`)."""

from __future__ import annotations

from verify.bundle import errors as e
from verify.bundle.file_digests import differences, sha256_hex
from verify.bundle.layout import CHECKSUMS, bundle_name, parse_checksums, tarball_name
from verify.bundle.opened import Opened
from verify.bundle.tarball import deterministic_tarball, explain_difference
from verify.formats.manifest import ModuleManifest


def check_checksums(opened: Opened, manifest: ModuleManifest) -> str:
    files = opened.files
    tarball = tarball_name(manifest.version)
    listed = parse_checksums(files[CHECKSUMS])
    if listed is None:
        raise e.ChecksumsMismatch("not `<sha256>  <path>` lines", where=CHECKSUMS)
    actual = {n: sha256_hex(d) for n, d in files.items() if n not in (CHECKSUMS, tarball)}
    problems = differences(listed, actual)
    if problems:
        raise e.ChecksumsMismatch(problems, where=CHECKSUMS)
    where = tarball if opened.is_directory else opened.source  # the file the user gave
    if not opened.is_directory and opened.top_folder != bundle_name(manifest.version):
        raise e.TarballMismatch(
            f"top folder {opened.top_folder!r} is not {bundle_name(manifest.version)!r}",
            where=where,
        )
    # The tarball is a pure function of the files: rebuild it and compare every byte (gzip
    # header, CRC, ISIZE, tar headers, padding, no trailing member), never unpack it here.
    rebuilt = deterministic_tarball(
        bundle_name(manifest.version),
        {n: d for n, d in files.items() if n != tarball},
        manifest.source_date_epoch,
        frozenset(a.url for a in manifest.native_artifacts),
    )
    data = files[tarball] if opened.is_directory else opened.tarball
    if data != rebuilt:
        raise explain_difference(data, rebuilt, where)
    return f"{len(listed)} checksums, tarball rebuilt byte for byte ({len(rebuilt)} bytes)"
