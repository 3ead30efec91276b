//! The integer tier's SIMD128 kernels (CONTRACT.md §10), bit-identical to `int8.rs` by
//! construction: a block's integer sum is exact whatever the order of its products, and the
//! per-row f32 work `acc = acc + (wscale_b * ascale_b) * (isum_b as f32)` runs per lane with
//! the oracle's operations, four rows in the four lanes.
//!
//! Per block: weight and activation codes are widened i8 -> i16 (`i16x8_extend_*_i8x16`), then
//! four `i32x4_dot_i16x8` give a row's eight partial sums, added in i32; the partials of four
//! rows are transposed and added to one i32x4 (row r in lane r), converted exactly to f32
//! (|isum| < 2^24). Whole blocks only: the tail block's padded weight codes are stored bytes of
//! the block (so the loads stay inside the row) and meet activation codes that are zero.
//!
//! The row and tile loops are generic over `BlockDot` (how one block's integer dot runs): the
//! relaxed-SIMD set (`relaxed_int.rs`) runs the same loops with its own block dot.

use core::arch::wasm32::*;
use core::mem::MaybeUninit;

use super::simd128::{load16, q4_codes, scale_of, touch_lines, PREFETCH_AHEAD};
use super::{count_simd, int8};
use crate::quant::{row_blocks, BLOCK, Q4_BLOCK_BYTES, Q8_BLOCK_BYTES};
use crate::result::{TrResult, TrReturn};

// The tier's f32 reductions are the SIMD128 set's own lane-order kernels.
pub use super::simd128::{attention_head, rmsnorm};

#[inline(always)]
pub(super) fn load16_i8(b: &[i8], at: usize) -> v128 {
    let sixteen = &b[at..at + 16];
    // SAFETY: `sixteen` is 16 readable bytes; v128_load has no alignment requirement.
    unsafe { v128_load(sixteen.as_ptr() as *const v128) }
}

/// See `int8::quantize`: the same codes and scales bit for bit, eight f32x4 per whole block.
/// amax is a maximum of magnitudes (exact in any order); d = amax / 127 is the oracle's one
/// f32 division; per element q = x / d (`f32x4.div`, IEEE like the scalar division),
/// t = trunc(q) and q - t are exact (|q| < 2^8 here), so `round_half_away`'s comparisons
/// with ±0.5 pick the same t ± 1, and the clamp to ±127 and the narrowing (in range, so never
/// saturating) give the oracle's codes. A tail block (n % 32 elements) runs the oracle's.
pub fn quantize(x: &[f32], codes: &mut [i8], scales: &mut [f32]) -> TrReturn<()> {
    count_simd();
    if codes.len() != row_blocks(x.len()) * BLOCK || scales.len() != row_blocks(x.len()) {
        return Err(TrResult::InternalInvariant);
    }
    let mut blocks = x.chunks_exact(BLOCK);
    let mut out = codes.chunks_exact_mut(BLOCK).zip(scales.iter_mut());
    for (xs, (cs, scale)) in (&mut blocks).zip(&mut out) {
        quantize_block(xs, cs, scale)?;
    }
    match (blocks.remainder(), out.next()) {
        ([], _) => Ok(()),
        (tail, Some((cs, scale))) => int8::quantize_block(tail, cs, scale),
        (_, None) => Err(TrResult::InternalInvariant),
    }
}

/// One whole block (32 elements) of `quantize`.
#[inline(always)]
fn quantize_block(xs: &[f32], cs: &mut [i8], scale: &mut f32) -> TrReturn<()> {
    let xs = &xs[..BLOCK];
    // SAFETY: `xs` is 32 readable f32; v128_load has no alignment requirement.
    let v: [v128; 8] = core::array::from_fn(|i| unsafe { v128_load(xs[4 * i..].as_ptr() as *const v128) });
    let (inf, mut finite, mut amax) = (f32x4_splat(f32::INFINITY), u32x4_splat(u32::MAX), f32x4_splat(0.0));
    // |x| >= +0 orders as its bits do (a NaN is refused below), so an integer max is the float
    // max; a float pmin/pmax is lowered to relaxed_min/max by LLVM on the relaxed lanes, which
    // their policy refuses (CONTRACT.md §12: one relaxed instruction)
    for vi in v {
        let a = f32x4_abs(vi);
        // false for +-inf and NaN
        finite = v128_and(finite, f32x4_lt(a, inf));
        amax = i32x4_max(amax, a);
    }
    if !i32x4_all_true(finite) {
        return Err(TrResult::NumericalFailure);
    }
    let (m0, m1) = (f32x4_extract_lane::<0>(amax), f32x4_extract_lane::<1>(amax));
    let (m2, m3) = (f32x4_extract_lane::<2>(amax), f32x4_extract_lane::<3>(amax));
    let amax = m0.max(m1).max(m2.max(m3));
    let d = amax / (int8::QMAX as f32);
    let cs = &mut cs[..BLOCK];
    if d == 0.0 {
        *scale = 0.0;
        cs.iter_mut().for_each(|c| *c = 0);
        return Ok(());
    }
    *scale = d;
    let (vd, half, one, lim) = (f32x4_splat(d), f32x4_splat(0.5), f32x4_splat(1.0), int8::QMAX);
    let code = |vi: v128| {
        let q = f32x4_div(vi, vd);
        let t = f32x4_trunc(q);
        let frac = f32x4_sub(q, t);
        let up = v128_and(f32x4_ge(frac, half), one);
        let down = v128_and(f32x4_le(frac, f32x4_neg(half)), one);
        let r = f32x4_sub(f32x4_add(t, up), down);
        // r is a whole number: truncated exactly, then clamped in integers (see amax above)
        i32x4_max(i32x4_splat(-lim), i32x4_min(i32x4_splat(lim), i32x4_trunc_sat_f32x4(r)))
    };
    let c: [v128; 8] = v.map(code);
    let lo = i8x16_narrow_i16x8(i16x8_narrow_i32x4(c[0], c[1]), i16x8_narrow_i32x4(c[2], c[3]));
    let hi = i8x16_narrow_i16x8(i16x8_narrow_i32x4(c[4], c[5]), i16x8_narrow_i32x4(c[6], c[7]));
    // SAFETY: `cs` is 32 writable bytes.
    unsafe {
        v128_store(cs.as_mut_ptr() as *mut v128, lo);
        v128_store(cs[16..].as_mut_ptr() as *mut v128, hi);
    }
    Ok(())
}

/// How one layout's block dot runs in one kernel set (SIMD128 here, relaxed SIMD in
/// `relaxed_int.rs`): a block's weight codes loaded and prepared once (`W`), one token's
/// activation codes of the block prepared once (`A`), and their dot as one i32x4 whose four
/// lanes sum to the block's isum (integers: exact in any order). A generic parameter, not a fn
/// pointer: each kernel is monomorphized and the code loads inlined (an indirect call per row
/// and block measured 2x slower than the f32 tier).
pub(super) trait BlockDot: Copy {
    const BLOCK_BYTES: usize;
    /// `rows` prepares one token's activations of every block once per call (up to
    /// `PREPARED_BLOCKS`) instead of once per group of four rows.
    const PREPARE: bool;
    type W: Copy;
    type A: Copy;
    fn weights(block: &[u8]) -> Self::W;
    fn acts(codes: &[i8]) -> Self::A;
    fn partials(w: &Self::W, a: &Self::A) -> v128;
    /// One whole row by the oracle (the rows beyond the last group of four).
    fn tail(row: &[u8], ac: &[i8], asc: &[f32]) -> f32;
}

#[derive(Clone, Copy)]
struct Q8;
#[derive(Clone, Copy)]
struct Q4;

impl BlockDot for Q8 {
    const BLOCK_BYTES: usize = Q8_BLOCK_BYTES;
    const PREPARE: bool = false;
    type W = [v128; 4];
    type A = [v128; 4];
    #[inline(always)]
    fn weights(block: &[u8]) -> [v128; 4] {
        widen(q8_codes(block))
    }
    #[inline(always)]
    fn acts(codes: &[i8]) -> [v128; 4] {
        widen_acts(codes)
    }
    #[inline(always)]
    fn partials(w: &[v128; 4], a: &[v128; 4]) -> v128 {
        partials_wide(w, a)
    }
    fn tail(row: &[u8], ac: &[i8], asc: &[f32]) -> f32 {
        int8::row_q8(row, ac, asc)
    }
}

impl BlockDot for Q4 {
    const BLOCK_BYTES: usize = Q4_BLOCK_BYTES;
    const PREPARE: bool = false;
    type W = [v128; 4];
    type A = [v128; 4];
    #[inline(always)]
    fn weights(block: &[u8]) -> [v128; 4] {
        widen(q4_codes(block))
    }
    #[inline(always)]
    fn acts(codes: &[i8]) -> [v128; 4] {
        widen_acts(codes)
    }
    #[inline(always)]
    fn partials(w: &[v128; 4], a: &[v128; 4]) -> v128 {
        partials_wide(w, a)
    }
    fn tail(row: &[u8], ac: &[i8], asc: &[f32]) -> f32 {
        int8::row_q4(row, ac, asc)
    }
}

#[inline(always)]
fn q8_codes(block: &[u8]) -> (v128, v128) {
    (load16(block, 4), load16(block, 20))
}

/// The activation codes of one block (32) widened to four i16x8.
#[inline(always)]
fn widen_acts(codes: &[i8]) -> [v128; 4] {
    let a0 = load16_i8(codes, 0);
    let a1 = load16_i8(codes, 16);
    [i16x8_extend_low_i8x16(a0), i16x8_extend_high_i8x16(a0), i16x8_extend_low_i8x16(a1), i16x8_extend_high_i8x16(a1)]
}

/// One block's 32 weight codes (two i8x16) widened to four i16x8.
#[inline(always)]
fn widen((lo, hi): (v128, v128)) -> [v128; 4] {
    [i16x8_extend_low_i8x16(lo), i16x8_extend_high_i8x16(lo), i16x8_extend_low_i8x16(hi), i16x8_extend_high_i8x16(hi)]
}

/// Eight i32 partial sums of one row's block from widened codes (their sum is the isum).
#[inline(always)]
fn partials_wide(w: &[v128; 4], a: &[v128; 4]) -> v128 {
    let d0 = i32x4_dot_i16x8(w[0], a[0]);
    let d1 = i32x4_dot_i16x8(w[1], a[1]);
    let d2 = i32x4_dot_i16x8(w[2], a[2]);
    let d3 = i32x4_dot_i16x8(w[3], a[3]);
    i32x4_add(i32x4_add(d0, d1), i32x4_add(d2, d3))
}

/// [sum(p0), sum(p1), sum(p2), sum(p3)] (integer adds: exact in any order).
#[inline(always)]
pub(super) fn transpose_sum(p0: v128, p1: v128, p2: v128, p3: v128) -> v128 {
    let s01 = i32x4_add(i32x4_shuffle::<0, 4, 2, 6>(p0, p1), i32x4_shuffle::<1, 5, 3, 7>(p0, p1));
    let s23 = i32x4_add(i32x4_shuffle::<0, 4, 2, 6>(p2, p3), i32x4_shuffle::<1, 5, 3, 7>(p2, p3));
    i32x4_add(i32x4_shuffle::<0, 1, 4, 5>(s01, s23), i32x4_shuffle::<2, 3, 6, 7>(s01, s23))
}

/// Four rows (`rows`, whole stored rows) against one token: the rows' values in lanes 0..4.
/// Iterators, not index arithmetic: the release profile keeps overflow checks, which would
/// check every `b * block_bytes`. `acts`: the token's prepared activations, block by block.
#[inline(always)]
fn quad<D: BlockDot>(rows: &[u8], row_bytes: usize, acts: impl Iterator<Item = D::A>, asc: &[f32]) -> v128 {
    let (r01, r23) = rows.split_at(2 * row_bytes);
    let (r0, r1) = r01.split_at(row_bytes);
    let (r2, r3) = r23.split_at(row_bytes);
    let bb = D::BLOCK_BYTES;
    let blocks = r0.chunks_exact(bb).zip(r1.chunks_exact(bb)).zip(r2.chunks_exact(bb)).zip(r3.chunks_exact(bb));
    let mut acc = f32x4_splat(0.0);
    for ((((b0, b1), b2), b3), (a, a_scale)) in blocks.zip(acts.zip(asc)) {
        let isum = transpose_sum(
            D::partials(&D::weights(b0), &a),
            D::partials(&D::weights(b1), &a),
            D::partials(&D::weights(b2), &a),
            D::partials(&D::weights(b3), &a),
        );
        let ws = f32x4(scale_of(b0), scale_of(b1), scale_of(b2), scale_of(b3));
        // per lane: acc + (wscale * ascale) * isum, the oracle's three operations
        acc = f32x4_add(acc, f32x4_mul(f32x4_mul(ws, f32x4_splat(*a_scale)), f32x4_convert_i32x4(isum)));
    }
    acc
}

#[inline(always)]
fn store_quad(four: &mut [f32], v: v128) {
    let four = &mut four[..4];
    // SAFETY: `four` is 16 writable bytes.
    unsafe { v128_store(four.as_mut_ptr() as *mut v128, v) }
}

/// Blocks of prepared activations `rows` keeps on its stack (`BlockDot::PREPARE`): 4096
/// columns, every matrix of the bench model (at most 128 * 80 bytes).
const PREPARED_BLOCKS: usize = 128;

pub(super) fn rows<D: BlockDot>(w: &[u8], ac: &[i8], asc: &[f32], out: &mut [f32]) {
    let row_bytes = asc.len() * D::BLOCK_BYTES;
    if row_bytes == 0 {
        out.iter_mut().for_each(|o| *o = 0.0);
        return;
    }
    let mut prepared = [const { MaybeUninit::<D::A>::uninit() }; PREPARED_BLOCKS];
    let prepare = D::PREPARE && asc.len() <= PREPARED_BLOCKS;
    if prepare {
        for (slot, a) in prepared.iter_mut().zip(ac.chunks_exact(BLOCK)) {
            slot.write(D::acts(a));
        }
    }
    let mut quads = out.chunks_exact_mut(4);
    let mut groups = w.chunks_exact(4 * row_bytes);
    let mut start = 0usize;
    for (o, four) in (&mut quads).zip(&mut groups) {
        touch_lines(w, start.saturating_add((4 * row_bytes).max(PREFETCH_AHEAD)), 4 * row_bytes);
        start += 4 * row_bytes;
        let v = if prepare {
            // SAFETY: the first asc.len() slots were written above.
            let ready = prepared[..asc.len()].iter().map(|a| unsafe { a.assume_init() });
            quad::<D>(four, row_bytes, ready, asc)
        } else {
            quad::<D>(four, row_bytes, ac.chunks_exact(BLOCK).map(D::acts), asc)
        };
        store_quad(o, v);
    }
    for (o, row) in quads.into_remainder().iter_mut().zip(groups.remainder().chunks_exact(row_bytes)) {
        *o = D::tail(row, ac, asc);
    }
}

/// See `int8::matvec_q8`.
pub fn matvec_q8(w: &[u8], ac: &[i8], asc: &[f32], out: &mut [f32]) {
    count_simd();
    rows::<Q8>(w, ac, asc, out);
}

/// See `int8::matvec_q4`.
pub fn matvec_q4(w: &[u8], ac: &[i8], asc: &[f32], out: &mut [f32]) {
    count_simd();
    rows::<Q4>(w, ac, asc, out);
}

/// Tokens per group of a prefill tile: a quad of rows keeps one f32x4 accumulator per token of
/// the group (rows in lanes) across all blocks, so each block's weight codes are loaded and
/// widened once per group instead of once per token.
const GROUP: usize = 8;

/// Four rows (`rows`, whole stored rows) against the tokens of `group` (each one token's codes
/// [blocks * 32] and scales [blocks]): acc[t] = the rows' values for token t in lanes 0..4.
/// Block-major: per block b the four rows' codes are widened once, then every token of the
/// group runs the oracle's per-(row, token) step `acc + (s_w * s_a) * isum_b` in its lane, so
/// each (row, token) still accumulates its blocks in ascending order.
#[inline(always)]
fn quad_group<D: BlockDot>(rows: &[u8], row_bytes: usize, group: &[(&[i8], &[f32])], acc: &mut [v128]) {
    let (r01, r23) = rows.split_at(2 * row_bytes);
    let (r0, r1) = r01.split_at(row_bytes);
    let (r2, r3) = r23.split_at(row_bytes);
    let bb = D::BLOCK_BYTES;
    let blocks = r0.chunks_exact(bb).zip(r1.chunks_exact(bb)).zip(r2.chunks_exact(bb)).zip(r3.chunks_exact(bb));
    acc.iter_mut().for_each(|a| *a = f32x4_splat(0.0));
    let mut at = 0usize; // the block's first activation code
    for (b, (((b0, b1), b2), b3)) in blocks.enumerate() {
        let (w0, w1, w2, w3) = (D::weights(b0), D::weights(b1), D::weights(b2), D::weights(b3));
        let ws = f32x4(scale_of(b0), scale_of(b1), scale_of(b2), scale_of(b3));
        for (a_acc, (tc, ts)) in acc.iter_mut().zip(group) {
            let a = D::acts(&tc[at..at + BLOCK]);
            let isum =
                transpose_sum(D::partials(&w0, &a), D::partials(&w1, &a), D::partials(&w2, &a), D::partials(&w3, &a));
            // per lane: acc + (wscale * ascale) * isum, the oracle's three operations
            *a_acc = f32x4_add(*a_acc, f32x4_mul(f32x4_mul(ws, f32x4_splat(ts[b])), f32x4_convert_i32x4(isum)));
        }
        at += BLOCK;
    }
}

pub(super) fn tile<D: BlockDot>(
    w: &[u8],
    ac: &[i8],
    asc: &[f32],
    blocks: usize,
    emit: &mut dyn FnMut(usize, usize, f32),
) {
    if blocks == 0 {
        return;
    }
    if D::PREPARE && blocks <= PREPARED_BLOCKS {
        return tile_prepared::<D>(w, ac, asc, blocks, emit);
    }
    let row_bytes = blocks * D::BLOCK_BYTES;
    let groups = w.chunks_exact(4 * row_bytes);
    let rest = groups.remainder();
    let tokens = || ac.chunks_exact(blocks * BLOCK).zip(asc.chunks_exact(blocks));
    let mut acc = [f32x4_splat(0.0); GROUP];
    let mut group: [(&[i8], &[f32]); GROUP] = [(&[], &[]); GROUP];
    let mut start = 0usize;
    let mut r = 0;
    for four in groups {
        touch_lines(w, start.saturating_add((4 * row_bytes).max(PREFETCH_AHEAD)), 4 * row_bytes);
        start += 4 * row_bytes;
        let mut t0 = 0;
        let mut all = tokens();
        loop {
            let mut g = 0;
            for (slot, tok) in group.iter_mut().zip(&mut all) {
                *slot = tok;
                g += 1;
            }
            if g == 0 {
                break;
            }
            quad_group::<D>(four, row_bytes, &group[..g], &mut acc[..g]);
            for (t, v) in acc[..g].iter().enumerate() {
                emit(r, t0 + t, f32x4_extract_lane::<0>(*v));
                emit(r + 1, t0 + t, f32x4_extract_lane::<1>(*v));
                emit(r + 2, t0 + t, f32x4_extract_lane::<2>(*v));
                emit(r + 3, t0 + t, f32x4_extract_lane::<3>(*v));
            }
            t0 += g;
        }
        r += 4;
    }
    for row in rest.chunks_exact(row_bytes) {
        for (t, (tc, ts)) in tokens().enumerate() {
            emit(r, t, D::tail(row, tc, ts));
        }
        r += 1;
    }
}

/// Row quads per chunk of `tile_prepared`: each group's activations are prepared once per
/// chunk, and the chunk's weights (64 rows, at most 64 * 4608 bytes) stay in cache while every
/// group of the tile runs over them.
const CHUNK_QUADS: usize = 16;

/// `tile` for a block dot whose activations are worth preparing (`BlockDot::PREPARE`): per
/// chunk of row quads and per group of up to GROUP tokens, every token's blocks are prepared
/// once (block-major: slot b * GROUP + k for token k of the group), then each quad of the
/// chunk runs `quad_prepared`. The same values as `quad_group` (the prepared form is a pure
/// function of a token's codes; each (row, token) accumulates its blocks in ascending order).
fn tile_prepared<D: BlockDot>(
    w: &[u8],
    ac: &[i8],
    asc: &[f32],
    blocks: usize,
    emit: &mut dyn FnMut(usize, usize, f32),
) {
    let row_bytes = blocks * D::BLOCK_BYTES;
    let quad_bytes = 4 * row_bytes;
    let whole = w.len() / quad_bytes * quad_bytes;
    let token_codes = blocks * BLOCK;
    // zeroed, so every slot is a valid `D::A` (v128 values) even before it is written
    let mut prepared = [const { MaybeUninit::<D::A>::zeroed() }; GROUP * PREPARED_BLOCKS];
    let mut scales = [0.0f32; GROUP * PREPARED_BLOCKS];
    let mut acc = [f32x4_splat(0.0); GROUP];
    let mut r0 = 0usize; // the chunk's first row
    for chunk in w[..whole].chunks(CHUNK_QUADS * quad_bytes) {
        let groups = ac.chunks_exact(GROUP * token_codes).map(|c| (c, GROUP));
        let rest = ac.chunks_exact(GROUP * token_codes).remainder();
        let last = (!rest.is_empty()).then_some((rest, rest.len() / token_codes));
        for (gi, (codes, g)) in groups.chain(last).enumerate() {
            let gs = &asc[gi * GROUP * blocks..];
            for (k, tc) in codes.chunks_exact(token_codes).take(g).enumerate() {
                for (b, a) in tc.chunks_exact(BLOCK).enumerate() {
                    prepared[b * GROUP + k].write(D::acts(a));
                    scales[b * GROUP + k] = gs[k * blocks + b];
                }
            }
            // SAFETY: every slot is initialized (zeroed: D::A is made of v128, for which every
            // bit pattern is valid); slots b * GROUP + k, b < blocks, k < g were written just
            // above, and only those are used (quad_prepared zips each block's slots with acc[..g]).
            let ready = unsafe { &*(&prepared[..blocks * GROUP] as *const [MaybeUninit<D::A>] as *const [D::A]) };
            let mut r = r0;
            for four in chunk.chunks_exact(quad_bytes) {
                if gi == 0 {
                    touch_lines(w, (r * row_bytes).saturating_add(quad_bytes.max(PREFETCH_AHEAD)), quad_bytes);
                }
                quad_prepared::<D>(four, row_bytes, ready, &scales[..blocks * GROUP], &mut acc[..g]);
                for (t, v) in acc[..g].iter().enumerate() {
                    let t = gi * GROUP + t;
                    emit(r, t, f32x4_extract_lane::<0>(*v));
                    emit(r + 1, t, f32x4_extract_lane::<1>(*v));
                    emit(r + 2, t, f32x4_extract_lane::<2>(*v));
                    emit(r + 3, t, f32x4_extract_lane::<3>(*v));
                }
                r += 4;
            }
        }
        r0 += chunk.len() / row_bytes;
    }
    let tokens = || ac.chunks_exact(token_codes).zip(asc.chunks_exact(blocks));
    for row in w[whole..].chunks_exact(row_bytes) {
        for (t, (tc, ts)) in tokens().enumerate() {
            emit(r0, t, D::tail(row, tc, ts));
        }
        r0 += 1;
    }
}

/// `quad_group` over prepared activations: `ready[b * GROUP + k]` and `scales[b * GROUP + k]`
/// are token k's block b; acc.len() tokens of the group.
#[inline(always)]
fn quad_prepared<D: BlockDot>(rows: &[u8], row_bytes: usize, ready: &[D::A], scales: &[f32], acc: &mut [v128]) {
    let (r01, r23) = rows.split_at(2 * row_bytes);
    let (r0, r1) = r01.split_at(row_bytes);
    let (r2, r3) = r23.split_at(row_bytes);
    let bb = D::BLOCK_BYTES;
    let blocks = r0.chunks_exact(bb).zip(r1.chunks_exact(bb)).zip(r2.chunks_exact(bb)).zip(r3.chunks_exact(bb));
    acc.iter_mut().for_each(|a| *a = f32x4_splat(0.0));
    for ((((b0, b1), b2), b3), (acts, ss)) in blocks.zip(ready.chunks_exact(GROUP).zip(scales.chunks_exact(GROUP))) {
        let (w0, w1, w2, w3) = (D::weights(b0), D::weights(b1), D::weights(b2), D::weights(b3));
        let ws = f32x4(scale_of(b0), scale_of(b1), scale_of(b2), scale_of(b3));
        for ((a_acc, a), s) in acc.iter_mut().zip(acts).zip(ss) {
            let isum =
                transpose_sum(D::partials(&w0, a), D::partials(&w1, a), D::partials(&w2, a), D::partials(&w3, a));
            // per lane: acc + (wscale * ascale) * isum, the oracle's three operations
            *a_acc = f32x4_add(*a_acc, f32x4_mul(f32x4_mul(ws, f32x4_splat(*s)), f32x4_convert_i32x4(isum)));
        }
    }
}

/// See `int8::matmul_q8`.
pub fn matmul_q8(w: &[u8], ac: &[i8], asc: &[f32], blocks: usize, emit: &mut dyn FnMut(usize, usize, f32)) {
    count_simd();
    tile::<Q8>(w, ac, asc, blocks, emit);
}

/// See `int8::matmul_q4`.
pub fn matmul_q4(w: &[u8], ac: &[i8], asc: &[f32], blocks: usize, emit: &mut dyn FnMut(usize, usize, f32)) {
    count_simd();
    tile::<Q4>(w, ac, asc, blocks, emit);
}
