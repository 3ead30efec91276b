"""pack-model: determinism, presets' declared properties, format layout, the embedded tiny
model, and errors. Fast: packs only tiny and small."""

from __future__ import annotations

import argparse
import hashlib
import itertools
import struct
from pathlib import Path

import pytest

from pipeline import modelpack
from pipeline.modelpack import (
    DIR_ENTRY,
    HEADER,
    KINDS,
    PRESETS,
    TENSOR_ALIGN,
    ModelPackError,
    pack,
    q8_weight_bytes,
    tensor_plan,
)

REPO = Path(__file__).resolve().parents[2]
EMBEDDED_TINY = REPO / "crates/core/src/selftest/tiny.trlm"


def directory(data: bytes) -> list[tuple[int, ...]]:
    count = HEADER.unpack_from(data)[12]
    return [DIR_ENTRY.unpack_from(data, HEADER.size + i * DIR_ENTRY.size) for i in range(count)]


@pytest.mark.parametrize("preset", ["tiny", "small"])
def test_same_preset_and_seed_give_identical_bytes(preset: str) -> None:
    assert pack(PRESETS[preset], 7) == pack(PRESETS[preset], 7)


def test_different_seeds_give_different_weights() -> None:
    assert pack(PRESETS["tiny"], 7) != pack(PRESETS["tiny"], 8)


def test_embedded_self_test_model_is_the_packer_output() -> None:
    assert EMBEDDED_TINY.read_bytes() == pack(PRESETS["tiny"], 7), (
        f"regenerate: tinyrustlm-release pack-model --preset tiny --seed 7 --out {EMBEDDED_TINY}"
    )


@pytest.mark.parametrize("preset", ["tiny", "small"])
def test_header_and_directory_describe_the_file(preset: str) -> None:
    p = PRESETS[preset]
    data = pack(p, 7)
    h = HEADER.unpack_from(data)
    assert h[0] == b"TRLMODEL" and h[1] == 1
    assert h[3:11] == (
        p.n_layers,
        p.d_model,
        p.d_ff,
        p.vocab,
        p.n_heads,
        p.n_kv_heads,
        p.head_dim,
        p.max_context,
    )
    assert h[13] == len(data)
    spans = []
    for kind, layer, layout, rows, cols, offset, size in directory(data):
        assert offset % TENSOR_ALIGN == 0
        assert offset >= HEADER.size + DIR_ENTRY.size * len(directory(data))
        assert offset + size <= len(data)
        assert kind in {k[0] for k in KINDS.values()} and layout in (0, 1, 2)
        assert rows > 0 and cols > 0 and layer < p.n_layers
        spans.append((offset, offset + size))
    spans.sort()
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans)), "tensors overlap"


def test_small_is_gqa_untied_with_q4_and_q8() -> None:
    p = PRESETS["small"]
    layouts = {t.layout for t in tensor_plan(p)}
    assert p.n_heads % p.n_kv_heads == 0 and p.n_heads > p.n_kv_heads
    assert not p.tied and any(t.kind == "output" for t in tensor_plan(p))
    assert {"q4-block-v1", "q8-block-v1"} <= layouts
    # block tails: some matrix width is not a multiple of the block size
    assert any(t.cols % modelpack.BLOCK for t in tensor_plan(p) if t.layout != "f32")


def test_bench_has_at_least_64_mib_of_q8_weights() -> None:
    assert q8_weight_bytes(PRESETS["bench"]) >= 64 * 2**20


def test_tiny_is_small_enough_to_embed() -> None:
    p = PRESETS["tiny"]
    assert p.d_model <= 32 and len(pack(p, 7)) < 64 * 1024


def test_padding_codes_are_zero() -> None:
    data = pack(PRESETS["small"], 7)
    for _kind, _layer, layout, rows, cols, offset, _size in directory(data):
        tail = cols % modelpack.BLOCK
        if layout == 0 or tail == 0:
            continue
        block = 4 + (modelpack.BLOCK if layout == 1 else modelpack.BLOCK // 2)
        blocks = -(-cols // modelpack.BLOCK)
        for r in range(rows):
            last = offset + (r * blocks + blocks - 1) * block + 4
            codes = data[last : last + block - 4]
            if layout == 1:
                assert codes[tail:] == bytes(len(codes) - tail)
            else:
                nibbles = [n for b in codes for n in (b & 15, b >> 4)]
                assert nibbles[tail:] == [0] * (modelpack.BLOCK - tail)


def test_rope_tables_are_unit_rotations() -> None:
    data = pack(PRESETS["tiny"], 7)
    entries = {e[0]: e for e in directory(data)}
    cos_e, sin_e = entries[KINDS["rope_cos"][0]], entries[KINDS["rope_sin"][0]]
    n = cos_e[3] * cos_e[4]
    cos = struct.unpack_from(f"<{n}f", data, cos_e[5])
    sin = struct.unpack_from(f"<{n}f", data, sin_e[5])
    assert cos[0] == 1.0 and sin[0] == 0.0
    assert all(abs(c * c + s * s - 1.0) < 1e-6 for c, s in zip(cos, sin, strict=True))


def test_cli_writes_atomically_and_reports_the_digest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "m" / "tiny.trlm"
    assert modelpack.run(argparse.Namespace(preset="tiny", seed=7, out=out)).code == 0
    data = out.read_bytes()
    assert hashlib.sha256(data).hexdigest() in capsys.readouterr().out
    assert [p.name for p in out.parent.iterdir()] == ["tiny.trlm"]
    assert out.stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize("seed", [-1, 2**32], ids=["negative", "too-large"])
def test_bad_seed_is_a_typed_error(tmp_path: Path, seed: int) -> None:
    with pytest.raises(ModelPackError, match="seed"):
        modelpack.run(argparse.Namespace(preset="tiny", seed=seed, out=tmp_path / "x"))


def test_directory_output_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(ModelPackError, match="directory"):
        modelpack.run(argparse.Namespace(preset="tiny", seed=7, out=tmp_path))
