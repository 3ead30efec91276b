"""How long a native file claims to be: the furthest byte any header points at.

Read straight from the headers with struct (not through lief, which truncates what runs
past the end and carries on): a file shorter than this is incomplete, whatever else parses.
ELF: the program and section header tables, every segment's file image, every section
that occupies file space. PE: the headers, the section table, every section's raw data,
the certificate table (a file offset) and the COFF symbol and string tables.
"""

from __future__ import annotations

import struct

_SHT_NOBITS = 8
_PE_CERTIFICATE_DIRECTORY = 4


def _elf(data: bytes) -> tuple[int, str]:
    wide = data[4] == 2  # ELFCLASS64
    endian = "<" if data[5] == 1 else ">"
    if wide:
        phoff, shoff = struct.unpack_from(endian + "QQ", data, 0x20)
        phentsize, phnum, shentsize, shnum = struct.unpack_from(endian + "HHHH", data, 0x36)
    else:
        phoff, shoff = struct.unpack_from(endian + "II", data, 0x1C)
        phentsize, phnum, shentsize, shnum = struct.unpack_from(endian + "HHHH", data, 0x2A)
    claims = [
        (phoff + phentsize * phnum, "program header table"),
        (shoff + shentsize * shnum, "section header table"),
    ]
    for i in range(phnum):
        at = phoff + i * phentsize
        if at + phentsize > len(data):
            break  # the table itself runs past the end: claimed above
        if wide:
            offset, filesz = struct.unpack_from(endian + "Q16xQ", data, at + 8)
        else:
            offset, filesz = struct.unpack_from(endian + "I8xI", data, at + 4)
        claims.append((offset + filesz, f"segment {i}"))
    for i in range(shnum):
        at = shoff + i * shentsize
        if at + shentsize > len(data):
            break
        (kind,) = struct.unpack_from(endian + "I", data, at + 4)
        if kind == _SHT_NOBITS:
            continue
        if wide:
            offset, size = struct.unpack_from(endian + "QQ", data, at + 0x18)
        else:
            offset, size = struct.unpack_from(endian + "II", data, at + 0x10)
        claims.append((offset + size, f"section {i}"))
    return max(claims)


def _pe(data: bytes) -> tuple[int, str]:
    (lfanew,) = struct.unpack_from("<I", data, 0x3C)
    coff = lfanew + 4
    nsections, _, symtab, nsyms, opt_size = struct.unpack_from("<HIIIH", data, coff + 2)
    opt = coff + 20
    claims = [(opt + opt_size + 40 * nsections, "section table")]
    if opt_size >= 64:
        (magic,) = struct.unpack_from("<H", data, opt)
        (size_of_headers,) = struct.unpack_from("<I", data, opt + 60)
        claims.append((size_of_headers, "SizeOfHeaders"))
        dirs = opt + (112 if magic == 0x20B else 96)  # PE32+ : PE32
        count_at = dirs - 4
        (count,) = struct.unpack_from("<I", data, count_at)
        if count > _PE_CERTIFICATE_DIRECTORY and dirs + 8 * 5 <= opt + opt_size:
            cert_at, cert_size = struct.unpack_from("<II", data, dirs + 8 * 4)
            if cert_size:
                claims.append((cert_at + cert_size, "certificate table"))
    table = opt + opt_size
    for i in range(nsections):
        at = table + 40 * i
        if at + 40 > len(data):
            break
        raw_size, raw_at = struct.unpack_from("<II", data, at + 16)
        if raw_size:
            name = data[at : at + 8].rstrip(b"\0").decode("latin-1")
            claims.append((raw_at + raw_size, f"section {name or i}"))
    if symtab:
        strings = symtab + 18 * nsyms
        claims.append((strings + 4, "COFF symbol table"))
        if strings + 4 <= len(data):
            (strings_size,) = struct.unpack_from("<I", data, strings)
            claims.append((strings + strings_size, "COFF string table"))
    return max(claims)


def claimed_end(data: bytes) -> tuple[int, str]:
    """(end offset, what claims it) of the furthest header claim; (len, "") if unknown."""
    try:
        if data[:4] == b"\x7fELF":
            return _elf(data)
        if data[:2] == b"MZ":
            return _pe(data)
    except struct.error:  # a header itself is cut short: it claims at least one more byte
        return len(data) + 1, "headers"
    return len(data), ""
