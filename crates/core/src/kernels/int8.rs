//! The integer tier's scalar oracle (CONTRACT.md §10): the activation quantizer, the integer
//! block dot of q8/q4 weight codes with int8 activation codes, and the f32 reductions of the
//! tier (RMSNorm's sum of squares, attention scores) in THE lane order of §8, written as plain
//! scalar code. The quantizer below is the scalar lane's and the oracle (the SIMD lanes run
//! `simd128_int::quantize`, equal to it bit for bit, and this one's `quantize_block` for a tail
//! block); the matvec/tile kernels here are the oracle the SIMD128 set (`simd128_int.rs`) must
//! equal bit for bit.

use super::{count_scalar, scalar};
use crate::math::sqrt_det;
use crate::quant::{row_blocks, BLOCK, Q4_BLOCK_BYTES, Q8_BLOCK_BYTES};
use crate::result::{TrResult, TrReturn};

/// Largest activation code magnitude (symmetric: codes are -127..=127, never -128).
pub const QMAX: i32 = 127;

/// Nearest integer to `q`, ties away from zero, for finite |q| < 2^23 (the quantizer's range:
/// |q| <= 127 * (1 + 2^-23) there, or a subnormal-scale block, clamped below). For such q,
/// `q - trunc(q)` is exact, so the comparison with 0.5 decides ties exactly.
pub fn round_half_away(q: f32) -> i32 {
    let t = q as i32; // truncation toward zero (saturating; |q| < 2^31 here)
    let frac = q - t as f32;
    if frac >= 0.5 {
        t + 1
    } else if frac <= -0.5 {
        t - 1
    } else {
        t
    }
}

/// Quantizes `x` (one token's activations, n = x.len() elements) into ⌈n/32⌉ blocks: block b
/// covers x[32b .. min(32b + 32, n)]. `codes` holds 32 per block (the tail block's missing
/// elements get code 0), `scales` one per block. Per block: amax = max |x_j|; d = amax / 127
/// (f32 division); d == 0 (an all-zero block, or amax <= 63 * 2^-149) -> scale 0, codes 0;
/// else code_j = clamp(round_half_away(x_j / d), -127, 127), scale d. Any non-finite x_j ->
/// `NumericalFailure` (nothing is defined for it; the caller's step fails uncommitted).
pub fn quantize(x: &[f32], codes: &mut [i8], scales: &mut [f32]) -> TrReturn<()> {
    count_scalar();
    let blocks = row_blocks(x.len());
    if codes.len() != blocks * BLOCK || scales.len() != blocks {
        return Err(TrResult::InternalInvariant);
    }
    for ((xs, cs), scale) in x.chunks(BLOCK).zip(codes.chunks_exact_mut(BLOCK)).zip(scales.iter_mut()) {
        quantize_block(xs, cs, scale)?;
    }
    Ok(())
}

/// One block of `quantize`: xs (1..=32 elements) into cs (32 codes) and its scale.
pub fn quantize_block(xs: &[f32], cs: &mut [i8], scale: &mut f32) -> TrReturn<()> {
    let mut amax = 0.0f32;
    for v in xs {
        if !v.is_finite() {
            return Err(TrResult::NumericalFailure);
        }
        let a = if *v < 0.0 { -*v } else { *v };
        if a > amax {
            amax = a;
        }
    }
    let d = amax / (QMAX as f32);
    cs.iter_mut().for_each(|c| *c = 0);
    if d == 0.0 {
        *scale = 0.0;
        return Ok(());
    }
    *scale = d;
    for (c, v) in cs.iter_mut().zip(xs) {
        *c = round_half_away(*v / d).clamp(-QMAX, QMAX) as i8;
    }
    Ok(())
}

fn scale_of(block: &[u8]) -> f32 {
    f32::from_le_bytes([block[0], block[1], block[2], block[3]])
}

/// THE integer block dot of q8 weight codes with activation codes (32 each; exact in i32:
/// |sum| <= 32 * 127 * 127 < 2^24).
pub fn q8_block_isum(block: &[u8], acodes: &[i8]) -> i32 {
    let mut s = 0i32;
    for (w, a) in block[4..4 + BLOCK].iter().zip(acodes) {
        s += (*w as i8 as i32) * (*a as i32);
    }
    s
}

/// As `q8_block_isum` with q4 codes (nibble - 8, element 2i low nibble of byte i).
pub fn q4_block_isum(block: &[u8], acodes: &[i8]) -> i32 {
    let mut s = 0i32;
    for (j, a) in acodes.iter().enumerate().take(BLOCK) {
        let byte = block[4 + (j >> 1)];
        let nibble = if j & 1 == 0 { byte & 0x0f } else { byte >> 4 };
        s += (nibble as i32 - 8) * (*a as i32);
    }
    s
}

/// One row: acc = 0; per block b ascending: acc = acc + (wscale_b * ascale_b) * (isum_b as f32).
fn row_dot(row: &[u8], block_bytes: usize, isum: fn(&[u8], &[i8]) -> i32, codes: &[i8], scales: &[f32]) -> f32 {
    let mut acc = 0.0f32;
    for ((block, ac), a_scale) in row.chunks_exact(block_bytes).zip(codes.chunks_exact(BLOCK)).zip(scales) {
        acc = acc + (scale_of(block) * a_scale) * (isum(block, ac) as f32);
    }
    acc
}

/// out[r] = row r of q8 W [rows, cols] . the quantized activations (codes/scales of one token).
/// One q8 row's value (no path counter: the SIMD set's rows beyond the last group of four).
pub fn row_q8(row: &[u8], codes: &[i8], scales: &[f32]) -> f32 {
    row_dot(row, Q8_BLOCK_BYTES, q8_block_isum, codes, scales)
}

pub fn row_q4(row: &[u8], codes: &[i8], scales: &[f32]) -> f32 {
    row_dot(row, Q4_BLOCK_BYTES, q4_block_isum, codes, scales)
}

pub fn matvec_q8(w: &[u8], codes: &[i8], scales: &[f32], out: &mut [f32]) {
    count_scalar();
    rows(w, Q8_BLOCK_BYTES, q8_block_isum, codes, scales, out);
}

pub fn matvec_q4(w: &[u8], codes: &[i8], scales: &[f32], out: &mut [f32]) {
    count_scalar();
    rows(w, Q4_BLOCK_BYTES, q4_block_isum, codes, scales, out);
}

fn rows(w: &[u8], block_bytes: usize, isum: fn(&[u8], &[i8]) -> i32, codes: &[i8], scales: &[f32], out: &mut [f32]) {
    let row_bytes = scales.len() * block_bytes;
    if row_bytes == 0 {
        out.iter_mut().for_each(|o| *o = 0.0);
        return;
    }
    for (o, row) in out.iter_mut().zip(w.chunks_exact(row_bytes)) {
        *o = row_dot(row, block_bytes, isum, codes, scales);
    }
}

/// Tiled rows: emit(r, t, value) for each row r of `w` and token t of the quantized tile
/// (codes [T, blocks * 32], scales [T, blocks]); value = `matvec_*`'s row r for token t.
pub fn matmul_q8(w: &[u8], codes: &[i8], scales: &[f32], blocks: usize, emit: &mut dyn FnMut(usize, usize, f32)) {
    count_scalar();
    tile(w, Q8_BLOCK_BYTES, q8_block_isum, codes, scales, blocks, emit);
}

pub fn matmul_q4(w: &[u8], codes: &[i8], scales: &[f32], blocks: usize, emit: &mut dyn FnMut(usize, usize, f32)) {
    count_scalar();
    tile(w, Q4_BLOCK_BYTES, q4_block_isum, codes, scales, blocks, emit);
}

fn tile(
    w: &[u8],
    block_bytes: usize,
    isum: fn(&[u8], &[i8]) -> i32,
    codes: &[i8],
    scales: &[f32],
    blocks: usize,
    emit: &mut dyn FnMut(usize, usize, f32),
) {
    if blocks == 0 {
        return;
    }
    for (r, row) in w.chunks_exact(blocks * block_bytes).enumerate() {
        for (t, (tc, ts)) in codes.chunks_exact(blocks * BLOCK).zip(scales.chunks_exact(blocks)).enumerate() {
            emit(r, t, row_dot(row, block_bytes, isum, tc, ts));
        }
    }
}

// ---- the tier's f32 reductions in lane order (CONTRACT.md §8 "Lane order"), as scalar code ---

/// Lane l (0..4) sums a_i * b_i for i == l (mod 4) over the whole quadruples, ascending; then
/// (l0 + l1) + (l2 + l3); then the n mod 4 last products left to right. Exactly what the
/// SIMD128 `dot_f32` computes.
pub fn dot_lanes(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let whole = n / 4 * 4;
    let mut lanes = [0.0f32; 4];
    let mut i = 0;
    while i < whole {
        for (l, lane) in lanes.iter_mut().enumerate() {
            *lane = *lane + a[i + l] * b[i + l];
        }
        i += 4;
    }
    let mut acc = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
    while i < n {
        acc = acc + a[i] * b[i];
        i += 1;
    }
    acc
}

/// RMSNorm with ss = dot_lanes(x, x); the rest as `scalar::rmsnorm`.
pub fn rmsnorm(x: &[f32], weight: &[f32], eps: f32, out: &mut [f32]) {
    count_scalar();
    let ss = dot_lanes(x, x);
    let mean = ss / (x.len() as f32);
    let inv = 1.0 / sqrt_det(mean + eps);
    for ((o, v), w) in out.iter_mut().zip(x).zip(weight) {
        *o = (v * inv) * w;
    }
}

/// `scalar::attention_head` with scores by `dot_lanes`.
pub fn attention_head(q: &[f32], keys: &[f32], values: &[f32], scores: &mut [f32], out: &mut [f32]) -> TrReturn<()> {
    count_scalar();
    let head_dim = q.len();
    let scale = 1.0 / sqrt_det(head_dim as f32);
    for (score, kt) in scores.iter_mut().zip(keys.chunks_exact(head_dim)) {
        *score = dot_lanes(q, kt) * scale;
    }
    scalar::softmax(scores)?;
    out.iter_mut().for_each(|o| *o = 0.0);
    for (p, vt) in scores.iter().zip(values.chunks_exact(head_dim)) {
        for (o, v) in out.iter_mut().zip(vt) {
            *o = *o + p * v;
        }
    }
    Ok(())
}
