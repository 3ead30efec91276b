//! The integer tier's relaxed-SIMD kernels (CONTRACT.md §12), bit-identical to `int8.rs` by
//! construction: the SIMD128 set's row and tile loops (`simd128_int.rs`) with a block dot
//! that runs on ONE relaxed instruction, `i32x4.relaxed_dot_i8x16_i7x16_add_s`
//! (`i32x4_relaxed_dot_i8x16_i7x16_add(a, b, c)`: per i32 lane, c plus the four products of
//! the signed bytes of `a` with the bytes of `b`).
//!
//! The instruction is deterministic only while every byte of `b` lies in [0, 127]: a `b` byte
//! with its top bit set may be read as signed or unsigned (and the `a` byte beside it too), and
//! an i16 pair sum may saturate or wrap. So `b` is always a 7-bit value here, and every pair
//! sum stays inside i16 (CONTRACT.md §12 proves both; tests/crates/runtime/int8ref.py models
//! every allowed semantics):
//!
//! - q8 (weight codes w in [-128, 127], activation codes x in [-127, 127], never -128): `b` is
//!   |x| (in [0, 127]) and `a` is w with the sign of x moved onto it as a ones' complement,
//!   `w ^ s` with s = 0xff where x < 0 (= -w - 1, which never overflows, unlike -w at -128).
//!   Then (w ^ s) * |x| = w * x - [x < 0] * |x|, so isum = sum((w ^ s) * |x|) + sum_{x<0} |x|:
//!   the correction depends on the token alone and starts the accumulator.
//! - q4 (nibbles n in [0, 15], codes n - 8): `b` is the nibble itself and `a` the activation
//!   code: isum = sum(x * n) - 8 * sum(x). The activations are split into even and odd
//!   elements to meet the low and high nibbles of the packed bytes as they are stored.
//!
//! Products lie in [-16256, 16129] (q8) and [-1905, 1905] (q4), pair sums in [-32512, 32258]:
//! no saturation, no wrap, whatever the engine chose. The f32 work per block and row is the
//! oracle's (`simd128_int.rs`), and the f32 tier uses no relaxed instruction at all.

use core::arch::wasm32::*;

use super::simd128::load16;
use super::simd128_int::{load16_i8, rows, tile, BlockDot};
use super::{count_relaxed, count_simd, int8};
use crate::quant::{Q4_BLOCK_BYTES, Q8_BLOCK_BYTES};

// The tier's f32 reductions are the SIMD128 set's own lane-order kernels (no relaxed op), and
// its activation quantizer the SIMD128 integer set's.
pub use super::simd128::{attention_head, rmsnorm};
pub use super::simd128_int::quantize;

/// THE relaxed instruction of this set: per i32 lane k, c_k + sum_{j<4} a_{4k+j} * b_{4k+j}
/// (a signed; b must be in [0, 127], see the module comment).
#[inline(always)]
fn dot_add(a: v128, b: v128, c: v128) -> v128 {
    i32x4_relaxed_dot_i8x16_i7x16_add(a, b, c)
}

#[derive(Clone, Copy)]
struct Q8;
#[derive(Clone, Copy)]
struct Q4;

/// One token's q8 block: |x| (two i8x16, in [0, 127]), the sign masks (0xff where x < 0) and
/// the accumulator start whose lanes sum to sum_{x<0} |x|.
#[derive(Clone, Copy)]
struct SignMoved {
    mag: [v128; 2],
    sign: [v128; 2],
    start: v128,
}

impl BlockDot for Q8 {
    const BLOCK_BYTES: usize = Q8_BLOCK_BYTES;
    const PREPARE: bool = true;
    type W = [v128; 2];
    type A = SignMoved;
    #[inline(always)]
    fn weights(block: &[u8]) -> [v128; 2] {
        [load16(block, 4), load16(block, 20)]
    }
    #[inline(always)]
    fn acts(codes: &[i8]) -> SignMoved {
        let x = [load16_i8(codes, 0), load16_i8(codes, 16)];
        let mag = [i8x16_abs(x[0]), i8x16_abs(x[1])]; // x != -128: in [0, 127]
        let zero = i8x16_splat(0);
        let sign = [i8x16_lt(x[0], zero), i8x16_lt(x[1], zero)]; // -1 where x < 0, else 0
                                                                 // lanes of sign * |x| sum to -sum_{x<0} |x| (a in {-1, 0}, b in [0, 127]: exact)
        let negative = dot_add(sign[1], mag[1], dot_add(sign[0], mag[0], i32x4_splat(0)));
        SignMoved { mag, sign, start: i32x4_neg(negative) }
    }
    #[inline(always)]
    fn partials(w: &[v128; 2], a: &SignMoved) -> v128 {
        let t = dot_add(v128_xor(w[0], a.sign[0]), a.mag[0], a.start);
        dot_add(v128_xor(w[1], a.sign[1]), a.mag[1], t)
    }
    fn tail(row: &[u8], ac: &[i8], asc: &[f32]) -> f32 {
        int8::row_q8(row, ac, asc)
    }
}

/// One token's q4 block: its even and odd elements (each i8x16, meeting the low and high
/// nibbles of the 16 packed bytes), and the accumulator start whose lanes sum to -8 * sum(x).
#[derive(Clone, Copy)]
struct Split {
    even: v128,
    odd: v128,
    start: v128,
}

impl BlockDot for Q4 {
    const BLOCK_BYTES: usize = Q4_BLOCK_BYTES;
    const PREPARE: bool = true;
    type W = [v128; 2];
    type A = Split;
    /// [low nibbles (elements 0, 2, ..., 30), high nibbles (1, 3, ..., 31)], each in [0, 15].
    #[inline(always)]
    fn weights(block: &[u8]) -> [v128; 2] {
        let packed = load16(block, 4);
        [v128_and(packed, u8x16_splat(0x0f)), u8x16_shr(packed, 4)]
    }
    #[inline(always)]
    fn acts(codes: &[i8]) -> Split {
        let (x0, x1) = (load16_i8(codes, 0), load16_i8(codes, 16));
        let even = i8x16_shuffle::<0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30>(x0, x1);
        let odd = i8x16_shuffle::<1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31>(x0, x1);
        // lanes of x * 8 sum to 8 * sum(x) (b = 8: exact)
        let eight = i8x16_splat(8);
        let sum8 = dot_add(odd, eight, dot_add(even, eight, i32x4_splat(0)));
        Split { even, odd, start: i32x4_neg(sum8) }
    }
    #[inline(always)]
    fn partials(w: &[v128; 2], a: &Split) -> v128 {
        dot_add(a.odd, w[1], dot_add(a.even, w[0], a.start))
    }
    fn tail(row: &[u8], ac: &[i8], asc: &[f32]) -> f32 {
        int8::row_q4(row, ac, asc)
    }
}

/// See `int8::matvec_q8`.
pub fn matvec_q8(w: &[u8], ac: &[i8], asc: &[f32], out: &mut [f32]) {
    count_simd();
    count_relaxed();
    rows::<Q8>(w, ac, asc, out);
}

/// See `int8::matvec_q4`.
pub fn matvec_q4(w: &[u8], ac: &[i8], asc: &[f32], out: &mut [f32]) {
    count_simd();
    count_relaxed();
    rows::<Q4>(w, ac, asc, out);
}

/// See `int8::matmul_q8`.
pub fn matmul_q8(w: &[u8], ac: &[i8], asc: &[f32], blocks: usize, emit: &mut dyn FnMut(usize, usize, f32)) {
    count_simd();
    count_relaxed();
    tile::<Q8>(w, ac, asc, blocks, emit);
}

/// See `int8::matmul_q4`.
pub fn matmul_q4(w: &[u8], ac: &[i8], asc: &[f32], blocks: usize, emit: &mut dyn FnMut(usize, usize, f32)) {
    count_simd();
    count_relaxed();
    tile::<Q4>(w, ac, asc, blocks, emit);
}
