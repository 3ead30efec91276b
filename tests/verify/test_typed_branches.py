"""The branches added by typed function references and GC (br_on_null, br_on_non_null,
br_on_cast, br_on_cast_fail) name a label like br does: a depth past the open frames is
refused at its offset, as `wasm-tools validate` refuses it ("unknown label")."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.verify import wasmbuild as wb
from verify.wasm.errors import MalformedWasm
from verify.wasm.sections import parse_module
from verify.wasm.tools import executable

NULL_FUNC = b"\xd0\x70"  # ref.null func
# name -> (bytes before the depth, bytes after it)
BRANCHES = {
    "br_on_null": (b"\xd5", b""),
    "br_on_non_null": (b"\xd6", b""),
    "br_on_cast": (b"\xfb\x18\x03", b"\x70\x70"),  # nullable funcref to nullable funcref
    "br_on_cast_fail": (b"\xfb\x19\x03", b"\x70\x70"),
}
CASES = [(name, depth) for name in BRANCHES for depth in (1, 2, 5)]


@pytest.mark.parametrize(("name", "depth"), CASES, ids=[f"{n}-{d}" for n, d in CASES])
def test_depth_past_the_open_frames_is_refused(tmp_path: Path, name: str, depth: int) -> None:
    head, tail = BRANCHES[name]
    code = b"\x02\x40" + NULL_FUNC + head + bytes([depth]) + tail + b"\x1a\x0b"  # block ... end
    data = wb.module(wb.ModuleSpec(code=[code], exports=[], export_memory=False))
    path = tmp_path / "m.wasm"
    path.write_bytes(data)
    valid = subprocess.run([str(executable()), "validate", "--features=all", str(path)],
                           capture_output=True, text=True)  # fmt: skip
    try:
        parse_module(data)
    except MalformedWasm as exc:
        assert depth >= 2 and "unknown label" in exc.message
        assert valid.returncode != 0 and "unknown label" in valid.stderr
        assert exc.offset == data.index(code) + 4 + len(head)  # the depth
        return
    assert depth < 2  # two frames are open: the block and the function
