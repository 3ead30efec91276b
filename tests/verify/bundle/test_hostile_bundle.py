"""Hostile bundles (issue 15): bombs, broken gzip framing, a tarball that is not the one the
writer makes, deep JSON, non-regular inputs, split signers and version rollback.

Every case runs the real CLI entry point with `--json` (in-process, fake report deriver) and
requires its own error id, its exit code, JSON on stdout and no traceback; the bombs also run
`verify_bundle` under tracemalloc to show the memory a refusal costs.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import struct
import subprocess
import sys
import tarfile
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline.documents.keys import generate_key_files, load_private_key
from pipeline.documents.sign import sign_to_sigstore_bundle
from tests.harness.release import (
    VERSION,
    Harness,
    copy_pristine,
    fake_report,
    repack,
    verify_json,
)
from verify.bundle import verifier
from verify.bundle.errors import BundleRejected
from verify.bundle.tarball import GZIP_HEADER, HARD_LIMITS
from verify.bundle.trusted_keys import load_trusted_keys, trust_root_from_keys
from verify.cli import main as verify_main
from verify.formats.in_toto import IN_TOTO_PAYLOAD_TYPE

REPO = Path(__file__).resolve().parents[3]
TOP = f"tinyrustlm-{VERSION}"
TARBALL = f"{TOP}.tar.gz"
MiB = 1024 * 1024


@pytest.fixture(autouse=True)
def _fake_inspection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verifier, "default_deriver", lambda: fake_report)


# -- gzip/tar builders ----------------------------------------------------------------------
def _gzip(raw: bytes, *, level: int = 9,
          header: bytes = GZIP_HEADER, crc: int | None = None, isize: int | None = None
          ) -> bytes:  # fmt: skip
    """A gzip member as the writer frames it, optionally with a wrong CRC or ISIZE."""
    z = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = z.compress(raw) + z.flush()
    real_crc, real_size = zlib.crc32(raw), len(raw)
    trailer = struct.pack(
        "<II",
        real_crc if crc is None else crc,
        (real_size if isize is None else isize) & 0xFFFFFFFF,
    )
    return header + body + trailer


def _zero_bomb(prefix: bytes, zeros: int) -> bytes:
    """`prefix` then `zeros` zero bytes, deflated in chunks (never held inflated)."""
    z = zlib.compressobj(1, zlib.DEFLATED, -zlib.MAX_WBITS)
    parts, crc, chunk = [z.compress(prefix)], zlib.crc32(prefix), bytes(4 * MiB)
    left = zeros
    while left:
        piece = chunk[: min(left, len(chunk))]
        parts.append(z.compress(piece))
        crc = zlib.crc32(piece, crc)
        left -= len(piece)
    parts.append(z.flush())
    return (
        GZIP_HEADER + b"".join(parts) + struct.pack("<II", crc, (len(prefix) + zeros) & 0xFFFFFFFF)
    )


def _tar_header(name: str, size: int, kind: bytes = tarfile.REGTYPE) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.type, info.mode = size, kind, 0o644
    return info.tobuf(tarfile.USTAR_FORMAT)


def _raw(pristine: tuple[Harness, Path]) -> bytes:
    return gzip.decompress((pristine[1] / TARBALL).read_bytes())


BOMB = 256 * MiB  # inflated size of each bomb: 4x the total limit, 8x the member limit


def _one_huge_member(raw: bytes) -> bytes:
    return _zero_bomb(_tar_header(f"{TOP}/SHA256SUMS", BOMB), BOMB)


def _zeros_after_end(raw: bytes) -> bytes:
    return _zero_bomb(raw, BOMB)


def _many_entries(raw: bytes) -> bytes:
    headers = b"".join(_tar_header(f"{TOP}/f{i}", 0) for i in range(HARD_LIMITS.entries + 1))
    return _gzip(headers + bytes(1024))


def _over_total(raw: bytes) -> bytes:
    size = HARD_LIMITS.member_bytes - 1
    body = b"".join(_tar_header(f"{TOP}/f{i}", size) + bytes(size) + bytes(-size % 512)
                    for i in range(3))  # fmt: skip
    return _zero_bomb(body, 0)


BOMBS: dict[str, Callable[[bytes], bytes]] = {
    "one-huge-member": _one_huge_member,
    "zeros-after-end-of-archive": _zeros_after_end,
    "too-many-entries": _many_entries,
    "members-over-total": _over_total,
}


@pytest.mark.parametrize("mode", ["tarball", "folder"])
@pytest.mark.parametrize("bomb", list(BOMBS), ids=list(BOMBS))
def test_bomb_is_refused_at_the_limit(
    pristine: tuple[Harness, Path], tmp_path: Path, bomb: str, mode: str
) -> None:
    data = BOMBS[bomb](_raw(pristine))
    if mode == "tarball":
        target = tmp_path / TARBALL
        target.write_bytes(data)
    else:
        target = copy_pristine(pristine, tmp_path)
        (target / TARBALL).write_bytes(data)
    del data
    tracemalloc.start()
    try:
        with pytest.raises(BundleRejected) as caught:
            trust = trust_root_from_keys(load_trusted_keys(pristine[0].trusted))
            verifier.BundleVerifier(trust, fake_report).verify(
                target, verifier.Requirements(now=pristine[0].commit_time + 3600)
            )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert caught.value.error_id == "bundle.limit"
    # never more than the limits admit: the members held, one being assembled, a chunk
    bound = HARD_LIMITS.total_bytes + HARD_LIMITS.member_bytes + 16 * MiB
    assert peak < bound, f"peak {peak / MiB:.0f} MiB"
    code, result, _ = verify_json(target, pristine[0].trusted)
    assert (code, result["error"]["id"]) == (1, "bundle.limit")


# -- the tarball's own bytes --------------------------------------------------------------
def _crc(raw: bytes) -> bytes:
    return _gzip(raw, crc=zlib.crc32(raw) ^ 1)


def _isize(raw: bytes) -> bytes:
    return _gzip(raw, isize=len(raw) + 512)


def _header_mtime(raw: bytes) -> bytes:
    return _gzip(raw, header=GZIP_HEADER[:4] + b"\x01\x00\x00\x00" + GZIP_HEADER[8:])


def _header_os(raw: bytes) -> bytes:
    return _gzip(raw, header=GZIP_HEADER[:9] + b"\x03")


def _header_name(raw: bytes) -> bytes:
    return _gzip(raw, header=b"\x1f\x8b\x08\x08" + GZIP_HEADER[4:] + b"x.tar\x00")


def _second_member(raw: bytes) -> bytes:
    extra = io.BytesIO()
    with tarfile.open(fileobj=extra, mode="w") as tar:
        info = tarfile.TarInfo(f"{TOP}/js/evil.js")
        info.size = 4
        tar.addfile(info, io.BytesIO(b"evil"))
    return _gzip(raw) + _gzip(extra.getvalue())


def _trailing_junk(raw: bytes) -> bytes:
    return _gzip(raw) + b"\x00"


def _truncated(raw: bytes) -> bytes:
    return _gzip(raw)[:-5]


def _other_level(raw: bytes) -> bytes:
    return _gzip(raw, level=6)


def _member_mtime(raw: bytes) -> bytes:
    out = io.BytesIO()
    with (
        tarfile.open(fileobj=io.BytesIO(raw)) as src,
        tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as dst,
    ):
        for info in src:
            info.mtime += 1
            dst.addfile(info, src.extractfile(info) if info.isfile() else None)
    return _gzip(out.getvalue())


def _extra_padding(raw: bytes) -> bytes:
    return _gzip(raw + bytes(10240))


# name -> (rewrite the raw tar into a tarball, error id)
FRAMING: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "wrong-crc": (_crc, "tarball.gzip"),
    "wrong-isize": (_isize, "tarball.gzip"),
    "header-mtime": (_header_mtime, "tarball.gzip"),
    "header-os": (_header_os, "tarball.gzip"),
    "header-file-name": (_header_name, "tarball.gzip"),
    "second-gzip-member": (_second_member, "tarball.gzip"),
    "trailing-byte": (_trailing_junk, "tarball.gzip"),
    "truncated": (_truncated, "tarball.gzip"),
    "other-compression-level": (_other_level, "tarball.not-reproducible"),
    "member-mtime": (_member_mtime, "tarball.not-reproducible"),
    # inflates past the rebuilt tarball's size: refused at the first byte over that limit
    "extra-zero-padding": (_extra_padding, "bundle.limit"),
}


def test_rebuilt_gzip_equals_the_shipped_tarball(pristine: tuple[Harness, Path]) -> None:
    """The builders above frame gzip exactly as the writer: unchanged, they change nothing."""
    assert _gzip(_raw(pristine)) == (pristine[1] / TARBALL).read_bytes()


@pytest.mark.parametrize("mode", ["tarball", "folder"])
@pytest.mark.parametrize("case", list(FRAMING), ids=list(FRAMING))
def test_tarball_bytes_are_pinned(
    pristine: tuple[Harness, Path], tmp_path: Path, case: str, mode: str
) -> None:
    rewrite, error_id = FRAMING[case]
    data = rewrite(_raw(pristine))
    assert data != (pristine[1] / TARBALL).read_bytes()
    if mode == "tarball":
        target = tmp_path / TARBALL
        target.write_bytes(data)
    else:
        target = copy_pristine(pristine, tmp_path)
        (target / TARBALL).write_bytes(data)
    code, result, _ = verify_json(target, pristine[0].trusted)
    assert (code, result["error"]["id"]) == (1, error_id)


@pytest.mark.parametrize("at", [0.25, 0.5, 0.75])
def test_corrupt_deflate_is_a_typed_error(
    pristine: tuple[Harness, Path], tmp_path: Path, at: float
) -> None:
    data = bytearray((pristine[1] / TARBALL).read_bytes())
    for i in range(8):  # a run of flipped bits: zlib refuses the block (or the CRC does)
        data[int(len(data) * at) + i] ^= 0xA5
    target = tmp_path / TARBALL
    target.write_bytes(bytes(data))
    code, result, _ = verify_json(target, pristine[0].trusted)
    assert (code, result["error"]["id"]) == (1, "tarball.gzip")


# -- JSON and operator input ------------------------------------------------------------
DEEP = b"[" * 100_000 + b"]" * 100_000


def _deep_signature(b: Path, h: Harness) -> tuple[Path, Path]:
    (b / "manifest.sigstore.json").write_bytes(DEEP)
    return b, h.trusted


def _deep_trusted_keys(b: Path, h: Harness) -> tuple[Path, Path]:
    (b.parent / "deep.json").write_bytes(b'{"keys": ' + DEEP + b"}")
    return b, b.parent / "deep.json"


def _dev_zero_trusted_keys(b: Path, h: Harness) -> tuple[Path, Path]:
    return b, Path("/dev/zero")


def _dev_zero_bundle(b: Path, h: Harness) -> tuple[Path, Path]:
    return Path("/dev/zero"), h.trusted


def _huge_trusted_keys(b: Path, h: Harness) -> tuple[Path, Path]:
    path = b.parent / "huge.json"
    with path.open("wb") as f:
        f.truncate(64 * MiB)  # sparse: costs no disk
    return b, path


def _huge_bundle_file(b: Path, h: Harness) -> tuple[Path, Path]:
    with (b / "js/host.js").open("r+b") as f:
        f.truncate(HARD_LIMITS.member_bytes + 1)
    return b, h.trusted


def _file_and_folder_tarball(b: Path, h: Harness) -> tuple[Path, Path]:
    """A tarball holding `x` and `x/y`: no folder can be both (it was an OSError)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in (f"{b.name}/x", f"{b.name}/x/y"):
            info = tarfile.TarInfo(name)
            info.size = 4
            tar.addfile(info, io.BytesIO(b"file"))
    packed = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=packed, mtime=0, compresslevel=9) as gz:
        gz.write(raw.getvalue())
    assert packed.getvalue().startswith(GZIP_HEADER)  # past the framing check, to the layout
    path = b.parent / "clash.tar.gz"
    path.write_bytes(packed.getvalue())
    return path, h.trusted


def _pem_trusted_keys(b: Path, h: Harness) -> tuple[Path, Path]:
    return b, h.trusted.with_name(h.trusted.name.replace(".trusted-keys.json", ".pub.pem"))


# name -> (make the input, exit code, error id)
INPUTS: dict[str, tuple[Callable[[Path, Harness], tuple[Path, Path]], int, str]] = {
    "deep-json-signature": (_deep_signature, 1, "signature.malformed"),
    "deep-json-trusted-keys": (_deep_trusted_keys, 3, "trusted-keys.invalid"),
    "dev-zero-trusted-keys": (_dev_zero_trusted_keys, 3, "input.not-regular-file"),
    "dev-zero-bundle": (_dev_zero_bundle, 3, "bundle.unreadable"),
    "huge-trusted-keys": (_huge_trusted_keys, 3, "input.too-large"),
    "huge-bundle-file": (_huge_bundle_file, 1, "bundle.limit"),
    "file-and-folder-tarball": (_file_and_folder_tarball, 1, "tarball.mismatch"),
    "pem-as-trusted-keys": (_pem_trusted_keys, 3, "trusted-keys.invalid"),
}


@pytest.mark.parametrize("case", list(INPUTS), ids=list(INPUTS))
def test_bad_input_is_typed_with_json_output(
    pristine: tuple[Harness, Path], tmp_path: Path, case: str
) -> None:
    make, exit_code, error_id = INPUTS[case]
    bundle, trusted = make(copy_pristine(pristine, tmp_path), pristine[0])
    code, result, err = verify_json(bundle, trusted)
    assert (code, result["ok"], result["error"]["id"]) == (exit_code, False, error_id)
    assert result["error"]["message"] and "  hint: " in err  # every refusal says what to do


def test_fifo_as_trusted_keys_does_not_block(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    fifo = tmp_path / "keys.fifo"
    os.mkfifo(fifo)
    done = subprocess.run(
        [sys.executable, "-m", "verify.cli", "bundle", str(pristine[1]), "--trusted-keys",
         str(fifo), "--json"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert json.loads(done.stdout)["error"]["id"] == "input.not-regular-file"
    assert "Traceback" not in done.stderr


def test_deep_build_index_is_a_typed_error(tmp_path: Path) -> None:
    index = tmp_path / "build/index.json"
    index.parent.mkdir()
    index.write_bytes(b'{"lanes": ' + DEEP + b"}")
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = verify_main(["artifact", "--build-index", str(index)])
    assert code == 3
    assert err.getvalue().startswith("error[json.too-deep]:") and str(index) in err.getvalue()


# -- signers and version floor ------------------------------------------------------------
def _provenance_by_second_key(bundle: Path, h: Harness, tmp_path: Path, policy: str) -> Path:
    import base64

    second = generate_key_files(tmp_path / "second", "second", "release")
    doc = json.loads((bundle / "provenance.sigstore.json").read_text())
    payload = base64.b64decode(doc["dsseEnvelope"]["payload"])
    (bundle / "provenance.sigstore.json").write_bytes(
        sign_to_sigstore_bundle(load_private_key(second.private_pem), IN_TOTO_PAYLOAD_TYPE, payload)
    )
    repack(bundle)
    both = json.loads(h.trusted.read_text())
    both["keys"] += json.loads(second.trusted_keys.read_text())["keys"]
    if policy:
        both["signers"] = policy
    path = tmp_path / "both.json"
    path.write_text(json.dumps(both))
    return path


@pytest.mark.parametrize(
    ("policy", "exit_code", "error_id"),
    [("", 1, "signature.signers-differ"), ("one-key", 1, "signature.signers-differ"),
     ("any-trusted-key", 0, None)],
    ids=["default-policy", "one-key", "any-trusted-key"],
)  # fmt: skip
def test_manifest_and_provenance_need_one_key(
    pristine: tuple[Harness, Path], tmp_path: Path, policy: str, exit_code: int,
    error_id: str | None,
) -> None:  # fmt: skip
    bundle = copy_pristine(pristine, tmp_path)
    trusted = _provenance_by_second_key(bundle, pristine[0], tmp_path, policy)
    code, result, _ = verify_json(bundle, trusted)
    assert (code, (result["error"] or {}).get("id")) == (exit_code, error_id)


@pytest.mark.parametrize(
    ("floor", "exit_code", "error_id"),
    [("9.9.9", 0, None), ("9.9.8", 0, None), ("9.9.10", 1, "manifest.version-floor"),
     ("9.10.0", 1, "manifest.version-floor"), ("10.0.0", 1, "manifest.version-floor"),
     # the project's one grammar, as `fetch` and the loader order releases: a pre-release
     # sorts before its release
     ("9.9.9rc1", 0, None), ("9.9.10rc1", 1, "manifest.version-floor")],
    ids=["same", "lower", "patch-above", "minor-above-numerically", "major-above",
         "pre-release-below", "pre-release-above"],
)  # fmt: skip
def test_not_before_version(
    pristine: tuple[Harness, Path], floor: str, exit_code: int, error_id: str | None
) -> None:
    code, result, _ = verify_json(pristine[1], pristine[0].trusted, "--not-before-version", floor)
    assert (code, (result["error"] or {}).get("id")) == (exit_code, error_id)


@pytest.mark.parametrize("floor", ["latest", "9.9", "v9.9.9", "9.9.9.post1", "9.9.9-rc1"])
def test_not_before_version_must_be_a_release_version(
    pristine: tuple[Harness, Path], floor: str
) -> None:
    with pytest.raises(SystemExit) as caught, contextlib.redirect_stderr(io.StringIO()):
        verify_main(["bundle", str(pristine[1]), "--trusted-keys", str(pristine[0].trusted),
                     "--not-before-version", floor])  # fmt: skip
    assert caught.value.code == 2
