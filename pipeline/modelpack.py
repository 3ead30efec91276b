"""`pack-model`: write a deterministic tinyrustlm model file (format v1 = f32 kernel tier, or
format v2 = integer tier, CONTRACT.md §10) from a preset and a seed.

The bytes depend only on (preset, seed): weights come from a SHAKE-128 stream keyed by preset,
seed and tensor (an integer-only generator, identical on every machine); RoPE tables are
computed in `decimal` arithmetic, which is exactly specified, then rounded to f32. No numpy,
no libm. The format itself is documented in crates/core/CONTRACT.md ("Model format v1").
"""

from __future__ import annotations

import argparse
import hashlib
import math
import struct
import sys
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal, localcontext
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.io.atomic import write_atomic
from verify.shell.result import Outcome

# --- format v1 constants (mirror crates/core/src/model.rs and quant.rs) ---------------------
MAGIC = b"TRLMODEL"
# format_version -> kernel tier the header declares (CONTRACT.md §1, §10); same file layout
TIERS: dict[str, int] = {"f32": 1, "int8": 2}
HEADER = struct.Struct("<8s12IQ")  # magic, version, flags, L, D, F, V, Hq, Hkv, dh, C, eps, n, len
DIR_ENTRY = struct.Struct("<HHIIIQQ")  # kind, layer, layout, rows, cols, offset, stored_bytes
TENSOR_ALIGN = 16
FLAG_TIED_EMBEDDINGS = 1
BLOCK = 32
LAYOUT_IDS: dict[str, int] = {"f32": 0, "q8-block-v1": 1, "q4-block-v1": 2}
BLOCK_BYTES: dict[str, int] = {"q8-block-v1": 4 + BLOCK, "q4-block-v1": 4 + BLOCK // 2}
STREAM_DOMAIN = "tinyrustlm.modelpack.v1"
ROPE_BASE = 10000

# kind name -> (id, per_layer, f32_only); order is the directory order.
KINDS: dict[str, tuple[int, bool, bool]] = {
    "token_embedding": (1, False, False),
    "attn_norm": (2, True, True),
    "wq": (3, True, False),
    "wk": (4, True, False),
    "wv": (5, True, False),
    "wo": (6, True, False),
    "ffn_norm": (7, True, True),
    "w_gate": (8, True, False),
    "w_up": (9, True, False),
    "w_down": (10, True, False),
    "final_norm": (11, False, True),
    "output": (12, False, False),
    "rope_cos": (13, False, True),
    "rope_sin": (14, False, True),
}
MATRIX_KINDS = ("wq", "wk", "wv", "wo", "w_gate", "w_up", "w_down")


class ModelPackError(PipelineError):
    """A preset or output path the packer cannot use."""

    error_id = "modelpack.usage"
    default_hint = "give --seed in 0..2^32-1 and --out a file path (not a folder)"


@dataclass(frozen=True)
class Preset:
    """Every header dimension plus the layout of each weight matrix."""

    name: str
    purpose: str
    n_layers: int
    d_model: int
    d_ff: int
    vocab: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    max_context: int
    rms_eps: float
    tied: bool
    embedding_layout: str
    output_layout: str
    # layer -> kind -> layout; layers beyond the list reuse its last row.
    layer_layouts: tuple[dict[str, str], ...] = field(default_factory=tuple)
    # kernel tier (TIERS); the integer tier needs every matrix in q8/q4
    tier: str = "f32"
    # preset whose weight stream this one uses (an integer-tier twin has its f32 twin's weights)
    weights_of: str = ""

    @property
    def stream_name(self) -> str:
        return self.weights_of or self.name

    def layout(self, kind: str, layer: int) -> str:
        if kind == "token_embedding":
            return self.embedding_layout
        if kind == "output":
            return self.output_layout
        if KINDS[kind][2]:
            return "f32"
        row = self.layer_layouts[min(layer, len(self.layer_layouts) - 1)]
        return row[kind]


def _uniform(layout: str) -> dict[str, str]:
    return dict.fromkeys(MATRIX_KINDS, layout)


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            name="tiny",
            purpose="embedded startup self-test (crates/core/src/selftest/tiny.trlm)",
            n_layers=2,
            d_model=32,
            d_ff=48,
            vocab=258,
            n_heads=4,
            n_kv_heads=2,
            head_dim=8,
            max_context=32,
            rms_eps=1e-5,
            tied=True,
            embedding_layout="q8-block-v1",
            output_layout="q8-block-v1",
            layer_layouts=(
                {**_uniform("q8-block-v1"), "wo": "f32"},
                {**_uniform("q4-block-v1"), "w_down": "q8-block-v1"},
            ),
        ),
        Preset(
            name="small",
            purpose="tests and golden vectors: GQA, q4 + q8, untied, block tails everywhere",
            n_layers=4,
            d_model=120,
            d_ff=328,
            vocab=320,
            n_heads=6,
            n_kv_heads=2,
            head_dim=20,
            max_context=256,
            rms_eps=1e-5,
            tied=False,
            embedding_layout="q8-block-v1",
            output_layout="q8-block-v1",
            layer_layouts=(
                {
                    **_uniform("q8-block-v1"),
                    "w_gate": "q4-block-v1",
                    "w_up": "q4-block-v1",
                    "w_down": "q4-block-v1",
                },
            ),
        ),
        Preset(
            name="bench",
            purpose="bandwidth benchmarks: >= 64 MiB of q8 weights (generated on demand)",
            n_layers=6,
            d_model=1024,
            d_ff=2816,
            vocab=512,
            n_heads=16,
            n_kv_heads=4,
            head_dim=64,
            max_context=512,
            rms_eps=1e-5,
            tied=False,
            embedding_layout="q8-block-v1",
            output_layout="q8-block-v1",
            layer_layouts=(_uniform("q8-block-v1"),),
        ),
    )
}


def _int8_twin(p: Preset) -> Preset:
    """The integer-tier model with `p`'s weights, byte for byte but the format_version."""
    return replace(
        p,
        name=f"{p.name}-int8",
        purpose=f"integer tier (format v2) twin of `{p.name}`: same weights",
        tier="int8",
        weights_of=p.name,
    )


PRESETS.update({t.name: t for t in (_int8_twin(PRESETS["small"]), _int8_twin(PRESETS["bench"]))})


@dataclass(frozen=True)
class TensorSpec:
    kind: str
    layer: int
    layout: str
    rows: int
    cols: int

    @property
    def stored_bytes(self) -> int:
        if self.layout == "f32":
            return self.rows * self.cols * 4
        blocks = -(-self.cols // BLOCK)
        return self.rows * blocks * BLOCK_BYTES[self.layout]


def tensor_plan(p: Preset) -> list[TensorSpec]:
    """Directory order: embedding, per layer the 9 layer tensors, final norm, output, RoPE."""
    q_dim, kv_dim = p.n_heads * p.head_dim, p.n_kv_heads * p.head_dim
    shapes = {
        "token_embedding": (p.vocab, p.d_model),
        "attn_norm": (1, p.d_model),
        "wq": (q_dim, p.d_model),
        "wk": (kv_dim, p.d_model),
        "wv": (kv_dim, p.d_model),
        "wo": (p.d_model, q_dim),
        "ffn_norm": (1, p.d_model),
        "w_gate": (p.d_ff, p.d_model),
        "w_up": (p.d_ff, p.d_model),
        "w_down": (p.d_model, p.d_ff),
        "final_norm": (1, p.d_model),
        "output": (p.vocab, p.d_model),
        "rope_cos": (p.max_context, p.head_dim // 2),
        "rope_sin": (p.max_context, p.head_dim // 2),
    }
    plan: list[TensorSpec] = []
    for kind, (_, per_layer, _) in KINDS.items():
        if kind == "output" and p.tied:
            continue
        for layer in range(p.n_layers) if per_layer else (0,):
            rows, cols = shapes[kind]
            plan.append(TensorSpec(kind, layer, p.layout(kind, layer), rows, cols))
    # Globals first, then layers in order: the order the runtime reads them.
    return sorted(plan, key=lambda t: (KINDS[t.kind][1], t.layer, KINDS[t.kind][0]))


def _stream(p: Preset, seed: int, spec: TensorSpec, n: int) -> bytes:
    key = f"{STREAM_DOMAIN}|{p.stream_name}|{seed}|{spec.kind}|{spec.layer}".encode()
    return hashlib.shake_128(key).digest(n)


def _f32_bytes(values: Iterator[float] | list[float]) -> bytes:
    arr = array("f", values)
    if sys.byteorder == "big":
        arr.byteswap()
    return arr.tobytes()


def _weight_scale(spec: TensorSpec, code_std: float) -> float:
    """Scale so a row dot of unit activations has about unit variance (embeddings: unit values)."""
    fan_in = 1 if spec.kind == "token_embedding" else spec.cols
    gain = 4.0 if spec.kind == "output" else 1.0
    return gain / (code_std * math.sqrt(fan_in))


# A block's scale is base * one of these, chosen by a stream byte (exact in f32).
SCALE_STEPS = (0.5, 0.75, 1.0, 1.25)


def _packed(p: Preset, seed: int, spec: TensorSpec) -> bytes:
    """q8/q4 blocks: scale bytes and code bytes laid out with C-speed slice assignment."""
    block_bytes = BLOCK_BYTES[spec.layout]
    code_bytes = block_bytes - 4
    blocks_per_row = -(-spec.cols // BLOCK)
    n_blocks = spec.rows * blocks_per_row
    stream = _stream(p, seed, spec, n_blocks * (code_bytes + 1))
    codes, selectors = stream[: n_blocks * code_bytes], stream[n_blocks * code_bytes :]
    code_std = 73.9 if spec.layout == "q8-block-v1" else 4.6
    base = _weight_scale(spec, code_std)
    scales = [struct.pack("<f", base * step) for step in SCALE_STEPS]
    out = bytearray(n_blocks * block_bytes)
    for k in range(4):  # byte k of each block's scale, picked by selector & 3
        table = bytes(scales[b & 3][k] for b in range(256))
        out[k::block_bytes] = selectors.translate(table)
    for j in range(code_bytes):
        out[4 + j :: block_bytes] = codes[j::code_bytes]
    _zero_padding(out, spec, blocks_per_row, block_bytes)
    return bytes(out)


def _zero_padding(out: bytearray, spec: TensorSpec, blocks_per_row: int, block_bytes: int) -> None:
    """Codes past the last logical element of each row are stored as zero bytes/nibbles."""
    tail = spec.cols % BLOCK
    if tail == 0:
        return
    row_bytes = blocks_per_row * block_bytes
    last = (blocks_per_row - 1) * block_bytes + 4
    zeros = bytes(spec.rows)
    if spec.layout == "q8-block-v1":
        for j in range(tail, BLOCK):
            out[last + j :: row_bytes] = zeros
        return
    if tail % 2:  # the byte holding the last element keeps only its low nibble
        at = last + tail // 2
        low_nibble = bytes(b & 0x0F for b in range(256))
        out[at::row_bytes] = bytes(out[at::row_bytes]).translate(low_nibble)
    for j in range(-(-tail // 2), BLOCK // 2):
        out[last + j :: row_bytes] = zeros


def _rope_tables(p: Preset) -> tuple[list[float], list[float]]:
    """cos/sin of pos * base^(-2i/dh) for pos < C, i < dh/2, in 50-digit decimal arithmetic."""
    half = p.head_dim // 2
    cos_rows = [[0.0] * half for _ in range(p.max_context)]
    sin_rows = [[0.0] * half for _ in range(p.max_context)]
    with localcontext() as ctx:
        ctx.prec = 50
        ln_base = Decimal(ROPE_BASE).ln()
        for i in range(half):
            theta = (-(Decimal(2 * i) / Decimal(p.head_dim)) * ln_base).exp()
            c1, s1 = _cos_sin(theta)
            c, s = Decimal(1), Decimal(0)
            for pos in range(p.max_context):
                cos_rows[pos][i], sin_rows[pos][i] = float(c), float(s)
                c, s = c * c1 - s * s1, s * c1 + c * s1
    return [v for row in cos_rows for v in row], [v for row in sin_rows for v in row]


def _cos_sin(x: Decimal) -> tuple[Decimal, Decimal]:
    """Taylor series for |x| <= 1 (theta_i = base^(-2i/dh) is in (0, 1])."""
    term, cos, sin = Decimal(1), Decimal(0), Decimal(0)
    for n in range(60):
        if n % 4 == 0:
            cos += term
        elif n % 4 == 1:
            sin += term
        elif n % 4 == 2:
            cos -= term
        else:
            sin -= term
        term = term * x / (n + 1)
    return cos, sin


def _f32_tensor(p: Preset, seed: int, spec: TensorSpec, rope: dict[str, list[float]]) -> bytes:
    if spec.kind in rope:
        return _f32_bytes(rope[spec.kind])
    n = spec.rows * spec.cols
    stream = _stream(p, seed, spec, n)
    if KINDS[spec.kind][2]:  # norm weights: 1 + small deterministic jitter
        return _f32_bytes(1.0 + (b - 128) / 1024 for b in stream)
    scale = _weight_scale(spec, 73.9)
    return _f32_bytes((b - 128) * scale for b in stream)


def pack(preset: Preset, seed: int) -> bytes:
    """The complete model file for (preset, seed)."""
    plan = tensor_plan(preset)
    data_start = _align(HEADER.size + DIR_ENTRY.size * len(plan))
    rope_cos, rope_sin = _rope_tables(preset)
    rope = {"rope_cos": rope_cos, "rope_sin": rope_sin}
    directory, chunks, offset = bytearray(), [], data_start
    for spec in plan:
        body = (
            _f32_tensor(preset, seed, spec, rope)
            if spec.layout == "f32"
            else _packed(preset, seed, spec)
        )
        assert len(body) == spec.stored_bytes, spec
        kind_id = KINDS[spec.kind][0]
        directory += DIR_ENTRY.pack(
            kind_id, spec.layer, LAYOUT_IDS[spec.layout], spec.rows, spec.cols, offset, len(body)
        )
        padded = body + bytes(_align(len(body)) - len(body))
        chunks.append(padded)
        offset += len(padded)
    flags = FLAG_TIED_EMBEDDINGS if preset.tied else 0
    header = HEADER.pack(
        MAGIC,
        TIERS[preset.tier],
        flags,
        preset.n_layers,
        preset.d_model,
        preset.d_ff,
        preset.vocab,
        preset.n_heads,
        preset.n_kv_heads,
        preset.head_dim,
        preset.max_context,
        struct.unpack("<I", struct.pack("<f", preset.rms_eps))[0],
        len(plan),
        offset,
    )
    gap = bytes(data_start - HEADER.size - len(directory))
    return header + bytes(directory) + gap + b"".join(chunks)


def _align(n: int) -> int:
    return -(-n // TENSOR_ALIGN) * TENSOR_ALIGN


def q8_weight_bytes(preset: Preset) -> int:
    """Stored bytes of every q8 tensor (the bench preset must reach 64 MiB)."""
    return sum(t.stored_bytes for t in tensor_plan(preset) if t.layout == "q8-block-v1")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--preset", choices=sorted(PRESETS), required=True, help="the model's shape preset"
    )
    parser.add_argument("--seed", type=int, default=7, help="0 <= seed < 2^32 (default 7)")
    parser.add_argument("--out", type=Path, required=True, help="model file to write")


def run(args: argparse.Namespace) -> Outcome:
    seed: int = args.seed
    if not 0 <= seed < 2**32:
        raise ModelPackError(
            f"seed {seed} out of range", where="--seed", hint="use 0 <= seed < 2^32"
        )
    out: Path = args.out
    if out.is_dir():
        raise ModelPackError(f"{out} is a directory", where="--out")
    data = pack(PRESETS[args.preset], seed)
    write_atomic(out, data)
    digest = hashlib.sha256(data).hexdigest()
    print(f"{out}: preset={args.preset} seed={seed} bytes={len(data)} sha256={digest}")
    result = {"out": str(out), "preset": args.preset, "seed": seed, "bytes": len(data)}
    return Outcome(0, {**result, "sha256": digest})
