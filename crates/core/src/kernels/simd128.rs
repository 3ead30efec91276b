//! SIMD128 kernels with exactly the scalar kernels' signatures; `kernels/mod.rs` selects this
//! set when the build enables `simd128`. Fixed-width SIMD only (no relaxed SIMD): every product
//! is an ordinary `f32x4_mul` followed by a separate `f32x4_add`, never fused.
//!
//! Numerical tiers (CONTRACT.md, "SIMD128 kernels"):
//! - reductions the oracle does left to right (matvec row dots, attention scores, RMSNorm's sum
//!   of squares) run in four lanes, lane `i` taking the elements `== i (mod 4)` in ascending
//!   order, reduced by the fixed tree `(l0 + l1) + (l2 + l3)`; they agree with scalar within
//!   the golden vectors' `alternate_tolerance`, not bit for bit;
//! - elementwise work (value accumulation, RMSNorm scaling, residual add) is bit-identical.
//!
//! Bounds: a q8/q4 row is whole 32-element blocks plus at most one partial block. Whole blocks
//! load their codes as 16-byte vectors inside the block's stored bytes and their activations as
//! f32x4 inside `x`; the partial block goes through `scalar::q8_block`/`q4_block`, so no load
//! reaches past a slice's end (no over-read, no reliance on stored padding).
//! Shapes were checked by `kernels::*`; the slice indexing below re-checks them anyway.

use core::arch::wasm32::*;

use super::{count_simd, scalar, AttentionShape};
use crate::math::{exp_det, silu_det, sqrt_det, EXP_OVERFLOW, EXP_UNDERFLOW, LN2_C1, LN2_C2, LOG2E};
use crate::math::{P0, P1, P2, P3, P4, P5};
use crate::quant::{BLOCK, Q4_BLOCK_BYTES, Q8_BLOCK_BYTES};
use crate::result::TrReturn;

// Not vectorised (no reduction and no measurable share of decode time): the scalar oracle.
// (softmax and silu_mul were, at 2% each of an int8 decode step: `exp4` below.)
pub use scalar::{dequant_row_f32, dequant_row_q4, dequant_row_q8, rope};

/// (l0 + l1) + (l2 + l3): THE lane reduction of every kernel here.
#[inline(always)]
fn reduce(v: v128) -> f32 {
    (f32x4_extract_lane::<0>(v) + f32x4_extract_lane::<1>(v))
        + (f32x4_extract_lane::<2>(v) + f32x4_extract_lane::<3>(v))
}

/// Four f32 from `x[at..at + 4]` (the slice index is the bounds proof).
#[inline(always)]
fn load4(x: &[f32], at: usize) -> v128 {
    let four = &x[at..at + 4];
    // SAFETY: `four` is 16 readable bytes; v128_load has no alignment requirement.
    unsafe { v128_load(four.as_ptr() as *const v128) }
}

/// Sixteen bytes from `b[at..at + 16]`.
#[inline(always)]
pub(super) fn load16(b: &[u8], at: usize) -> v128 {
    let sixteen = &b[at..at + 16];
    // SAFETY: as `load4`.
    unsafe { v128_load(sixteen.as_ptr() as *const v128) }
}

/// Sixteen signed 8-bit codes as four f32x4 holding code * 2^24 (codes 0..4, 4..8, 8..12,
/// 12..16), exactly: a byte swizzle puts each code in the top byte of an i32 lane with zero
/// bytes below it, so the lane *is* code * 2^24 and `f32x4_convert_i32x4` is exact.
/// (LLVM 14 scalarises the i8 -> i16 -> i32 extend chain into sixteen conversions; this is
/// four swizzles and four conversions.) The 2^24 is removed once per row by `UNSCALE`.
#[inline(always)]
fn codes_to_f32(c: v128) -> [v128; 4] {
    [
        f32x4_convert_i32x4(i8x16_swizzle(c, TOP_BYTE[0])),
        f32x4_convert_i32x4(i8x16_swizzle(c, TOP_BYTE[1])),
        f32x4_convert_i32x4(i8x16_swizzle(c, TOP_BYTE[2])),
        f32x4_convert_i32x4(i8x16_swizzle(c, TOP_BYTE[3])),
    ]
}

/// Swizzle g moves code 4g + l to byte 3 of i32 lane l; index 0x80 (out of range) gives 0.
const TOP_BYTE: [v128; 4] = [
    u8x16(0x80, 0x80, 0x80, 0, 0x80, 0x80, 0x80, 1, 0x80, 0x80, 0x80, 2, 0x80, 0x80, 0x80, 3),
    u8x16(0x80, 0x80, 0x80, 4, 0x80, 0x80, 0x80, 5, 0x80, 0x80, 0x80, 6, 0x80, 0x80, 0x80, 7),
    u8x16(0x80, 0x80, 0x80, 8, 0x80, 0x80, 0x80, 9, 0x80, 0x80, 0x80, 10, 0x80, 0x80, 0x80, 11),
    u8x16(0x80, 0x80, 0x80, 12, 0x80, 0x80, 0x80, 13, 0x80, 0x80, 0x80, 14, 0x80, 0x80, 0x80, 15),
];

/// 2^-24: row lanes carry every product times 2^24 (see `codes_to_f32`). Scaling by a power
/// of two is exact, so this equals the unscaled lane arithmetic bit for bit unless a partial
/// sum exceeds 2^104 in magnitude or the row result is below 2^-102 (subnormal range).
const UNSCALE: f32 = 1.0 / 16_777_216.0;

/// The 32 activations of one whole block as eight f32x4.
#[inline(always)]
fn block_x(x: &[f32]) -> [v128; 8] {
    let x = &x[..BLOCK];
    [load4(x, 0), load4(x, 4), load4(x, 8), load4(x, 12), load4(x, 16), load4(x, 20), load4(x, 24), load4(x, 28)]
}

/// Per lane, the block sum of 32 codes (two vectors: elements 0..16, 16..32) times
/// the block's activations: ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7)), p_g = the
/// products of elements 4g..4g+4, so lane l sums elements l, l+4, ..., l+28.
#[inline(always)]
fn block_sum(t0: v128, t1: v128, xv: &[v128; 8]) -> v128 {
    let [f0, f1, f2, f3] = codes_to_f32(t0);
    let [f4, f5, f6, f7] = codes_to_f32(t1);
    let a = f32x4_add(
        f32x4_add(f32x4_mul(f0, xv[0]), f32x4_mul(f1, xv[1])),
        f32x4_add(f32x4_mul(f2, xv[2]), f32x4_mul(f3, xv[3])),
    );
    let b = f32x4_add(
        f32x4_add(f32x4_mul(f4, xv[4]), f32x4_mul(f5, xv[5])),
        f32x4_add(f32x4_mul(f6, xv[6]), f32x4_mul(f7, xv[7])),
    );
    f32x4_add(a, b)
}

/// The block's f32 LE scale in all four lanes.
#[inline(always)]
fn scale4(block: &[u8]) -> v128 {
    let four = &block[..4];
    // SAFETY: `four` is 4 readable bytes; wasm is little-endian like the format.
    unsafe { v128_load32_splat(four.as_ptr() as *const u32) }
}

#[inline(always)]
pub(super) fn scale_of(block: &[u8]) -> f32 {
    f32::from_le_bytes([block[0], block[1], block[2], block[3]])
}

/// Bytes between the row pair being computed and the one `touch_lines` pulls in: at least the
/// next pair. Measured on the bench machine (x86-64, V8): streaming a 72 MiB q8 matrix goes
/// from ~6 to ~9-12 GB/s; the kernel alone issues too few loads per instruction for the
/// out-of-order window to keep enough cache misses in flight.
pub(super) const PREFETCH_AHEAD: usize = 4096;

/// Software prefetch (Wasm has no prefetch instruction): one byte load per 64-byte line of
/// `w[start..start + len]`, clipped to `w` (never a byte outside the stored weights). The loads
/// are volatile so they are not removed; their values are unused and cannot affect a result.
#[inline(always)]
pub(super) fn touch_lines(w: &[u8], start: usize, len: usize) {
    let end = start.saturating_add(len).min(w.len());
    let mut at = start;
    while at < end {
        // SAFETY: at < w.len().
        unsafe { core::ptr::read_volatile(w.as_ptr().add(at)) };
        at += 64;
    }
}

/// Shared row loop of q8/q4 over two rows at a time (one activation load serves both):
/// per row, lanes += splat(scale_b) * block_sum_b over whole blocks b ascending, then
/// `reduce`, then the partial block through the scalar block routine:
/// acc = acc + scale * block_sum_scalar.
#[inline(always)]
fn quant_rows(
    w: &[u8],
    x: &[f32],
    out: &mut [f32],
    block_bytes: usize,
    codes: impl Fn(&[u8]) -> (v128, v128) + Copy,
    tail: impl Fn(&[u8], &[f32]) -> f32 + Copy,
) {
    let blocks = super::row_blocks(x.len());
    let row_bytes = blocks * block_bytes;
    let whole = x.len() / BLOCK;
    let finish = |row: &[u8], lanes: v128| {
        let mut acc = reduce(f32x4_mul(lanes, f32x4_splat(UNSCALE)));
        if whole < blocks {
            let block = &row[whole * block_bytes..(whole + 1) * block_bytes];
            acc = acc + scale_of(block) * tail(block, &x[whole * BLOCK..]);
        }
        acc
    };
    let last = out.len() / 2 * 2 * row_bytes;
    let mut pairs = out.chunks_exact_mut(2);
    let mut rows = w.chunks_exact(2 * row_bytes);
    let mut pair_start = 0usize;
    // iterators, not index arithmetic: with overflow checks on, `b * block_bytes` would be
    // a checked multiply per block
    for (o, two) in (&mut pairs).zip(&mut rows) {
        touch_lines(w, pair_start.saturating_add((2 * row_bytes).max(PREFETCH_AHEAD)), 2 * row_bytes);
        pair_start += 2 * row_bytes;
        let (ra, rb) = two.split_at(row_bytes);
        let mut la = f32x4_splat(0.0);
        let mut lb = f32x4_splat(0.0);
        let blocks_a = ra.chunks_exact(block_bytes);
        let blocks_b = rb.chunks_exact(block_bytes);
        for ((ba, bb), xs) in blocks_a.zip(blocks_b).zip(x.chunks_exact(BLOCK)) {
            let xv = block_x(xs);
            let (a0, a1) = codes(ba);
            let (b0, b1) = codes(bb);
            la = f32x4_add(la, f32x4_mul(scale4(ba), block_sum(a0, a1, &xv)));
            lb = f32x4_add(lb, f32x4_mul(scale4(bb), block_sum(b0, b1, &xv)));
        }
        o[0] = finish(ra, la);
        o[1] = finish(rb, lb);
    }
    if let (Some(o), Some(row)) = (pairs.into_remainder().first_mut(), w.get(last..last + row_bytes)) {
        let mut la = f32x4_splat(0.0);
        for (ba, xs) in row.chunks_exact(block_bytes).zip(x.chunks_exact(BLOCK)) {
            let xv = block_x(xs);
            let (a0, a1) = codes(ba);
            la = f32x4_add(la, f32x4_mul(scale4(ba), block_sum(a0, a1, &xv)));
        }
        *o = finish(row, la);
    }
}

/// out[r] = dot(row r, x) (see `dot_f32`).
pub fn matvec_f32(w: &[f32], x: &[f32], out: &mut [f32]) {
    count_simd();
    let cols = x.len();
    if cols == 0 {
        out.iter_mut().for_each(|o| *o = 0.0);
        return;
    }
    for (o, row) in out.iter_mut().zip(w.chunks_exact(cols)) {
        *o = dot_f32(row, x);
    }
}

/// Lane l takes a[i] * b[i] for i == l (mod 4) ascending over the whole quadruples, then
/// `reduce`, then the a.len() % 4 last products left to right.
#[inline(always)]
fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut lanes = f32x4_splat(0.0);
    for (qa, qb) in a.chunks_exact(4).zip(b.chunks_exact(4)) {
        lanes = f32x4_add(lanes, f32x4_mul(load4(qa, 0), load4(qb, 0)));
    }
    let mut acc = reduce(lanes);
    for (va, vb) in a.chunks_exact(4).remainder().iter().zip(b.chunks_exact(4).remainder()) {
        acc = acc + va * vb;
    }
    acc
}

/// `math::exp_det` in four lanes: per lane the scalar code's f32 operations in its order
/// (floor(t) is what its truncate-and-step computes for |t| < 2^31; 2^k built from the exponent
/// bits, k > 127 as (y * 2^127) * 2), then its three ranges by selects: x < EXP_UNDERFLOW (and
/// -inf) -> +0, x > EXP_OVERFLOW -> +inf, NaN -> x.
#[inline(always)]
fn exp4(x: v128) -> v128 {
    let t = f32x4_add(f32x4_mul(x, f32x4_splat(LOG2E)), f32x4_splat(0.5));
    let kf = f32x4_floor(t);
    let r = f32x4_sub(x, f32x4_mul(kf, f32x4_splat(LN2_C1)));
    let r = f32x4_sub(r, f32x4_mul(kf, f32x4_splat(LN2_C2)));
    let rr = f32x4_mul(r, r);
    let mut p = f32x4_splat(P0);
    for c in [P1, P2, P3, P4, P5] {
        p = f32x4_add(f32x4_mul(p, r), f32x4_splat(c));
    }
    let y = f32x4_add(f32x4_add(f32x4_mul(p, rr), r), f32x4_splat(1.0));
    let k = i32x4_trunc_sat_f32x4(kf);
    let big = i32x4_gt(k, i32x4_splat(127));
    // (the clamp to -126 only touches lanes the range selects below replace)
    let kc = i32x4_max(i32x4_min(k, i32x4_splat(127)), i32x4_splat(-126));
    let scaled = f32x4_mul(y, i32x4_shl(i32x4_add(kc, i32x4_splat(127)), 23));
    let scaled = v128_bitselect(f32x4_mul(scaled, f32x4_splat(2.0)), scaled, big);
    let v = v128_andnot(scaled, f32x4_lt(x, f32x4_splat(EXP_UNDERFLOW)));
    let v = v128_bitselect(f32x4_splat(f32::INFINITY), v, f32x4_gt(x, f32x4_splat(EXP_OVERFLOW)));
    v128_bitselect(x, v, f32x4_ne(x, x))
}

/// As `scalar::softmax`: its exceptional cases (`softmax_max`), exp(s - max) by `exp4` in
/// four lanes (`exp_det` for the tail), z summed left to right as there, then s / z.
pub fn softmax(scores: &mut [f32]) -> TrReturn<()> {
    count_simd();
    let Some(max) = scalar::softmax_max(scores)? else {
        return Ok(());
    };
    let vmax = f32x4_splat(max);
    let mut quads = scores.chunks_exact_mut(4);
    for q in &mut quads {
        store4(q, 0, exp4(f32x4_sub(load4(q, 0), vmax)));
    }
    for s in quads.into_remainder() {
        *s = exp_det(*s - max);
    }
    let mut z = 0.0f32;
    for s in scores.iter() {
        z = z + *s;
    }
    scalar::softmax_check(z)?;
    let vz = f32x4_splat(z);
    let mut quads = scores.chunks_exact_mut(4);
    for q in &mut quads {
        store4(q, 0, f32x4_div(load4(q, 0), vz));
    }
    for s in quads.into_remainder() {
        *s = *s / z;
    }
    Ok(())
}

/// As `scalar::silu_mul`: gate = (x / (1 + exp_det(-x))) * up per element, four at a time.
pub fn silu_mul(gate: &mut [f32], up: &[f32]) {
    count_simd();
    let n = gate.len().min(up.len());
    let (gate, up) = (&mut gate[..n], &up[..n]);
    let one = f32x4_splat(1.0);
    let mut gs = gate.chunks_exact_mut(4);
    let mut us = up.chunks_exact(4);
    for (g, u) in (&mut gs).zip(&mut us) {
        let x = load4(g, 0);
        let silu = f32x4_div(x, f32x4_add(one, exp4(f32x4_neg(x))));
        store4(g, 0, f32x4_mul(silu, load4(u, 0)));
    }
    for (g, u) in gs.into_remainder().iter_mut().zip(us.remainder()) {
        *g = silu_det(*g) * u;
    }
}

/// `dot_f32(q, k_j)` of four rows k_j = keys[j * n..(j + 1) * n] (n = q.len(), a multiple of 4,
/// so no tail): each row's lanes accumulate exactly as in `dot_f32`, then the four are
/// transposed so that lane j of (T0 + T1) + (T2 + T3) is row j's `reduce`.
#[inline(always)]
fn dot4_f32(q: &[f32], keys: &[f32]) -> v128 {
    let n = q.len();
    let (k01, k23) = keys.split_at(2 * n);
    let (k0, k1) = k01.split_at(n);
    let (k2, k3) = k23.split_at(n);
    let mut acc = [f32x4_splat(0.0); 4];
    let rows = k0.chunks_exact(4).zip(k1.chunks_exact(4)).zip(k2.chunks_exact(4)).zip(k3.chunks_exact(4));
    for (qq, (((a, b), c), d)) in q.chunks_exact(4).zip(rows) {
        let qv = load4(qq, 0);
        acc[0] = f32x4_add(acc[0], f32x4_mul(qv, load4(a, 0)));
        acc[1] = f32x4_add(acc[1], f32x4_mul(qv, load4(b, 0)));
        acc[2] = f32x4_add(acc[2], f32x4_mul(qv, load4(c, 0)));
        acc[3] = f32x4_add(acc[3], f32x4_mul(qv, load4(d, 0)));
    }
    let [a, b, c, d] = acc;
    let (ab_lo, ab_hi) = (i32x4_shuffle::<0, 4, 1, 5>(a, b), i32x4_shuffle::<2, 6, 3, 7>(a, b));
    let (cd_lo, cd_hi) = (i32x4_shuffle::<0, 4, 1, 5>(c, d), i32x4_shuffle::<2, 6, 3, 7>(c, d));
    let t0 = i32x4_shuffle::<0, 1, 4, 5>(ab_lo, cd_lo); // lane 0 of each row
    let t1 = i32x4_shuffle::<2, 3, 6, 7>(ab_lo, cd_lo);
    let t2 = i32x4_shuffle::<0, 1, 4, 5>(ab_hi, cd_hi);
    let t3 = i32x4_shuffle::<2, 3, 6, 7>(ab_hi, cd_hi);
    f32x4_add(f32x4_add(t0, t1), f32x4_add(t2, t3))
}

/// q8-block-v1 (see `scalar::matvec_q8`): codes are bytes 4..36 of a block.
pub fn matvec_q8(w: &[u8], x: &[f32], out: &mut [f32]) {
    count_simd();
    if x.is_empty() {
        out.iter_mut().for_each(|o| *o = 0.0);
        return;
    }
    let codes = |block: &[u8]| (load16(block, 4), load16(block, 20));
    quant_rows(w, x, out, Q8_BLOCK_BYTES, codes, scalar::q8_block_sum);
}

/// q4-block-v1: byte i of bytes 4..20 holds element 2i (low nibble) and 2i+1 (high nibble);
/// code = nibble - 8, which stays inside i8 (no wrap before widening).
pub fn matvec_q4(w: &[u8], x: &[f32], out: &mut [f32]) {
    count_simd();
    if x.is_empty() {
        out.iter_mut().for_each(|o| *o = 0.0);
        return;
    }
    quant_rows(w, x, out, Q4_BLOCK_BYTES, q4_codes, scalar::q4_block_sum);
}

/// The 32 q4 codes of a block (bytes 4..20) as two i8x16 vectors in element order.
#[inline(always)]
pub(super) fn q4_codes(block: &[u8]) -> (v128, v128) {
    let packed = load16(block, 4);
    let low = v128_and(packed, u8x16_splat(0x0f));
    let high = u8x16_shr(packed, 4);
    // element order: m is low[m / 2] (m even) or high[m / 2] (m odd)
    let t0 = i8x16_shuffle::<0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23>(low, high);
    let t1 = i8x16_shuffle::<8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31>(low, high);
    (i8x16_sub(t0, i8x16_splat(8)), i8x16_sub(t1, i8x16_splat(8)))
}

/// ss in lanes (then `reduce`, then the tail left to right); the scaling is elementwise and
/// bit-identical to scalar: out_i = (x_i * inv) * w_i.
pub fn rmsnorm(x: &[f32], weight: &[f32], eps: f32, out: &mut [f32]) {
    count_simd();
    let ss = dot_f32(x, x);
    let mean = ss / (x.len() as f32);
    let inv = 1.0 / sqrt_det(mean + eps);
    let n = x.len().min(weight.len()).min(out.len());
    let whole = n / 4 * 4;
    let vinv = f32x4_splat(inv);
    let mut i = 0;
    while i < whole {
        let v = f32x4_mul(f32x4_mul(load4(x, i), vinv), load4(weight, i));
        store4(out, i, v);
        i += 4;
    }
    while i < n {
        out[i] = (x[i] * inv) * weight[i];
        i += 1;
    }
}

#[inline(always)]
fn store4(out: &mut [f32], at: usize, v: v128) {
    let four = &mut out[at..at + 4];
    // SAFETY: `four` is 16 writable bytes; v128_store has no alignment requirement.
    unsafe { v128_store(four.as_mut_ptr() as *mut v128, v) }
}

/// o[i] = o[i] + p * v[i]: elementwise, bit-identical to scalar.
#[inline(always)]
fn axpy(o: &mut [f32], p: f32, v: &[f32]) {
    let n = o.len().min(v.len());
    let whole = n / 4 * 4;
    let vp = f32x4_splat(p);
    let mut i = 0;
    while i < whole {
        let r = f32x4_add(load4(o, i), f32x4_mul(vp, load4(v, i)));
        store4(o, i, r);
        i += 4;
    }
    while i < n {
        o[i] = o[i] + p * v[i];
        i += 1;
    }
}

/// As `scalar::attention`: scores by `dot_f32` (lanes), `softmax`, values by `axpy`.
pub fn attention(
    shape: AttentionShape,
    q: &[f32],
    keys: &[f32],
    values: &[f32],
    scores: &mut [f32],
    out: &mut [f32],
) -> TrReturn<()> {
    count_simd();
    let AttentionShape { n_heads, n_kv_heads, head_dim } = shape;
    let group = n_heads / n_kv_heads;
    let kv_dim = n_kv_heads * head_dim;
    let scale = 1.0 / sqrt_det(head_dim as f32);
    for h in 0..n_heads {
        let kv_off = (h / group) * head_dim;
        let qh = &q[h * head_dim..(h + 1) * head_dim];
        for (t, score) in scores.iter_mut().enumerate() {
            let kt = &keys[t * kv_dim + kv_off..t * kv_dim + kv_off + head_dim];
            *score = dot_f32(qh, kt) * scale;
        }
        softmax(scores)?;
        let oh = &mut out[h * head_dim..(h + 1) * head_dim];
        oh.iter_mut().for_each(|o| *o = 0.0);
        for (t, p) in scores.iter().enumerate() {
            axpy(oh, *p, &values[t * kv_dim + kv_off..t * kv_dim + kv_off + head_dim]);
        }
    }
    Ok(())
}

/// x[n] = x[n] + y[n]: elementwise, bit-identical to scalar.
pub fn add_assign(x: &mut [f32], y: &[f32]) {
    count_simd();
    axpy_one(x, y);
}

#[inline(always)]
fn axpy_one(x: &mut [f32], y: &[f32]) {
    let n = x.len().min(y.len());
    let whole = n / 4 * 4;
    let mut i = 0;
    while i < whole {
        let r = f32x4_add(load4(x, i), load4(y, i));
        store4(x, i, r);
        i += 4;
    }
    while i < n {
        x[i] = x[i] + y[i];
        i += 1;
    }
}

// ---- tiles: one weight row against T token vectors (tiled prefill) ----------------------------

/// The eight f32x4 of one whole block's codes (elements 4g..4g+4 in vector g), times 2^24.
#[inline(always)]
fn block_codes(t0: v128, t1: v128) -> [v128; 8] {
    let [f0, f1, f2, f3] = codes_to_f32(t0);
    let [f4, f5, f6, f7] = codes_to_f32(t1);
    [f0, f1, f2, f3, f4, f5, f6, f7]
}

/// `block_sum` over codes already converted by `block_codes`: the same products and the same
/// tree, so the same bits.
#[inline(always)]
fn block_sum_f(f: &[v128; 8], xv: &[v128; 8]) -> v128 {
    let a = f32x4_add(
        f32x4_add(f32x4_mul(f[0], xv[0]), f32x4_mul(f[1], xv[1])),
        f32x4_add(f32x4_mul(f[2], xv[2]), f32x4_mul(f[3], xv[3])),
    );
    let b = f32x4_add(
        f32x4_add(f32x4_mul(f[4], xv[4]), f32x4_mul(f[5], xv[5])),
        f32x4_add(f32x4_mul(f[6], xv[6]), f32x4_mul(f[7], xv[7])),
    );
    f32x4_add(a, b)
}

/// Tiled q8/q4 rows: per row, tokens in groups of `G`; each whole block's codes are converted
/// once per group and multiplied with each token's activations. Every (row, token) value has
/// exactly `quant_rows`' arithmetic (same lanes, same tree, same scalar tail), so a tile equals
/// T separate matvecs bit for bit; the row is read from memory once and from cache after.
#[inline(always)]
fn quant_tile(
    w: &[u8],
    xs: &[f32],
    cols: usize,
    block_bytes: usize,
    codes: impl Fn(&[u8]) -> (v128, v128) + Copy,
    tail: impl Fn(&[u8], &[f32]) -> f32 + Copy,
    emit: &mut dyn FnMut(usize, usize, f32),
) {
    let blocks = super::row_blocks(cols);
    let row_bytes = blocks * block_bytes;
    let whole = cols / BLOCK;
    let tokens = xs.len() / cols;
    for (r, row) in w.chunks_exact(row_bytes).enumerate() {
        let mut t = 0;
        while t + 8 <= tokens {
            group::<8>(
                row,
                &xs[t * cols..(t + 8) * cols],
                cols,
                whole,
                blocks,
                block_bytes,
                codes,
                tail,
                &mut |k, v| emit(r, t + k, v),
            );
            t += 8;
        }
        while t + 4 <= tokens {
            group::<4>(
                row,
                &xs[t * cols..(t + 4) * cols],
                cols,
                whole,
                blocks,
                block_bytes,
                codes,
                tail,
                &mut |k, v| emit(r, t + k, v),
            );
            t += 4;
        }
        while t < tokens {
            group::<1>(
                row,
                &xs[t * cols..(t + 1) * cols],
                cols,
                whole,
                blocks,
                block_bytes,
                codes,
                tail,
                &mut |k, v| emit(r, t + k, v),
            );
            t += 1;
        }
    }
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn group<const G: usize>(
    row: &[u8],
    xs: &[f32],
    cols: usize,
    whole: usize,
    blocks: usize,
    block_bytes: usize,
    codes: impl Fn(&[u8]) -> (v128, v128) + Copy,
    tail: impl Fn(&[u8], &[f32]) -> f32 + Copy,
    out: &mut dyn FnMut(usize, f32),
) {
    // the G token rows, each exactly `cols` long: one bounds check here, none per block
    let x: [&[f32]; G] = core::array::from_fn(|k| &xs[k * cols..(k + 1) * cols]);
    let mut lanes = [f32x4_splat(0.0); G];
    for (b, block) in row.chunks_exact(block_bytes).take(whole).enumerate() {
        let (c0, c1) = codes(block);
        let f = block_codes(c0, c1);
        let s4 = scale4(block);
        let at = b * BLOCK; // b < whole = cols / BLOCK, so at + BLOCK <= cols
        for k in 0..G {
            // SAFETY: x[k] holds `cols` f32 and at + 32 <= cols (see above).
            let xv = unsafe { block_x_at(x[k].as_ptr().add(at)) };
            lanes[k] = f32x4_add(lanes[k], f32x4_mul(s4, block_sum_f(&f, &xv)));
        }
    }
    for (k, l) in lanes.iter().enumerate() {
        let mut acc = reduce(f32x4_mul(*l, f32x4_splat(UNSCALE)));
        if whole < blocks {
            let block = &row[whole * block_bytes..(whole + 1) * block_bytes];
            acc = acc + scale_of(block) * tail(block, &x[k][whole * BLOCK..]);
        }
        out(k, acc);
    }
}

/// The 32 f32 at `p` as eight f32x4 (`block_x` without the slice check).
/// # Safety
/// `p..p + 32` must be readable f32.
#[inline(always)]
unsafe fn block_x_at(p: *const f32) -> [v128; 8] {
    let v = |i: usize| v128_load(p.add(4 * i) as *const v128);
    [v(0), v(1), v(2), v(3), v(4), v(5), v(6), v(7)]
}

/// As `scalar::matmul_f32`, with `dot_f32` (the lanes of `matvec_f32`).
pub fn matmul_f32(w: &[f32], xs: &[f32], cols: usize, emit: &mut dyn FnMut(usize, usize, f32)) {
    count_simd();
    for (r, row) in w.chunks_exact(cols).enumerate() {
        for (t, x) in xs.chunks_exact(cols).enumerate() {
            emit(r, t, dot_f32(row, x));
        }
    }
}

/// As `scalar::matmul_q8` (`matvec_q8`'s arithmetic per row and token).
pub fn matmul_q8(w: &[u8], xs: &[f32], cols: usize, emit: &mut dyn FnMut(usize, usize, f32)) {
    count_simd();
    let codes = |block: &[u8]| (load16(block, 4), load16(block, 20));
    quant_tile(w, xs, cols, Q8_BLOCK_BYTES, codes, scalar::q8_block_sum, emit);
}

/// As `scalar::matmul_q4` (`matvec_q4`'s arithmetic per row and token).
pub fn matmul_q4(w: &[u8], xs: &[f32], cols: usize, emit: &mut dyn FnMut(usize, usize, f32)) {
    count_simd();
    quant_tile(w, xs, cols, Q4_BLOCK_BYTES, q4_codes, scalar::q4_block_sum, emit);
}

/// One query head over contiguous keys/values [n_pos, head_dim]: `attention`'s arithmetic for
/// that head (scores by `dot_f32`, or `dot4_f32` for four positions, `softmax`, values by `axpy`).
pub fn attention_head(q: &[f32], keys: &[f32], values: &[f32], scores: &mut [f32], out: &mut [f32]) -> TrReturn<()> {
    count_simd();
    let head_dim = q.len();
    let scale = 1.0 / sqrt_det(head_dim as f32);
    let mut done = 0;
    if head_dim.is_multiple_of(4) {
        // four positions at a time: the same lane sums, reduced together (`dot4_f32`)
        for (s4, k4) in scores.chunks_exact_mut(4).zip(keys.chunks_exact(4 * head_dim)) {
            store4(s4, 0, f32x4_mul(dot4_f32(q, k4), f32x4_splat(scale)));
            done += 4;
        }
    }
    for (score, kt) in scores[done..].iter_mut().zip(keys[done * head_dim..].chunks_exact(head_dim)) {
        *score = dot_f32(q, kt) * scale;
    }
    softmax(scores)?;
    out.iter_mut().for_each(|o| *o = 0.0);
    for (p, vt) in scores.iter().zip(values.chunks_exact(head_dim)) {
        axpy(out, *p, vt);
    }
    Ok(())
}
