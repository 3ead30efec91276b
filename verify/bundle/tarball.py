"""The bundle tarball: one deterministic writer (the pipeline publishes with it, the verifier
rebuilds with it) and one strict, bounded, streaming reader.

Writer: sorted entries, fixed mtime, owner 0, fixed modes, PAX tar, gzip -9 with no name and
no time. Its output is a pure function of the files, so a verifier can require the tarball
to be byte for byte the one it rebuilds from the verified files.

Reader: the gzip header must be the writer's; deflate output is counted as it streams and
refused at the first byte over the limit; the CRC-32 and ISIZE trailer must match and nothing
may follow it (no second gzip member). Tar headers are parsed here, not by `tarfile`: only
ustar regular files, folders and per-file PAX records are accepted, each member's declared
size is checked against the limits *before* its data is read, and the data is read exactly.
"""

from __future__ import annotations

import gzip
import io
import tarfile
import zlib
from collections.abc import Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import PurePosixPath

from verify.bundle import errors as e

# What `gzip.GzipFile(filename="", mtime=0, compresslevel=9)` writes: magic, deflate, no flags,
# mtime 0, XFL 2 (best compression), OS 255 (unknown).
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
_BLOCK = 512
_CHUNK = 64 * 1024


@dataclass(frozen=True)
class ReadLimits:
    """Hard caps on what reading a bundle may cost; a release is far below every one
    (a real bundle: 15 entries, 2 MiB, the largest file 0.6 MiB, the largest JSON 33 KiB)."""

    entries: int
    member_bytes: int
    json_bytes: int
    total_bytes: int
    compressed_bytes: int
    pax_bytes: int

    @property
    def tar_bytes(self) -> int:
        """Most decompressed bytes: the members plus a header, a PAX record and padding each,
        plus the end-of-archive record."""
        return self.total_bytes + self.entries * (4 * _BLOCK + self.pax_bytes) + 20 * _BLOCK


MiB = 1024 * 1024
HARD_LIMITS = ReadLimits(
    entries=256,
    member_bytes=32 * MiB,
    json_bytes=8 * MiB,
    total_bytes=64 * MiB,
    compressed_bytes=64 * MiB,
    pax_bytes=8 * 1024,
)


def member_limit(name: str, limits: ReadLimits) -> int:
    return limits.json_bytes if name.endswith(".json") else limits.member_bytes


# -- writer -------------------------------------------------------------------------------
def deterministic_tarball(
    root_name: str,
    files: Mapping[str, bytes],
    mtime: int,
    executable: AbstractSet[str] = frozenset(),
) -> bytes:
    """tar.gz of `files` under `root_name/`: sorted entries, fixed mtime, owner 0, gzip -n.

    Modes are fixed too: folders and `executable` files 0755, other files 0644.
    """
    entries: dict[str, bytes | None] = {root_name: None}
    modes = {f"{root_name}/{rel}": 0o755 for rel in executable}
    for rel in files:
        parts = PurePosixPath(rel).parts
        for depth in range(1, len(parts)):
            entries[f"{root_name}/{'/'.join(parts[:depth])}"] = None
        entries[f"{root_name}/{rel}"] = files[rel]
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(entries):
            data = entries[name]
            info = tarfile.TarInfo(name)
            info.mtime = mtime
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if data is None:
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tar.addfile(info)
            else:
                info.mode = modes.get(name, 0o644)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    packed = io.BytesIO()
    # filename="" and mtime=0: no name, no time in the gzip header (like gzip -n).
    with gzip.GzipFile(filename="", mode="wb", fileobj=packed, compresslevel=9, mtime=0) as gz:
        gz.write(raw.getvalue())
    return packed.getvalue()


# -- gzip ---------------------------------------------------------------------------------
class _Inflater:
    """The decompressed bytes of the one gzip member in `data`, at most `limit` of them."""

    def __init__(self, data: bytes, limit: int, where: str) -> None:
        if data[:2] != GZIP_HEADER[:2]:
            raise e.BundleUnreadable("not a gzip file (no 1f 8b magic)", where=where)
        if data[: len(GZIP_HEADER)] != GZIP_HEADER:
            raise e.GzipInvalid(
                f"gzip header {data[:10].hex()} is not the release writer's "
                f"{GZIP_HEADER.hex()} (flags, mtime, XFL or OS changed)",
                where=where,
                offset=0,
            )
        self._src = memoryview(data)
        self._pos = len(GZIP_HEADER)
        self._z = zlib.decompressobj(-zlib.MAX_WBITS)
        self._limit = limit
        self._where = where
        self._pending = b""
        self._at = 0  # read position in _pending (slicing it would copy it per read)
        self._crc = 0
        self.produced = 0
        self.finished = False

    def read(self, n: int) -> bytes:
        """Up to `n` bytes (fewer only at the end of the stream)."""
        out: list[bytes] = []
        want = n
        while want > 0:
            if self._at == len(self._pending):
                if self.finished:
                    break
                self._pending, self._at = self._inflate(max(want, _CHUNK)), 0
                continue
            piece = self._pending[self._at : self._at + want]
            self._at += len(piece)
            out.append(piece)
            want -= len(piece)
        return b"".join(out)

    def drain(self) -> None:
        """Inflate to the end (bounded by the limit) so the trailer gets checked."""
        while not self.finished:
            self._inflate(_CHUNK)
        self._pending, self._at = b"", 0

    def _inflate(self, max_out: int) -> bytes:
        try:
            if self._z.unconsumed_tail:
                chunk = self._z.decompress(self._z.unconsumed_tail, max_out)
            elif self._pos < len(self._src):
                feed = self._src[self._pos : self._pos + _CHUNK]
                self._pos += len(feed)
                chunk = self._z.decompress(feed, max_out)
            else:
                raise e.GzipInvalid(
                    "truncated: the deflate stream ends before its final block",
                    where=self._where,
                    offset=len(self._src),
                )
        except zlib.error as exc:
            raise e.GzipInvalid(
                f"corrupt deflate data: {exc}", where=self._where, offset=self._pos
            ) from None
        self.produced += len(chunk)
        if self.produced > self._limit:
            raise e.LimitExceeded(
                f"decompresses to more than {self._limit} bytes (a release's tarball is far "
                "smaller): refused at the first byte over",
                where=self._where,
            )
        self._crc = zlib.crc32(chunk, self._crc)
        if self._z.eof:
            self._check_trailer()
        return chunk

    def _check_trailer(self) -> None:
        self.finished = True
        after = bytes(self._z.unused_data) + bytes(self._src[self._pos :])
        end = len(self._src) - len(after)  # offset of the trailer
        if len(after) < 8:
            raise e.GzipInvalid("truncated gzip trailer", where=self._where, offset=end)
        crc = int.from_bytes(after[0:4], "little")
        isize = int.from_bytes(after[4:8], "little")
        if crc != self._crc:
            raise e.GzipInvalid(
                f"gzip CRC-32 {crc:08x} != {self._crc:08x} of the decompressed data",
                where=self._where,
                offset=end,
            )
        if isize != self.produced & 0xFFFFFFFF:
            raise e.GzipInvalid(
                f"gzip ISIZE {isize} != {self.produced} decompressed bytes (mod 2^32)",
                where=self._where,
                offset=end + 4,
            )
        if len(after) > 8:
            raise e.GzipInvalid(
                f"{len(after) - 8} byte(s) after the gzip member (a second member or junk)",
                where=self._where,
                offset=end + 8,
            )


# -- tar ----------------------------------------------------------------------------------
def _octal(field: bytes, what: str, where: str) -> int:
    text = field.rstrip(b"\0 ").lstrip(b" ")
    try:
        return int(text.decode("ascii"), 8) if text else 0
    except (UnicodeDecodeError, ValueError):
        raise e.TarballMismatch(f"tar header {what} is not octal: {field!r}", where=where) from None


def _pax_records(data: bytes, where: str) -> dict[str, str]:
    """`<len> <key>=<value>\\n` records (POSIX.1-2001)."""
    records: dict[str, str] = {}
    pos = 0
    while pos < len(data):
        space = data.find(b" ", pos)
        digits = data[pos:space] if space > pos else b""
        length = int(digits) if digits.isdigit() else 0
        record = data[pos : pos + length]
        if length <= space - pos or not record.endswith(b"\n"):
            raise e.TarballMismatch("malformed PAX record", where=where)
        key, eq, value = record[space - pos + 1 : -1].partition(b"=")
        if not eq:
            raise e.TarballMismatch("PAX record without '='", where=where)
        try:
            records[key.decode("utf-8")] = value.decode("utf-8")
        except UnicodeDecodeError:
            raise e.TarballMismatch("PAX record is not UTF-8", where=where) from None
        pos += length
    return records


def _exact(stream: _Inflater, n: int, where: str) -> bytes:
    data = stream.read(n)
    if len(data) != n:
        raise e.TarballMismatch("truncated tar archive", where=where)
    return data


def _members(
    stream: _Inflater, limits: ReadLimits, where: str
) -> Iterator[tuple[str, bytes | None]]:
    """(name, bytes) for each file, (name, None) for each folder, in archive order."""
    entries = total = 0
    pax: dict[str, str] = {}
    while True:
        header = _exact(stream, _BLOCK, where)
        if header == bytes(_BLOCK):
            return  # end of archive (the rest, padding, is pinned by the rebuild)
        stored = _octal(header[148:156], "checksum", where)
        if stored != sum(header[:148]) + 8 * 0x20 + sum(header[156:]):
            raise e.TarballMismatch("tar header checksum is wrong", where=where)
        if header[257:265] != b"ustar\x0000":
            raise e.TarballMismatch("not a POSIX ustar header", where=where)
        kind = header[156:157]
        size = _octal(header[124:136], "size", where)
        if kind == b"x":  # PAX record for the next member
            if size > limits.pax_bytes:
                raise e.LimitExceeded(
                    f"PAX header of {size} bytes (limit {limits.pax_bytes})", where=where
                )
            pax = _pax_records(_exact(stream, -(-size // _BLOCK) * _BLOCK, where)[:size], where)
            continue
        name = pax.get("path") or _name(header, where)
        size = int(pax["size"]) if pax.get("size", "").isdigit() else size
        pax = {}
        entries += 1
        if entries > limits.entries:
            raise e.LimitExceeded(f"more than {limits.entries} tar entries", where=where)
        if kind == b"5":
            yield name, None
            continue
        if kind not in (b"0", b"\0"):
            raise e.TarballMismatch(
                f"not a regular file or folder: {name!r} (tar type {kind!r})", where=where
            )
        cap = member_limit(name, limits)
        if size > cap:
            raise e.LimitExceeded(
                f"member {name!r} declares {size} bytes (limit {cap})", where=where
            )
        total += size
        if total > limits.total_bytes:
            raise e.LimitExceeded(
                f"members add up to more than {limits.total_bytes} bytes at {name!r}", where=where
            )
        data = _exact(stream, size, where)
        _exact(stream, -size % _BLOCK, where)
        yield name, data


def _name(header: bytes, where: str) -> str:
    prefix = header[345:500].split(b"\0", 1)[0]
    name = header[0:100].split(b"\0", 1)[0]
    try:
        return (prefix + b"/" + name if prefix else name).decode("utf-8")
    except UnicodeDecodeError:
        raise e.TarballMismatch("member name is not UTF-8", where=where) from None


def read_tarball(
    data: bytes, where: str, limits: ReadLimits = HARD_LIMITS
) -> tuple[str, dict[str, bytes]]:
    """(top folder name, relative path -> bytes) of a bundle tarball; strict on layout,
    framing and size. Raises `BundleUnreadable` only when it is not gzip at all."""
    if len(data) > limits.compressed_bytes:
        raise e.LimitExceeded(
            f"tarball is {len(data)} bytes (limit {limits.compressed_bytes})", where=where
        )
    stream = _Inflater(data, limits.tar_bytes, where)
    try:
        top, files = _layout(_members(stream, limits, where), where)
    except e.TarballMismatch:
        # corrupt deflate data yields a garbage tar: report the root cause if it is that
        # (draining is bounded by the same limit and keeps no data). A limit is refused at
        # once: a garbage header with a valid checksum is not worth inflating the rest for.
        stream.drain()
        raise
    stream.drain()
    return top, files


def _layout(
    members: Iterator[tuple[str, bytes | None]], where: str
) -> tuple[str, dict[str, bytes]]:
    """One top folder, safe relative names, files only once."""
    files: dict[str, bytes] = {}
    top: str | None = None
    for name, content in members:
        parts = PurePosixPath(name).parts
        if name.startswith("/") or ".." in parts or not parts:
            raise e.TarballMismatch(f"unsafe member name {name!r}", where=where)
        if top is None:
            top = parts[0]
        if parts[0] != top:
            raise e.TarballMismatch(f"member outside {top}/: {name!r}", where=where)
        if content is None:
            continue
        if len(parts) < 2:
            raise e.TarballMismatch(f"file at the top level: {name!r}", where=where)
        rel = "/".join(parts[1:])
        if rel in files:
            raise e.TarballMismatch(f"duplicate member {name!r}", where=where)
        files[rel] = content
    folders = {"/".join(rel.split("/")[:i]) for rel in files for i in range(1, rel.count("/") + 1)}
    for rel in sorted(folders & files.keys()):  # `a` and `a/b`: no folder can hold both
        raise e.TarballMismatch(f"member {top}/{rel} is both a file and a folder", where=where)
    return top or "", files


def explain_difference(data: bytes, expected: bytes, where: str) -> e.BundleRejected:
    """Why `data` is not the rebuilt tarball `expected`: its gzip framing (checked with the
    rebuilt size as limit, so a bomb costs nothing), else the first differing offset."""
    raw_size = int.from_bytes(expected[-4:], "little")
    try:
        stream = _Inflater(data, raw_size, where)
        stream.drain()
    except e.BundleRejected as exc:
        return exc
    except e.BundleUnreadable as exc:
        return e.GzipInvalid(exc.message, where=where, offset=0)
    at = next(
        (i for i, (a, b) in enumerate(zip(data, expected, strict=False)) if a != b),
        min(len(data), len(expected)),
    )
    return e.TarballNotRebuilt(
        f"not the deterministic tarball of the verified files ({len(data)} bytes, rebuilt "
        f"{len(expected)}; first difference at byte {at})",
        where=where,
        offset=at,
    )
