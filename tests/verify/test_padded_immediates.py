"""The decoder's fast paths for padded immediates agree with wasm-tools, byte for byte.

lld pads relocated LEBs to 5 bytes (call indices, i32.const addresses, memarg offsets), so the
decoder skips them without calling the generic LEB reader. Each case here is one body; the
reference is `wasm-tools print`, which decodes every operator (it does not validate, so an
index past the end is still well-formed): our decoder must accept exactly what it accepts,
count the same instructions, and reject the rest with a typed error at an offset.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.verify import wasmbuild as wb
from verify.wasm.errors import MalformedWasm
from verify.wasm.features import Proposal
from verify.wasm.sections import parse_module
from verify.wasm.tools import executable

# Last bytes around every range edge: u32 (< 0x10), s32 (< 0x08 or >= 0x78), continuation.
LAST = [0x00, 0x01, 0x07, 0x08, 0x0F, 0x10, 0x3F, 0x40, 0x77, 0x78, 0x7F]
PAD = b"\x80\x80\x80\x80"


def _cases() -> list[tuple[str, bytes, tuple[int, ...]]]:
    """(id, operators, local types) for every fast path that skips a padded immediate."""
    out: list[tuple[str, bytes, tuple[int, ...]]] = []
    for last in LAST:
        leb5 = PAD + bytes([last])
        leb6 = PAD + bytes([last | 0x80, 0x00])  # a sixth byte: too long for 32 bits
        out += [
            (f"i32.const-{last:02x}", b"\x41" + leb5 + b"\x1a", ()),
            (f"i32.const6-{last:02x}", b"\x41" + leb6 + b"\x1a", ()),
            (f"i64.const-{last:02x}", b"\x42" + leb5 + b"\x1a", ()),
            (f"call-{last:02x}", b"\x10" + leb5, ()),
            (f"call6-{last:02x}", b"\x10" + leb6, ()),
            (f"local.get-{last:02x}", b"\x20" + leb5 + b"\x1a", (0x7F,)),
            (f"i32.load-{last:02x}", b"\x41\x00\x28\x02" + leb5 + b"\x1a", ()),
            (f"i32.load6-{last:02x}", b"\x41\x00\x28\x02" + leb6 + b"\x1a", ()),
            (f"v128.load-{last:02x}", b"\x41\x00\xfd\x00\x04" + leb5 + b"\x1a", ()),
        ]
    out += [
        # a 3-byte offset on the body's last operator: nothing may be read past the `end`
        ("v128.load-last", b"\x41\x00\xfd\x00\x04\x80\x80\x01", ()),
        ("f32.const", b"\x43\x00\x00\x80\x3f\x1a", ()),
        ("f64.const", b"\x44" + bytes(7) + b"\x40\x1a", ()),
        ("f32.const-short", b"\x43\x00\x00", ()),
        ("extract_lane", b"\xfd\x0c" + bytes(16) + b"\xfd\x1f\x03\x1a", ()),
        ("extract_lane-short", b"\xfd\x0c" + bytes(16) + b"\xfd\x1f", ()),
        ("v128-local", b"", (0x7B,)),
        ("many-locals", b"", (0x7F,) * 130),
        ("bad-local-type", b"", (0x55,)),
    ]
    return out


CASES = _cases()


def _print_lines(path: Path) -> int | None:
    """Instruction lines `wasm-tools print` shows in the one function, or None if it fails."""
    proc = subprocess.run([str(executable()), "print", str(path)], capture_output=True, text=True)
    if proc.returncode:
        return None
    lines = proc.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("(func"))
    body = [line.strip() for line in lines[start + 1 :]]
    return sum(1 for line in body if line and not line.startswith(("(", ")")))


@pytest.mark.parametrize(("ops", "local_types"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_decoder_agrees_with_wasm_tools(
    tmp_path: Path, ops: bytes, local_types: tuple[int, ...]
) -> None:
    # The locals are one group (130 of them make its count a 2-byte LEB).
    groups = wb.vec([wb.uleb(len(local_types)) + bytes([local_types[0]])] if local_types else [])
    inner = groups + ops + b"\x0b"
    data = wb.module(wb.ModuleSpec(raw_bodies=[wb.uleb(len(inner)) + inner], exports=[]))
    path = tmp_path / "case.wasm"
    path.write_bytes(data)
    printed = _print_lines(path)
    try:
        module = parse_module(data)
    except MalformedWasm as exc:
        assert printed is None, f"we reject what wasm-tools decodes: {exc.diagnostics()}"
        assert exc.offset is not None and 0 < exc.offset <= len(data)
        return
    assert printed is not None, "we accept what wasm-tools rejects"
    assert module.code.instruction_count - 1 == printed  # print does not show the final end
    if 0x7B in local_types:
        assert module.code.requires & Proposal.SIMD
