//! The integer tier's scalar oracle (CONTRACT.md §10): rounding ties, the quantizer's worked
//! examples, the header's tier, and tiles equal to one matvec per token for every tail.

use tinyrustlm_core::kernels::{self, int8, Acts, Matrix};
use tinyrustlm_core::model::{parse_header, Model, Tier};
use tinyrustlm_core::selftest::TINY_MODEL;
use tinyrustlm_core::testdata::Lcg;
use tinyrustlm_core::TrResult;

#[test]
fn rounding_is_half_away_from_zero() {
    let below_half = f32::from_bits(0.5f32.to_bits() - 1);
    let cases =
        [(0.5, 1), (-0.5, -1), (1.5, 2), (2.5, 3), (-2.5, -3), (126.5, 127), (below_half, 0), (0.0, 0), (-0.0, 0)];
    for (q, want) in cases {
        assert_eq!(int8::round_half_away(q), want, "{q}");
    }
}

fn quantized(x: &[f32]) -> Result<(Vec<i8>, Vec<f32>), TrResult> {
    let blocks = (x.len() + 31) / 32;
    let (mut c, mut s) = (vec![1i8; blocks * 32], vec![1.0f32; blocks]);
    kernels::quantize(x, &mut c, &mut s)?;
    Ok((c, s))
}

#[test]
fn the_contracts_worked_examples() {
    let (c, s) = quantized(&[127.0, -127.0, 63.5, -63.5, 0.5, 1.5, -0.5, 0.0]).unwrap();
    assert_eq!(&c[..8], &[127, -127, 64, -64, 1, 2, -1, 0]);
    assert_eq!(s, vec![1.0]);
    let (c, s) = quantized(&[1.0, 0.3]).unwrap();
    assert_eq!((&c[..3], s[0].to_bits()), (&[127i8, 38, 0][..], 0x3c01_0204));
    let (c, s) = quantized(&[0.0; 32]).unwrap();
    assert!(c.iter().all(|v| *v == 0) && s[0].to_bits() == 0);
    let tiny = f32::from_bits(1);
    let (c, s) = quantized(&[190.0 * tiny, tiny]).unwrap();
    assert_eq!((&c[..2], s[0].to_bits()), (&[127i8, 1][..], 1));
    let (_, s) = quantized(&[63.0 * tiny]).unwrap();
    assert_eq!(s[0].to_bits(), 0);
    let (c, _) = quantized(&[f32::MAX, -f32::MAX]).unwrap();
    assert_eq!(&c[..2], &[127, -127]);
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        assert_eq!(quantized(&[1.0, bad]), Err(TrResult::NumericalFailure));
    }
    // the integer dot: q8 block (scale 0.5, codes [2, -3]) . [1.0, 0.3]
    let mut w = 0.5f32.to_le_bytes().to_vec();
    w.extend([2u8, (-3i8) as u8]);
    w.extend([0u8; 30]);
    let (c, s) = quantized(&[1.0, 0.3]).unwrap();
    let mut out = [0.0f32];
    kernels::matvec_acts(Matrix::Q8(&w), 2, Acts::Int8 { codes: &c, scales: &s }, &mut out).unwrap();
    assert_eq!(out[0], 0.003_937_008f32 * 140.0);
    assert_eq!(out[0], 0.551_181_1);
}

#[test]
fn the_header_declares_the_tier() {
    assert_eq!(parse_header(TINY_MODEL).unwrap().tier, Tier::F32);
    let mut v2 = TINY_MODEL.to_vec();
    v2[8] = 2;
    assert_eq!(parse_header(&v2).unwrap().tier, Tier::Int8);
    // tiny stores layer 0's wo as f32: the integer tier refuses it
    assert_eq!(Model::load(v2).err(), Some(TrResult::UnsupportedQuantization));
    let mut v3 = TINY_MODEL.to_vec();
    v3[8] = 3;
    assert_eq!(parse_header(&v3).err(), Some(TrResult::UnsupportedFeature));
}

fn random_rows(rng: &mut Lcg, q8: bool, rows: usize, cols: usize) -> Vec<u8> {
    let blocks = (cols + 31) / 32;
    let mut w = Vec::new();
    for _ in 0..rows * blocks {
        w.extend((rng.unit(64) * 0.25 + 0.01).to_le_bytes());
        w.extend((0..if q8 { 32 } else { 16 }).map(|_| (rng.next() & 0xff) as u8));
    }
    w
}

#[test]
fn tiles_equal_one_matvec_per_token_for_every_tail() {
    let mut rng = Lcg::seeded(25);
    for q8 in [true, false] {
        for cols in 1..=70usize {
            let (rows, tokens) = (1 + cols % 9, 1 + cols % 13);
            let w = random_rows(&mut rng, q8, rows, cols);
            let m = if q8 { Matrix::Q8(&w) } else { Matrix::Q4(&w) };
            let blocks = (cols + 31) / 32;
            let (mut codes, mut scales) = (Vec::new(), Vec::new());
            for _ in 0..tokens {
                let (c, s) = quantized(&rng.vec(cols, 1 << 10)).unwrap();
                codes.extend(c);
                scales.extend(s);
            }
            let mut tiled = vec![f32::NAN; rows * tokens];
            let acts = Acts::Int8 { codes: &codes, scales: &scales };
            kernels::tile_rows_acts(m, cols, 0..rows, acts, &mut |r, t, v| tiled[t * rows + r] = v).unwrap();
            for t in 0..tokens {
                let one = Acts::Int8 {
                    codes: &codes[t * blocks * 32..(t + 1) * blocks * 32],
                    scales: &scales[t * blocks..(t + 1) * blocks],
                };
                let mut out = vec![0.0f32; rows];
                kernels::matvec_acts(m, cols, one, &mut out).unwrap();
                let bits: Vec<u32> = out.iter().map(|v| v.to_bits()).collect();
                let tbits: Vec<u32> = tiled[t * rows..(t + 1) * rows].iter().map(|v| v.to_bits()).collect();
                assert_eq!(bits, tbits, "q8 {q8} cols {cols} token {t}");
            }
        }
    }
    // f32 weights never meet integer activations
    let (c, s) = quantized(&[1.0; 3]).unwrap();
    let mut out = [0.0f32];
    let acts = Acts::Int8 { codes: &c, scales: &s };
    assert_eq!(kernels::matvec_acts(Matrix::F32(&[1.0; 3]), 3, acts, &mut out), Err(TrResult::InternalInvariant));
}
