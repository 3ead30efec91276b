"""Malformed input: a small real module truncated at every offset and with random byte
flips gives a parsed module or a typed MalformedWasm with an offset; nothing else."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.verify import wasmbuild as wb
from tests.verify.rustsamples import RUSTC, compile_sample
from verify.errors import VerifyError
from verify.native.errors import MalformedNative
from verify.native.read import native_facts
from verify.wasm.errors import MalformedWasm
from verify.wasm.inventory import inventory_bytes

FLIPS = 3000  # random single-byte changes per module (seeded: the same every run)


@pytest.fixture(scope="module")
def real_module(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    if not RUSTC.exists():  # the builder's threads module covers the same ground
        return wb.module(wb.threads_spec())
    return compile_sample("simd128-wasm32", tmp_path_factory.mktemp("fuzz")).read_bytes()


def _parse_or_typed_error(data: bytes) -> None:
    try:
        inventory_bytes(data)
    except MalformedWasm as exc:
        assert exc.offset is not None and 0 <= exc.offset <= len(data), exc.diagnostics()
        assert exc.diagnostics().startswith("error[wasm.malformed]: ")


def test_truncated_at_every_offset(real_module: bytes) -> None:
    errors = 0
    for end in range(len(real_module)):
        try:
            inventory_bytes(real_module[:end])
        except MalformedWasm as exc:
            errors += 1
            assert exc.offset is not None and exc.offset <= end
    # A prefix is a valid module only when it ends on a section boundary.
    assert errors >= len(real_module) - 20


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_byte_flips(real_module: bytes, seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(FLIPS // 3):
        data = bytearray(real_module)
        for _ in range(rng.choice((1, 1, 2, 4))):
            data[rng.randrange(8, len(data))] = rng.randrange(256)
        _parse_or_typed_error(bytes(data))


MALFORMED = [
    ("empty", b"", 0),
    ("bad-magic", b"\0asn\x01\0\0\0", 0),
    ("component", b"\0asm\x0d\0\x01\0", 4),
    ("unknown-section", b"\0asm\x01\0\0\0\x0e\x00", 8),
    ("section-past-end", b"\0asm\x01\0\0\0\x01\x05\x00", 10),
    ("sections-out-of-order", b"\0asm\x01\0\0\0\x03\x01\x00\x01\x01\x00", 11),
    ("type-trailing-bytes", b"\0asm\x01\0\0\0\x01\x02\x00\x00", 11),
    ("repeated-target-feature",
     b"\0asm\x01\0\0\0" + wb.target_features(("+", "simd128"), ("-", "simd128")), 36),
    ("bad-target-feature-prefix",
     b"\0asm\x01\0\0\0" + wb.custom("target_features", b"\x01\x21" + wb.name("x")), 27),
    ("unknown-memory-flag", b"\0asm\x01\0\0\0\x05\x03\x01\x08\x00", 11),
    ("shared-memory-without-maximum", b"\0asm\x01\0\0\0\x05\x03\x01\x02\x01", 11),
    ("memory-minimum-above-maximum", b"\0asm\x01\0\0\0\x05\x04\x01\x01\x02\x01", 11),
    ("unknown-opcode",
     wb.module(wb.ModuleSpec(code=[b"\xff"], exports=[])), None),
    ("operators-after-end",
     wb.module(wb.ModuleSpec(code=[b"\x0b\x01"], exports=[])), None),
    ("missing-final-end",
     wb.module(wb.ModuleSpec(code=[b"\x02\x40"], exports=[])), None),
]  # fmt: skip


@pytest.mark.parametrize(("data", "offset"), [c[1:] for c in MALFORMED],
                         ids=[c[0] for c in MALFORMED])  # fmt: skip
def test_malformed_is_a_typed_error_with_offset(data: bytes, offset: int | None) -> None:
    with pytest.raises(MalformedWasm) as info:
        inventory_bytes(data)
    assert info.value.offset is not None
    if offset is not None:
        assert info.value.offset == offset, info.value.diagnostics()


@pytest.mark.parametrize("data", [b"", b"\x7fELF" + bytes(60), b"MZ" + bytes(100), b"#!/bin/sh"],
                         ids=["empty", "elf-header-only", "pe-stub-only", "script"])  # fmt: skip
def test_malformed_native_is_typed(data: bytes) -> None:
    with pytest.raises(MalformedNative):
        native_facts(data, "x")


def test_unreadable_file_is_a_verify_error(tmp_path: Path) -> None:
    from verify.inspect import inspect_artifact

    with pytest.raises(VerifyError) as info:
        inspect_artifact(tmp_path / "missing.wasm", "scalar-wasm32")
    assert info.value.exit_code == 3
