//! Kernel contracts: every q4/q8 tail length, exact scalar evaluation order, softmax cases,
//! GQA vs expanded MHA, shape checks, path counters.

use tinyrustlm_core::kernels::{self, AttentionShape, Matrix};
use tinyrustlm_core::math::sqrt_det;
use tinyrustlm_core::quant::{BLOCK, Q4_BLOCK_BYTES, Q8_BLOCK_BYTES};
use tinyrustlm_core::testdata::Lcg;
use tinyrustlm_core::TrResult;

/// Inputs are k/512 - 1: exact in f32.
const STEPS: u32 = 512;

/// (packed bytes, dequantized weights) for a [rows, cols] matrix.
fn quantized(rows: usize, cols: usize, q4: bool, g: &mut Lcg) -> (Vec<u8>, Vec<f32>) {
    let blocks = (cols + BLOCK - 1) / BLOCK;
    let (mut packed, mut weights) = (Vec::new(), Vec::new());
    for _ in 0..rows {
        for b in 0..blocks {
            let scale = 1.0 / (1 << (g.next() % 6)) as f32;
            packed.extend_from_slice(&scale.to_le_bytes());
            let n = (cols - b * BLOCK).min(BLOCK);
            let mut codes = [0i32; BLOCK];
            for c in codes.iter_mut().take(n) {
                *c = if q4 { (g.next() % 16) as i32 - 8 } else { (g.next() % 256) as i32 - 128 };
                weights.push(scale * *c as f32);
            }
            if q4 {
                // padding nibbles are stored as 0 (code -8): must never be read
                let nib = |j: usize| if j < n { (codes[j] + 8) as u8 } else { 0 };
                packed.extend((0..BLOCK / 2).map(|i| nib(2 * i) | (nib(2 * i + 1) << 4)));
            } else {
                // padding codes are set to a large value: reading one would change the result
                packed.extend((0..BLOCK).map(|j| if j < n { codes[j] as i8 as u8 } else { 127 }));
            }
        }
    }
    (packed, weights)
}

/// The contract's evaluation order, written out independently: per block s = s + c*x, then
/// acc = acc + scale * s.
fn contract_dot(weights: &[f32], scales_per_block: &[f32], x: &[f32]) -> f32 {
    let mut acc = 0.0f32;
    for (b, xs) in x.chunks(BLOCK).enumerate() {
        let mut s = 0.0f32;
        for (j, xv) in xs.iter().enumerate() {
            let code = weights[b * BLOCK + j] / scales_per_block[b];
            s = s + code * xv;
        }
        acc = acc + scales_per_block[b] * s;
    }
    acc
}

#[test]
fn every_quant_tail_length_matches_the_contract_bit_for_bit() {
    for q4 in [false, true] {
        for cols in 1..=2 * BLOCK {
            let rows = 3;
            let mut g = Lcg(cols as u32 + if q4 { 1000 } else { 0 });
            let (packed, weights) = quantized(rows, cols, q4, &mut g);
            let block_bytes = if q4 { Q4_BLOCK_BYTES } else { Q8_BLOCK_BYTES };
            assert_eq!(packed.len(), rows * ((cols + 31) / 32) * block_bytes);
            let x: Vec<f32> = (0..cols).map(|_| g.unit(STEPS)).collect();
            let m = if q4 { Matrix::Q4(&packed) } else { Matrix::Q8(&packed) };
            let mut out = vec![0.0f32; rows];
            kernels::matvec(m, &x, &mut out).unwrap();
            let blocks = (cols + 31) / 32;
            for r in 0..rows {
                let scales: Vec<f32> = (0..blocks)
                    .map(|b| {
                        let at = (r * blocks + b) * block_bytes;
                        f32::from_le_bytes([packed[at], packed[at + 1], packed[at + 2], packed[at + 3]])
                    })
                    .collect();
                let want = contract_dot(&weights[r * cols..(r + 1) * cols], &scales, &x);
                assert_eq!(out[r].to_bits(), want.to_bits(), "q4={q4} cols={cols} row={r}");
                let mut row = vec![0.0f32; cols];
                kernels::dequant_row(m, r, &mut row).unwrap();
                assert_eq!(row, weights[r * cols..(r + 1) * cols], "dequant q4={q4} cols={cols}");
            }
        }
    }
}

#[test]
fn matvec_f32_is_left_to_right() {
    // 1e8 + 1 - 1e8 depends on order: left-to-right gives 0 (1e8 + 1 rounds to 1e8).
    let w = [1e8f32, 1.0, -1e8];
    let mut out = [9.0f32];
    kernels::matvec(Matrix::F32(&w), &[1.0, 1.0, 1.0], &mut out).unwrap();
    assert_eq!(out[0], 0.0);
}

#[test]
fn shape_mismatches_are_invariant_errors_not_panics() {
    let mut out = [0.0f32; 2];
    assert_eq!(kernels::matvec(Matrix::F32(&[1.0; 5]), &[1.0; 3], &mut out), Err(TrResult::InternalInvariant));
    assert_eq!(kernels::matvec(Matrix::Q8(&[0; 35]), &[1.0; 3], &mut out[..1]), Err(TrResult::InternalInvariant));
    assert_eq!(kernels::rmsnorm(&[], &[], 1e-5, &mut []), Err(TrResult::InternalInvariant));
    assert_eq!(kernels::rope(&mut [0.0; 3], &[1.0], &[0.0]), Err(TrResult::InternalInvariant));
    assert_eq!(kernels::dequant_row(Matrix::F32(&[1.0; 4]), 2, &mut out), Err(TrResult::InternalInvariant));
    assert_eq!(kernels::dequant_row(Matrix::F32(&[1.0; 4]), usize::MAX, &mut out), Err(TrResult::IntegerOverflow));
    let shape = AttentionShape { n_heads: 3, n_kv_heads: 2, head_dim: 2 };
    let r = kernels::attention(shape, &[0.0; 6], &[0.0; 4], &[0.0; 4], &mut [0.0; 1], &mut [0.0; 6]);
    assert_eq!(r, Err(TrResult::InternalInvariant));
}

#[test]
fn rmsnorm_follows_the_formula() {
    let mut out = [0.0f32; 2];
    kernels::rmsnorm(&[3.0, 4.0], &[1.0, 2.0], 0.0, &mut out).unwrap();
    let inv = 1.0 / sqrt_det(12.5);
    assert_eq!(out, [3.0 * inv, (4.0 * inv) * 2.0]);
}

#[test]
fn softmax_exceptional_cases() {
    assert_eq!(kernels::softmax(&mut []), Err(TrResult::InvalidArgument));
    let mut one = [f32::NEG_INFINITY];
    kernels::softmax(&mut one).unwrap();
    assert_eq!(one, [1.0]);
    assert_eq!(kernels::softmax(&mut [f32::NAN]), Err(TrResult::NumericalFailure));
    assert_eq!(kernels::softmax(&mut [1.0, f32::NAN, 2.0]), Err(TrResult::NumericalFailure));
    assert_eq!(kernels::softmax(&mut [f32::NEG_INFINITY; 3]), Err(TrResult::NumericalFailure));
    let mut infs = [f32::INFINITY, 0.0, f32::INFINITY, f32::INFINITY];
    kernels::softmax(&mut infs).unwrap();
    assert_eq!(infs, [1.0 / 3.0, 0.0, 1.0 / 3.0, 1.0 / 3.0]);
    let mut equal = [5.0f32; 4];
    kernels::softmax(&mut equal).unwrap();
    assert_eq!(equal, [0.25; 4]);
    let mut wide = [0.0f32, -200.0];
    kernels::softmax(&mut wide).unwrap();
    assert_eq!(wide, [1.0, 0.0]);
}

#[test]
fn gqa_equals_mha_with_repeated_kv_heads() {
    let mut g = Lcg(7);
    let (n_pos, head_dim) = (5, 4);
    let q: Vec<f32> = (0..6 * head_dim).map(|_| g.unit(STEPS)).collect();
    let keys: Vec<f32> = (0..n_pos * 2 * head_dim).map(|_| g.unit(STEPS)).collect();
    let values: Vec<f32> = (0..n_pos * 2 * head_dim).map(|_| g.unit(STEPS)).collect();
    let expand = |kv: &[f32]| -> Vec<f32> {
        let mut out = Vec::new();
        for t in 0..n_pos {
            for h in 0..6 {
                let kvh = h / 3;
                out.extend_from_slice(&kv[(t * 2 + kvh) * head_dim..(t * 2 + kvh + 1) * head_dim]);
            }
        }
        out
    };
    let mut gqa = vec![0.0f32; 6 * head_dim];
    let mut mha = vec![0.0f32; 6 * head_dim];
    let mut scores = vec![0.0f32; n_pos];
    kernels::attention(
        AttentionShape { n_heads: 6, n_kv_heads: 2, head_dim },
        &q,
        &keys,
        &values,
        &mut scores,
        &mut gqa,
    )
    .unwrap();
    let (k6, v6) = (expand(&keys), expand(&values));
    kernels::attention(AttentionShape { n_heads: 6, n_kv_heads: 6, head_dim }, &q, &k6, &v6, &mut scores, &mut mha)
        .unwrap();
    assert_eq!(gqa, mha);
}

#[test]
fn attention_over_one_position_returns_its_value() {
    let v = [0.5f32, -2.0];
    let mut out = [0.0f32; 2];
    kernels::attention(
        AttentionShape { n_heads: 1, n_kv_heads: 1, head_dim: 2 },
        &[1.0, 1.0],
        &[3.0, 3.0],
        &v,
        &mut [0.0],
        &mut out,
    )
    .unwrap();
    assert_eq!(out, v);
}

#[test]
fn path_counters_count_scalar_calls() {
    let (before, simd_before) = kernels::path_counters();
    kernels::add_assign(&mut [1.0], &[2.0]).unwrap();
    kernels::silu_mul(&mut [1.0], &[2.0]).unwrap();
    let (after, simd_after) = kernels::path_counters();
    assert!(after >= before + 2);
    assert_eq!(simd_after, simd_before);
}

/// `kernels::tile_rows` (the prefill tile kernels) equals one `matvec` per token bit for bit:
/// f32, q8 and q4, every tail length 1..64 and longer rows, tiles of 1..9 tokens, rows split
/// as a worker partition would split them.
#[test]
fn tile_rows_equal_matvec_per_token_for_every_tail() {
    let mut g = Lcg(99);
    let rows = 5;
    for layout in 0..3 {
        for cols in (1..=64).chain([95, 128, 1024]) {
            // q8 packing unless q4; f32 takes the dequantized weights
            let (packed, dense) = quantized(rows, cols, layout == 2, &mut g);
            let m = match layout {
                0 => Matrix::F32(&dense),
                1 => Matrix::Q8(&packed),
                _ => Matrix::Q4(&packed),
            };
            for tokens in 1..=9 {
                // 1000 steps: inexact sums, so any change of order would show
                let xs: Vec<f32> = (0..tokens * cols).map(|_| g.unit(1000)).collect();
                let mut tiled = vec![0.0f32; rows * tokens];
                for part in [0..rows / 2, rows / 2..rows] {
                    let r0 = part.start;
                    kernels::tile_rows(m, cols, part, &xs, &mut |r, t, v| tiled[t * rows + r0 + r] = v).unwrap();
                }
                for t in 0..tokens {
                    let mut out = vec![0.0f32; rows];
                    kernels::matvec(m, &xs[t * cols..(t + 1) * cols], &mut out).unwrap();
                    let got: Vec<u32> = tiled[t * rows..(t + 1) * rows].iter().map(|v| v.to_bits()).collect();
                    let want: Vec<u32> = out.iter().map(|v| v.to_bits()).collect();
                    assert_eq!(got, want, "layout {layout} cols {cols} tokens {tokens} token {t}");
                }
            }
        }
    }
}
