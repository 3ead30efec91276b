"""An independent Python forward pass of format-v1 models (CONTRACT.md §1-§3), with either
kernel set: `ORACLE` (scalar, left to right, as f32ref) or `SIMD128` (the documented lane
trees of CONTRACT.md §8, as simd128ref), plus the Python sampler (sampler_ref) for whole
token sequences. numpy float32 arithmetic is IEEE single precision, one rounding per
operation, and every operation below is written out in the contract's order, so the results
are the contract's bits; numpy only vectorises across independent rows, positions or lanes."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from tests.crates.runtime import f32ref, int8ref, sampler_ref
from tests.crates.runtime.f32ref import Pcg32

F32 = np.float32
Vec = npt.NDArray[np.float32]
BLOCK = 32
HEADER = struct.Struct("<8sII8IIIQ")
ENTRY = struct.Struct("<HHIIIQQ")
KINDS = {
    1: "token_embedding",
    2: "attn_norm",
    3: "wq",
    4: "wk",
    5: "wv",
    6: "wo",
    7: "ffn_norm",
    8: "w_gate",
    9: "w_up",
    10: "w_down",
    11: "final_norm",
    12: "output",
    13: "rope_cos",
    14: "rope_sin",
}


@dataclass(frozen=True)
class Matrix:
    """f32: `dense` [rows, cols]; q8/q4: `scales` [rows, blocks], `codes` [rows, blocks, 32]."""

    rows: int
    cols: int
    dense: Vec | None = None
    scales: Vec | None = None
    codes: Vec | None = None


def _matrix(layout: int, rows: int, cols: int, data: bytes) -> Matrix:
    if layout == 0:
        return Matrix(rows, cols, dense=np.frombuffer(data, "<f4").reshape(rows, cols).astype(F32))
    blocks = -(-cols // BLOCK)
    width = 4 + (BLOCK if layout == 1 else BLOCK // 2)
    raw = np.frombuffer(data, np.uint8).reshape(rows, blocks, width)
    scales = raw[:, :, :4].copy().view("<f4").reshape(rows, blocks).astype(F32)
    if layout == 1:
        codes = raw[:, :, 4:].view(np.int8).astype(F32)
    else:
        packed = raw[:, :, 4:].astype(np.int16)
        codes = np.empty((rows, blocks, BLOCK), F32)
        codes[:, :, 0::2] = (packed & 0x0F) - 8
        codes[:, :, 1::2] = (packed >> 4) - 8
    return Matrix(rows, cols, scales=scales, codes=codes)


@dataclass(frozen=True)
class Model:
    layers: int
    dim: int
    vocab: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    eps: np.float32
    tensors: dict[tuple[str, int], Matrix]

    def m(self, kind: str, layer: int = 0) -> Matrix:
        return self.tensors[(kind, layer)]

    def v(self, kind: str, layer: int = 0) -> Vec:
        dense = self.tensors[(kind, layer)].dense
        assert dense is not None
        return dense


def load_model(data: bytes) -> Model:
    (
        magic,
        _version,
        flags,
        n_layers,
        dim,
        _ff,
        vocab,
        n_heads,
        n_kv,
        head_dim,
        _ctx,
        eps_bits,
        count,
        _length,
    ) = HEADER.unpack_from(data, 0)
    assert magic == b"TRLMODEL"
    tensors = {}
    for i in range(count):
        kind, layer, layout, rows, cols, offset, size = ENTRY.unpack_from(data, 64 + 32 * i)
        tensors[(KINDS[kind], layer)] = _matrix(layout, rows, cols, data[offset : offset + size])
    if flags & 1:  # tied: the output projection is the embedding
        tensors[("output", 0)] = tensors[("token_embedding", 0)]
    eps = np.frombuffer(struct.pack("<I", eps_bits), "<f4")[0]
    return Model(n_layers, dim, vocab, n_heads, n_kv, head_dim, F32(eps), tensors)


class Kernels(Protocol):
    def matvec(self, m: Matrix, x: Vec) -> Vec: ...
    def dot_rows(self, rows: Vec, x: Vec) -> Vec: ...
    def sum_of_squares(self, x: Vec) -> np.float32: ...


def _partial_block(m: Matrix, x: Vec, acc: Vec, first: int) -> Vec:
    """Scalar block routines from block `first` on: s = s + code_j * x_j; acc = acc + scale*s."""
    assert m.codes is not None and m.scales is not None
    for b in range(first, m.codes.shape[1]):
        s = np.zeros(m.rows, F32)
        for j in range(min(BLOCK, m.cols - b * BLOCK)):
            s = s + m.codes[:, b, j] * x[b * BLOCK + j]
        acc = acc + m.scales[:, b] * s
    return acc


class Oracle:
    """The scalar kernels: every reduction left to right."""

    def matvec(self, m: Matrix, x: Vec) -> Vec:
        if m.dense is not None:
            return self.dot_rows(m.dense, x)
        return _partial_block(m, x, np.zeros(m.rows, F32), 0)

    def dot_rows(self, rows: Vec, x: Vec) -> Vec:
        acc = np.zeros(rows.shape[0], F32)
        for c in range(x.shape[0]):
            acc = acc + rows[:, c] * x[c]
        return acc

    def sum_of_squares(self, x: Vec) -> np.float32:
        ss = F32(0)
        for v in x:
            ss = F32(ss + v * v)
        return ss


def _reduce(lanes: Vec) -> Vec:
    """(l0 + l1) + (l2 + l3), per row."""
    return (lanes[:, 0] + lanes[:, 1]) + (lanes[:, 2] + lanes[:, 3])


class Simd128:
    """The documented simd128 trees (CONTRACT.md §8): lanes l ≡ i (mod 4), reduced pairwise."""

    def matvec(self, m: Matrix, x: Vec) -> Vec:
        if m.dense is not None:
            return self.dot_rows(m.dense, x)
        assert m.codes is not None and m.scales is not None
        whole = m.cols // BLOCK
        lanes = np.zeros((m.rows, 4), F32)
        for b in range(whole):
            p = ((m.codes[:, b, :] * F32(2.0**24)) * x[b * BLOCK : (b + 1) * BLOCK]).reshape(
                m.rows, 8, 4
            )
            block_sum = ((p[:, 0] + p[:, 1]) + (p[:, 2] + p[:, 3])) + (
                (p[:, 4] + p[:, 5]) + (p[:, 6] + p[:, 7])
            )
            lanes = lanes + m.scales[:, b, None] * block_sum
        acc = _reduce(lanes * F32(2.0**-24))
        return _partial_block(m, x, acc, whole)

    def dot_rows(self, rows: Vec, x: Vec) -> Vec:
        n = x.shape[0]
        whole = n // 4 * 4
        lanes = np.zeros((rows.shape[0], 4), F32)
        for q in range(0, whole, 4):
            lanes = lanes + rows[:, q : q + 4] * x[q : q + 4]
        acc = _reduce(lanes)
        for i in range(whole, n):
            acc = acc + rows[:, i] * x[i]
        return acc

    def sum_of_squares(self, x: Vec) -> np.float32:
        return F32(self.dot_rows(x[None, :], x)[0])


class Int8:
    """The integer tier (CONTRACT.md §10): every matrix quantizes its input (int8ref) and sums
    integer products per block; RMSNorm and attention scores reduce in the §8 lane order."""

    def matvec(self, m: Matrix, x: Vec) -> Vec:
        assert m.codes is not None and m.scales is not None, "the tier has no f32 matrices"
        codes, scales = int8ref.quantize(x)
        blocks = m.scales.shape[1]
        acodes = codes.reshape(blocks, BLOCK).astype(np.int64)
        isum = np.einsum("rbj,bj->rb", m.codes.astype(np.int64), acodes)
        acc = np.zeros(m.rows, F32)
        with np.errstate(all="ignore"):
            for b in range(blocks):
                acc = acc + (m.scales[:, b] * scales[b]) * isum[:, b].astype(F32)
        return acc

    def dot_rows(self, rows: Vec, x: Vec) -> Vec:
        return SIMD128.dot_rows(rows, x)

    def sum_of_squares(self, x: Vec) -> np.float32:
        return SIMD128.sum_of_squares(x)


ORACLE = Oracle()
SIMD128 = Simd128()
INT8 = Int8()


def rmsnorm(k: Kernels, x: Vec, w: Vec, eps: np.float32) -> Vec:
    mean = F32(k.sum_of_squares(x) / F32(x.shape[0]))
    inv = F32(F32(1) / np.sqrt(F32(mean + eps)))
    return (x * inv) * w


def rope(v: Vec, cos: Vec, sin: Vec) -> Vec:
    a, b = v[0::2], v[1::2]
    out = np.empty_like(v)
    out[0::2] = a * cos - b * sin
    out[1::2] = a * sin + b * cos
    return out


class Session:
    """Token-by-token forward pass with an f32 KV cache; `logits` after each token."""

    def __init__(self, model: Model, kernels: Kernels) -> None:
        self.model, self.k = model, kernels
        kv_dim = model.n_kv_heads * model.head_dim
        self.keys: list[list[Vec]] = [[] for _ in range(model.layers)]
        self.values: list[list[Vec]] = [[] for _ in range(model.layers)]
        self.kv_dim = kv_dim
        self.logits: Vec = np.zeros(0, F32)

    def _embedding(self, token: int) -> Vec:
        m = self.model.m("token_embedding")
        if m.dense is not None:
            dense_row: Vec = m.dense[token].copy()
            return dense_row
        assert m.codes is not None and m.scales is not None
        row: Vec = (m.scales[token, :, None] * m.codes[token]).reshape(-1)[: m.cols].astype(F32)
        return row

    def _attention(self, q: Vec, layer: int) -> Vec:
        md, k = self.model, self.k
        d, group = md.head_dim, md.n_heads // md.n_kv_heads
        keys, values = np.stack(self.keys[layer]), np.stack(self.values[layer])
        scale = F32(F32(1) / np.sqrt(F32(d)))
        out = np.empty(md.n_heads * d, F32)
        for h in range(md.n_heads):
            kv = (h // group) * d
            scores = k.dot_rows(keys[:, kv : kv + d], q[h * d : (h + 1) * d]) * scale
            p = f32ref.softmax([float(s) for s in scores])
            head = np.zeros(d, F32)
            for t, pt in enumerate(p):
                head = head + F32(pt) * values[t, kv : kv + d]
            out[h * d : (h + 1) * d] = head
        return out

    def forward(self, token: int) -> None:
        md, k = self.model, self.k
        pos = len(self.keys[0])
        half = md.head_dim // 2
        cos, sin = md.v("rope_cos")[pos, :half], md.v("rope_sin")[pos, :half]
        x = self._embedding(token)
        for layer in range(md.layers):
            xb = rmsnorm(k, x, md.v("attn_norm", layer)[0], md.eps)
            q = k.matvec(md.m("wq", layer), xb)
            kk = k.matvec(md.m("wk", layer), xb)
            vv = k.matvec(md.m("wv", layer), xb)
            d = md.head_dim
            q = np.concatenate([rope(q[i : i + d], cos, sin) for i in range(0, q.shape[0], d)])
            kk = np.concatenate([rope(kk[i : i + d], cos, sin) for i in range(0, kk.shape[0], d)])
            self.keys[layer].append(kk)
            self.values[layer].append(vv)
            x = x + k.matvec(md.m("wo", layer), self._attention(q, layer))
            xb = rmsnorm(k, x, md.v("ffn_norm", layer)[0], md.eps)
            gate = k.matvec(md.m("w_gate", layer), xb)
            up = k.matvec(md.m("w_up", layer), xb)
            hb = np.array(
                [
                    f32ref.f32(f32ref.silu(float(g)) * float(u))
                    for g, u in zip(gate, up, strict=True)
                ],
                F32,
            )
            x = x + k.matvec(md.m("w_down", layer), hb)
        xb = rmsnorm(k, x, md.v("final_norm")[0], md.eps)
        self.logits = k.matvec(md.m("output"), xb)


@dataclass(frozen=True)
class Generated:
    tokens: list[int]
    rng_state: int  # PCG32 state after the last draw


def generate(
    model: Model,
    kernels: Kernels,
    prompt: Sequence[int],
    config: sampler_ref.Config,
    seed: int,
    stream: int,
    max_tokens: int,
) -> Generated:
    """prefill(prompt), then decode until EOS or max_tokens (CONTRACT.md §3)."""
    session = Session(model, kernels)
    rng = Pcg32(seed, stream)
    history = list(prompt)
    for t in prompt:
        session.forward(t)
    tokens: list[int] = []
    while len(tokens) < max_tokens:
        token = sampler_ref.sample([float(v) for v in session.logits], history, config, rng)
        tokens.append(token)
        history.append(token)
        if token == sampler_ref.EOS:
            break
        session.forward(token)
    return Generated(tokens, rng.state)
