//! The normative scalar kernels: plain loops, fixed left-to-right order, `sum = sum + a * b`
//! (never fused), no allocation. Shapes are checked by `kernels::*` before these run.
//! Every function bumps the scalar path counter once.

use super::{count_scalar, AttentionShape};
use crate::math::{exp_det, silu_det, sqrt_det};
use crate::quant::{BLOCK, Q4_BLOCK_BYTES, Q8_BLOCK_BYTES};
use crate::result::{TrResult, TrReturn};

fn scale_of(block: &[u8]) -> f32 {
    f32::from_le_bytes([block[0], block[1], block[2], block[3]])
}

/// out[r] = sum_c w[r*cols + c] * x[c], c ascending.
pub fn matvec_f32(w: &[f32], x: &[f32], out: &mut [f32]) {
    count_scalar();
    let cols = x.len();
    if cols == 0 {
        out.iter_mut().for_each(|o| *o = 0.0);
        return;
    }
    for (o, row) in out.iter_mut().zip(w.chunks_exact(cols)) {
        let mut acc = 0.0f32;
        for (wv, xv) in row.iter().zip(x) {
            acc = acc + wv * xv;
        }
        *o = acc;
    }
}

/// q8-block-v1 row dot: per block b, s_b = sum_j code_j * x_j (j ascending, only the
/// min(32, remaining) logical elements); acc = acc + scale_b * s_b, blocks ascending.
pub fn matvec_q8(w: &[u8], x: &[f32], out: &mut [f32]) {
    count_scalar();
    let row_bytes = super::row_blocks(x.len()) * Q8_BLOCK_BYTES;
    if row_bytes == 0 {
        out.iter_mut().for_each(|o| *o = 0.0);
        return;
    }
    for (o, row) in out.iter_mut().zip(w.chunks_exact(row_bytes)) {
        let mut acc = 0.0f32;
        for (block, xs) in row.chunks_exact(Q8_BLOCK_BYTES).zip(x.chunks(BLOCK)) {
            acc = acc + scale_of(block) * q8_block_sum(block, xs);
        }
        *o = acc;
    }
}

/// q4-block-v1 row dot: as q8 with code_j = nibble_j - 8 (low nibble first).
pub fn matvec_q4(w: &[u8], x: &[f32], out: &mut [f32]) {
    count_scalar();
    let row_bytes = super::row_blocks(x.len()) * Q4_BLOCK_BYTES;
    if row_bytes == 0 {
        out.iter_mut().for_each(|o| *o = 0.0);
        return;
    }
    for (o, row) in out.iter_mut().zip(w.chunks_exact(row_bytes)) {
        let mut acc = 0.0f32;
        for (block, xs) in row.chunks_exact(Q4_BLOCK_BYTES).zip(x.chunks(BLOCK)) {
            acc = acc + scale_of(block) * q4_block_sum(block, xs);
        }
        *o = acc;
    }
}

/// THE q8 block routine: s = sum_j code_j * x_j over the xs.len() (<= 32) logical elements,
/// j ascending; also the SIMD lane's routine for a partial final block.
pub fn q8_block_sum(block: &[u8], xs: &[f32]) -> f32 {
    let mut s = 0.0f32;
    for (code, xv) in block[4..].iter().zip(xs) {
        s = s + (*code as i8 as f32) * xv;
    }
    s
}

/// THE q4 block routine (as `q8_block_sum` with code_j = nibble_j - 8).
pub fn q4_block_sum(block: &[u8], xs: &[f32]) -> f32 {
    let packed = &block[4..];
    let mut s = 0.0f32;
    for (j, xv) in xs.iter().enumerate() {
        s = s + (q4_code(packed, j) as f32) * xv;
    }
    s
}

fn q4_code(packed: &[u8], j: usize) -> i32 {
    let byte = packed[j >> 1];
    let nibble = if j & 1 == 0 { byte & 0x0f } else { byte >> 4 };
    nibble as i32 - 8
}

pub fn dequant_row_f32(row: &[f32], out: &mut [f32]) {
    count_scalar();
    out.copy_from_slice(row);
}

/// out[j] = scale * code_j, exactly the weights `matvec_q8` multiplies.
pub fn dequant_row_q8(row: &[u8], out: &mut [f32]) {
    count_scalar();
    for (block, os) in row.chunks_exact(Q8_BLOCK_BYTES).zip(out.chunks_mut(BLOCK)) {
        let scale = scale_of(block);
        for (code, o) in block[4..].iter().zip(os.iter_mut()) {
            *o = scale * (*code as i8 as f32);
        }
    }
}

pub fn dequant_row_q4(row: &[u8], out: &mut [f32]) {
    count_scalar();
    for (block, os) in row.chunks_exact(Q4_BLOCK_BYTES).zip(out.chunks_mut(BLOCK)) {
        let scale = scale_of(block);
        let packed = &block[4..];
        for (j, o) in os.iter_mut().enumerate() {
            *o = scale * (q4_code(packed, j) as f32);
        }
    }
}

/// ss = sum x_i^2 (ascending); inv = 1 / sqrt(ss / n + eps); out_i = (x_i * inv) * w_i.
pub fn rmsnorm(x: &[f32], weight: &[f32], eps: f32, out: &mut [f32]) {
    count_scalar();
    let mut ss = 0.0f32;
    for v in x {
        ss = ss + v * v;
    }
    let mean = ss / (x.len() as f32);
    let inv = 1.0 / sqrt_det(mean + eps);
    for ((o, v), w) in out.iter_mut().zip(x).zip(weight) {
        *o = (v * inv) * w;
    }
}

/// (a, b) -> (a*c - b*s, a*s + b*c) for each pair (v[2i], v[2i+1]).
pub fn rope(v: &mut [f32], cos: &[f32], sin: &[f32]) {
    count_scalar();
    for ((pair, c), s) in v.chunks_exact_mut(2).zip(cos).zip(sin) {
        let a = pair[0];
        let b = pair[1];
        pair[0] = a * c - b * s;
        pair[1] = a * s + b * c;
    }
}

/// Stable softmax (reference "Stable softmax"): n = 0 -> InvalidArgument; any NaN ->
/// NumericalFailure; n = 1 -> exactly 1.0; max = +inf -> uniform over the +inf entries;
/// all -inf -> NumericalFailure; z = 0 / NaN / inf -> NumericalFailure.
pub fn softmax(scores: &mut [f32]) -> TrReturn<()> {
    count_scalar();
    let Some(max) = softmax_max(scores)? else {
        return Ok(());
    };
    let mut z = 0.0f32;
    for s in scores.iter_mut() {
        *s = exp_det(*s - max);
        z = z + *s;
    }
    softmax_check(z)?;
    for s in scores.iter_mut() {
        *s = *s / z;
    }
    Ok(())
}

/// `softmax`'s exceptional cases (every kernel set's): Err, or Ok(None) when `scores` is
/// final (n = 1, or max = +inf), or Ok(Some(max)) to go on with exp(s - max).
pub fn softmax_max(scores: &mut [f32]) -> TrReturn<Option<f32>> {
    if scores.is_empty() {
        return Err(TrResult::InvalidArgument);
    }
    let mut max = f32::NEG_INFINITY;
    for s in scores.iter() {
        if s.is_nan() {
            return Err(TrResult::NumericalFailure);
        }
        if *s > max {
            max = *s;
        }
    }
    if scores.len() == 1 {
        scores[0] = 1.0;
        return Ok(None);
    }
    if max == f32::INFINITY {
        let count = scores.iter().filter(|s| **s == f32::INFINITY).count();
        let share = 1.0 / (count as f32);
        for s in scores.iter_mut() {
            *s = if *s == f32::INFINITY { share } else { 0.0 };
        }
        return Ok(None);
    }
    if max == f32::NEG_INFINITY {
        return Err(TrResult::NumericalFailure);
    }
    Ok(Some(max))
}

/// `softmax`'s check of z = sum of exp(s - max): not in (0, inf) -> NumericalFailure.
pub fn softmax_check(z: f32) -> TrReturn<()> {
    #[allow(clippy::neg_cmp_op_on_partial_ord)] // `!(z > 0.0)` is also true for NaN: the contract's check
    if !(z > 0.0) || z == f32::INFINITY {
        return Err(TrResult::NumericalFailure);
    }
    Ok(())
}

/// Per query head h (kv head h / (n_heads / n_kv_heads)): score_t = dot(q_h, k_t) * (1 /
/// sqrt(head_dim)) for t ascending; softmax; out_h[i] = sum_t p_t * v_t[i], t ascending.
pub fn attention(
    shape: AttentionShape,
    q: &[f32],
    keys: &[f32],
    values: &[f32],
    scores: &mut [f32],
    out: &mut [f32],
) -> TrReturn<()> {
    count_scalar();
    let AttentionShape { n_heads, n_kv_heads, head_dim } = shape;
    let group = n_heads / n_kv_heads;
    let kv_dim = n_kv_heads * head_dim;
    let scale = 1.0 / sqrt_det(head_dim as f32);
    for h in 0..n_heads {
        let kv_off = (h / group) * head_dim;
        let qh = &q[h * head_dim..(h + 1) * head_dim];
        for (t, score) in scores.iter_mut().enumerate() {
            let kt = &keys[t * kv_dim + kv_off..t * kv_dim + kv_off + head_dim];
            let mut dot = 0.0f32;
            for (a, b) in qh.iter().zip(kt) {
                dot = dot + a * b;
            }
            *score = dot * scale;
        }
        softmax(scores)?;
        let oh = &mut out[h * head_dim..(h + 1) * head_dim];
        oh.iter_mut().for_each(|o| *o = 0.0);
        for (t, p) in scores.iter().enumerate() {
            let vt = &values[t * kv_dim + kv_off..t * kv_dim + kv_off + head_dim];
            for (o, v) in oh.iter_mut().zip(vt) {
                *o = *o + p * v;
            }
        }
    }
    Ok(())
}

pub fn silu_mul(gate: &mut [f32], up: &[f32]) {
    count_scalar();
    for (g, u) in gate.iter_mut().zip(up) {
        *g = silu_det(*g) * u;
    }
}

pub fn add_assign(x: &mut [f32], y: &[f32]) {
    count_scalar();
    for (a, b) in x.iter_mut().zip(y) {
        *a = *a + b;
    }
}

// ---- tiles: one weight row against T token vectors (tiled prefill) ----------------------------

/// Tiled rows: for each row r of `w` (rows of `cols`) and each token t of `xs` ([T, cols]),
/// emit(r, t, value) where value is exactly what `matvec_f32` computes for that row and x = token
/// t. Rows outer, tokens inner: a weight row is read from memory once per tile.
pub fn matmul_f32(w: &[f32], xs: &[f32], cols: usize, emit: &mut dyn FnMut(usize, usize, f32)) {
    count_scalar();
    for (r, row) in w.chunks_exact(cols).enumerate() {
        for (t, x) in xs.chunks_exact(cols).enumerate() {
            let mut acc = 0.0f32;
            for (wv, xv) in row.iter().zip(x) {
                acc = acc + wv * xv;
            }
            emit(r, t, acc);
        }
    }
}

/// As `matmul_f32` for q8-block-v1 rows (`matvec_q8`'s per-row arithmetic).
pub fn matmul_q8(w: &[u8], xs: &[f32], cols: usize, emit: &mut dyn FnMut(usize, usize, f32)) {
    count_scalar();
    quant_tile(w, xs, cols, Q8_BLOCK_BYTES, q8_block_sum, emit);
}

/// As `matmul_f32` for q4-block-v1 rows (`matvec_q4`'s per-row arithmetic).
pub fn matmul_q4(w: &[u8], xs: &[f32], cols: usize, emit: &mut dyn FnMut(usize, usize, f32)) {
    count_scalar();
    quant_tile(w, xs, cols, Q4_BLOCK_BYTES, q4_block_sum, emit);
}

fn quant_tile(
    w: &[u8],
    xs: &[f32],
    cols: usize,
    block_bytes: usize,
    block_sum: fn(&[u8], &[f32]) -> f32,
    emit: &mut dyn FnMut(usize, usize, f32),
) {
    let row_bytes = super::row_blocks(cols) * block_bytes;
    for (r, row) in w.chunks_exact(row_bytes).enumerate() {
        for (t, x) in xs.chunks_exact(cols).enumerate() {
            let mut acc = 0.0f32;
            for (block, xb) in row.chunks_exact(block_bytes).zip(x.chunks(BLOCK)) {
                acc = acc + scale_of(block) * block_sum(block, xb);
            }
            emit(r, t, acc);
        }
    }
}

/// One query head over `n_pos` cached positions of its kv head, stored contiguously
/// (keys/values [n_pos, head_dim]): exactly the arithmetic `attention` does for that head.
pub fn attention_head(q: &[f32], keys: &[f32], values: &[f32], scores: &mut [f32], out: &mut [f32]) -> TrReturn<()> {
    count_scalar();
    let head_dim = q.len();
    let scale = 1.0 / sqrt_det(head_dim as f32);
    for (score, kt) in scores.iter_mut().zip(keys.chunks_exact(head_dim)) {
        let mut dot = 0.0f32;
        for (a, b) in q.iter().zip(kt) {
            dot = dot + a * b;
        }
        *score = dot * scale;
    }
    softmax(scores)?;
    out.iter_mut().for_each(|o| *o = 0.0);
    for (p, vt) in scores.iter().zip(values.chunks_exact(head_dim)) {
        for (o, v) in out.iter_mut().zip(vt) {
            *o = *o + p * v;
        }
    }
    Ok(())
}
