//! Startup self-test: tiny embedded vectors (D <= 32) through the *active* kernels, checked
//! against independent f64 references (tolerance, so every lane can run it) or exact frozen
//! values (PRNG, sampler, tokenizer, end-to-end greedy tokens). Bounded: a few ms natively.

use alloc::vec::Vec;

use crate::kernels::{self, AttentionShape, Matrix};
use crate::model::Model;
use crate::pcg32::Pcg32;
use crate::quant::{BLOCK, Q4_BLOCK_BYTES, Q8_BLOCK_BYTES};
use crate::result::{TrResult, TrReturn};
use crate::sampler::{sample, SamplerConfig, SamplerWork};
use crate::session::{Session, SessionConfig};
use crate::testdata::Lcg;
use crate::tokenizer;

pub mod categories;

/// Self-test inputs are k/128 - 1: exact in f32.
const STEPS: u32 = 128;

/// `pack-model --preset tiny --seed 7` (a test keeps it equal to the packer's output).
pub const TINY_MODEL: &[u8] = include_bytes!("tiny.trlm");
/// Greedy tokens (repetition penalty 4, so the sequence varies) the scalar oracle produces
/// for TINY_PROMPT on TINY_MODEL: `tinyrustlm run --model tiny.trlm --prompt tiny
/// --max-tokens 8 --repetition-penalty 4`.
pub const TINY_PROMPT: &[u8] = b"tiny";
pub const TINY_PENALTY: f32 = 4.0;
pub const TINY_EXPECTED: [u32; 8] = [16, 37, 106, 53, 32, 235, 242, 204];

/// A self-test: its name and the check it runs.
pub type SelfTest = (&'static str, fn() -> TrReturn<()>);

/// (name, test): the one table of startup self-tests.
pub const TESTS: [SelfTest; 13] = [
    ("math.sqrt_exp", math_known_values),
    ("kernel.matvec_f32", matvec_f32),
    ("kernel.matvec_q8", matvec_q8),
    ("kernel.matvec_q4", matvec_q4),
    ("kernel.int8_exact", int8_exact),
    ("kernel.rmsnorm", rmsnorm),
    ("kernel.rope", rope),
    ("kernel.softmax", softmax),
    ("kernel.attention", attention),
    ("prng.pcg32", pcg32),
    ("sampler", sampler),
    ("tokenizer", tokenizer_bytes),
    ("e2e.tiny_greedy", e2e_tiny),
];

/// Runs every test, reporting each; returns Ok or SelfTestFailed (an error from a test that
/// is not a wrong answer, e.g. OutOfMemory, is reported as itself).
pub fn run(report: &mut dyn FnMut(&str, TrResult)) -> TrResult {
    let mut overall = TrResult::Ok;
    for (name, test) in TESTS {
        let result = TrResult::of(&test());
        report(name, result);
        if result != TrResult::Ok && overall == TrResult::Ok {
            overall = result;
        }
    }
    overall
}

fn check(ok: bool) -> TrReturn<()> {
    if ok {
        Ok(())
    } else {
        Err(TrResult::SelfTestFailed)
    }
}

/// |got - want| <= 1e-5 + 1e-4 |want| for every element (lane reorderings stay inside).
fn close(got: &[f32], want: &[f64]) -> TrReturn<()> {
    check(got.len() == want.len())?;
    for (g, w) in got.iter().zip(want) {
        let err = abs(*g as f64 - w);
        check(err <= 1e-5 + 1e-4 * abs(*w))?;
    }
    Ok(())
}

fn abs(v: f64) -> f64 {
    if v < 0.0 {
        -v
    } else {
        v
    }
}

fn math_known_values() -> TrReturn<()> {
    check(crate::math::sqrt_det(2.0).to_bits() == 0x3fb5_04f3)?;
    check(crate::math::sqrt_det(16.0) == 4.0)?;
    check(crate::math::exp_det(0.0) == 1.0)?;
    close(&[crate::math::exp_det(1.0), crate::math::exp_det(-3.5)], &[core::f64::consts::E, 0.030_197_383_422_318_5])
}

fn matvec_f32() -> TrReturn<()> {
    let (rows, cols) = (3, 19);
    let mut g = Lcg(1);
    let w = g.vec(rows * cols, STEPS);
    let x = g.vec(cols, STEPS);
    let mut out = [0.0f32; 3];
    kernels::matvec(Matrix::F32(&w), &x, &mut out)?;
    let want: Vec<f64> = (0..rows).map(|r| (0..cols).map(|c| w[r * cols + c] as f64 * x[c] as f64).sum()).collect();
    close(&out, &want)
}

/// Packs codes (already in the layout's range) into blocks with the given per-block scales.
fn pack_blocks(codes: &[i32], cols: usize, scales: &[f32], q4: bool) -> Vec<u8> {
    let blocks = (cols + BLOCK - 1) / BLOCK;
    let mut out = Vec::new();
    for (r, row) in codes.chunks(cols).enumerate() {
        for b in 0..blocks {
            out.extend_from_slice(&scales[r * blocks + b].to_le_bytes());
            let mut block = [0u8; BLOCK];
            for (j, c) in row[b * BLOCK..].iter().take(BLOCK).enumerate() {
                block[j] = if q4 { (*c + 8) as u8 } else { *c as i8 as u8 };
            }
            if q4 {
                out.extend((0..BLOCK / 2).map(|i| block[2 * i] | (block[2 * i + 1] << 4)));
            } else {
                out.extend_from_slice(&block);
            }
        }
    }
    out
}

fn quant_case(q4: bool) -> TrReturn<()> {
    // cols = 45: one full block and a 13-element tail, 3 rows.
    let (rows, cols) = (3, 45);
    let blocks = 2;
    let mut g = Lcg(if q4 { 3 } else { 2 });
    let codes: Vec<i32> =
        (0..rows * cols).map(|_| if q4 { (g.next() % 16) as i32 - 8 } else { (g.next() % 256) as i32 - 128 }).collect();
    let scales: Vec<f32> = (0..rows * blocks).map(|i| 0.0625 * (i as f32 + 1.0)).collect();
    let packed = pack_blocks(&codes, cols, &scales, q4);
    let want_len = rows * blocks * if q4 { Q4_BLOCK_BYTES } else { Q8_BLOCK_BYTES };
    check(packed.len() == want_len)?;
    let x = g.vec(cols, STEPS);
    let mut out = [0.0f32; 3];
    let m = if q4 { Matrix::Q4(&packed) } else { Matrix::Q8(&packed) };
    kernels::matvec(m, &x, &mut out)?;
    let want: Vec<f64> = (0..rows)
        .map(|r| {
            (0..cols).map(|c| scales[r * blocks + c / BLOCK] as f64 * codes[r * cols + c] as f64 * x[c] as f64).sum()
        })
        .collect();
    close(&out, &want)?;
    let mut row = [0.0f32; 45];
    kernels::dequant_row(m, 2, &mut row)?;
    let want_row: Vec<f64> =
        (0..cols).map(|c| scales[2 * blocks + c / BLOCK] as f64 * codes[2 * cols + c] as f64).collect();
    close(&row, &want_row)
}

fn matvec_q8() -> TrReturn<()> {
    quant_case(false)
}

fn matvec_q4() -> TrReturn<()> {
    quant_case(true)
}

/// One row of the integer tier by the oracle (`int8::row_q8` / `row_q4`).
type RowOracle = fn(&[u8], &[i8], &[f32]) -> f32;

/// The integer tier's active kernels (matvec and a 3-token tile) equal the oracle bit for bit
/// at the extreme codes (CONTRACT.md §10, §12): q8 -128, -127, 127, q4 -8 and 7, against
/// activation blocks all +127, all -127 and alternating with an all-zero tail; 5 rows (a group of
/// four and one more), 45 columns (a whole block and a 13-element tail).
fn int8_exact() -> TrReturn<()> {
    let (rows, cols, tokens) = (5, 45, 3);
    let blocks = 2;
    let xs: Vec<f32> = (0..tokens * cols)
        .map(|i| match (i / cols, i % cols) {
            (0, _) => 1.0,
            (1, _) => -1.0,
            (_, c) if c < BLOCK => [1.0, -1.0][c % 2],
            _ => 0.0,
        })
        .collect();
    let (mut codes, mut scales) = (alloc::vec![0i8; tokens * blocks * BLOCK], alloc::vec![0.0f32; tokens * blocks]);
    for t in 0..tokens {
        let (c, s) =
            (&mut codes[t * blocks * BLOCK..(t + 1) * blocks * BLOCK], &mut scales[t * blocks..(t + 1) * blocks]);
        kernels::quantize(&xs[t * cols..(t + 1) * cols], c, s)?;
    }
    let wscales: Vec<f32> = (0..rows * blocks).map(|i| 0.0625 * (i as f32 + 1.0)).collect();
    for q4 in [false, true] {
        let cycle: &[i32] = if q4 { &[-8, 7, 0, -1, 7] } else { &[-128, 127, -127, 0, -128, 1] };
        let wcodes: Vec<i32> = (0..rows * cols).map(|i| cycle[(i + i / cols) % cycle.len()]).collect();
        let packed = pack_blocks(&wcodes, cols, &wscales, q4);
        let (m, row_of): (Matrix, RowOracle) = if q4 {
            (Matrix::Q4(&packed), kernels::int8::row_q4)
        } else {
            (Matrix::Q8(&packed), kernels::int8::row_q8)
        };
        let row_bytes = packed.len() / rows;
        let token =
            |t: usize| (&codes[t * blocks * BLOCK..(t + 1) * blocks * BLOCK], &scales[t * blocks..(t + 1) * blocks]);
        let want =
            |r: usize, t: usize| row_of(&packed[r * row_bytes..(r + 1) * row_bytes], token(t).0, token(t).1).to_bits();
        let mut out = [0.0f32; 5];
        for t in 0..tokens {
            let (c, s) = token(t);
            kernels::matvec_acts(m, cols, kernels::Acts::Int8 { codes: c, scales: s }, &mut out)?;
            for (r, v) in out.iter().enumerate() {
                check(v.to_bits() == want(r, t))?;
            }
        }
        let mut same = true;
        let tile = kernels::Acts::Int8 { codes: &codes, scales: &scales };
        kernels::tile_rows_acts(m, cols, 0..rows, tile, &mut |r, t, v| same &= v.to_bits() == want(r, t))?;
        check(same)?;
    }
    Ok(())
}

fn rmsnorm() -> TrReturn<()> {
    let mut g = Lcg(4);
    let x = g.vec(32, STEPS);
    let w = g.vec(32, STEPS);
    let mut out = [0.0f32; 32];
    kernels::rmsnorm(&x, &w, 1e-5, &mut out)?;
    let ms: f64 = x.iter().map(|v| (*v as f64) * (*v as f64)).sum::<f64>() / 32.0;
    let inv = 1.0 / libm_free_sqrt(ms + 1e-5);
    let want: Vec<f64> = x.iter().zip(&w).map(|(a, b)| *a as f64 * inv * *b as f64).collect();
    close(&out, &want)
}

/// f64 sqrt by Newton iteration (the reference side must not use the code under test).
fn libm_free_sqrt(v: f64) -> f64 {
    let mut r = if v > 1.0 { v } else { 1.0 };
    for _ in 0..60 {
        r = 0.5 * (r + v / r);
    }
    r
}

fn rope() -> TrReturn<()> {
    // cos 0 / sin 1 rotates by 90 degrees exactly; cos 1 / sin 0 is the identity.
    let mut v = [1.0f32, 2.0, 3.0, 4.0];
    kernels::rope(&mut v, &[0.0, 1.0], &[1.0, 0.0])?;
    check(v == [-2.0, 1.0, 3.0, 4.0])?;
    let mut w = [0.5f32, -0.25];
    kernels::rope(&mut w, &[0.6], &[0.8])?;
    close(&w, &[0.5, 0.25])
}

fn softmax() -> TrReturn<()> {
    let mut one = [42.0f32];
    kernels::softmax(&mut one)?;
    check(one == [1.0])?;
    check(kernels::softmax(&mut []) == Err(TrResult::InvalidArgument))?;
    check(kernels::softmax(&mut [0.0, f32::NAN]) == Err(TrResult::NumericalFailure))?;
    let mut inf = [f32::INFINITY, 1.0, f32::INFINITY];
    kernels::softmax(&mut inf)?;
    check(inf == [0.5, 0.0, 0.5])?;
    let mut s = [1.0f32, 2.0, 3.0, -1.0];
    kernels::softmax(&mut s)?;
    let e = [(-2.0f64), -1.0, 0.0, -4.0].map(exp_series);
    let z: f64 = e.iter().sum();
    close(&s, &e.map(|v| v / z))
}

/// f64 exp by Taylor series around 0 for |x| <= 4 (reference side).
fn exp_series(x: f64) -> f64 {
    let (mut term, mut sum) = (1.0f64, 1.0f64);
    for n in 1..40 {
        term = term * x / n as f64;
        sum += term;
    }
    sum
}

fn attention() -> TrReturn<()> {
    // 4 query heads share 2 kv heads (GQA), head_dim 4, 3 cached positions.
    let shape = AttentionShape { n_heads: 4, n_kv_heads: 2, head_dim: 4 };
    let (n_pos, kv_dim) = (3, 8);
    let mut g = Lcg(5);
    let q = g.vec(16, STEPS);
    let keys = g.vec(n_pos * kv_dim, STEPS);
    let values = g.vec(n_pos * kv_dim, STEPS);
    let mut scores = [0.0f32; 3];
    let mut out = [0.0f32; 16];
    kernels::attention(shape, &q, &keys, &values, &mut scores, &mut out)?;
    let mut want = [0.0f64; 16];
    for h in 0..4 {
        let kv = (h / 2) * 4;
        let s: Vec<f64> = (0..n_pos)
            .map(|t| (0..4).map(|i| q[h * 4 + i] as f64 * keys[t * kv_dim + kv + i] as f64).sum::<f64>() / 2.0)
            .collect();
        let m = s.iter().cloned().fold(f64::MIN, f64::max);
        let e: Vec<f64> = s.iter().map(|v| exp_series(v - m)).collect();
        let z: f64 = e.iter().sum();
        for i in 0..4 {
            want[h * 4 + i] = (0..n_pos).map(|t| e[t] / z * values[t * kv_dim + kv + i] as f64).sum();
        }
    }
    close(&out, &want)
}

fn pcg32() -> TrReturn<()> {
    let mut rng = Pcg32::new(42, 54);
    check(rng.next_u32() == 0xa15c_02b7 && rng.next_u32() == 0x7b47_f409)?;
    check(rng.next_f32() == (0xba1d_3330u32 >> 8) as f32 / 16_777_216.0)
}

fn sampler() -> TrReturn<()> {
    let mut work = SamplerWork::new(8)?;
    let mut rng = Pcg32::new(1, 0);
    let greedy = SamplerConfig::GREEDY;
    // all ties -> lowest id; NaN never wins; all masked -> NumericalFailure.
    check(sample(&[1.0; 4], &[], &[], &greedy, &mut rng, &mut work) == Ok(0))?;
    check(sample(&[f32::NAN, 0.5, 2.0, 2.0], &[], &[], &greedy, &mut rng, &mut work) == Ok(2))?;
    let masked = sample(&[1.0, 2.0], &[0b11], &[], &greedy, &mut rng, &mut work);
    check(masked == Err(TrResult::NumericalFailure))?;
    // top-k 1 keeps only the argmax whatever the draw; the draw advances the PRNG once.
    let top1 = SamplerConfig { temperature: 0.7, top_k: 1, top_p: 1.0, repetition_penalty: 1.0 };
    let before = rng;
    check(sample(&[0.1, 3.0, 2.9, -1.0], &[], &[], &top1, &mut rng, &mut work) == Ok(1))?;
    let mut expect = before;
    expect.next_u32();
    check(rng == expect)?;
    // repetition penalty pushes token 1 (3.0 / 4 = 0.75) below token 2.
    let rep = SamplerConfig { repetition_penalty: 4.0, ..greedy };
    check(sample(&[0.1, 3.0, 2.9, -1.0], &[], &[1, 1], &rep, &mut rng, &mut work) == Ok(2))
}

fn tokenizer_bytes() -> TrReturn<()> {
    let mut ids = Vec::new();
    tokenizer::encode(b"Hi", &mut ids);
    check(ids == [tokenizer::BOS, 72, 105])?;
    check(tokenizer::decode(105) == Some(b'i') && tokenizer::decode(tokenizer::EOS).is_none())
}

/// Greedy tokens from the embedded tiny model (stops early at EOS).
pub fn tiny_greedy(model: &Model) -> TrReturn<Vec<u32>> {
    let mut config = SessionConfig::greedy(0);
    config.sampler.repetition_penalty = TINY_PENALTY;
    let mut session = Session::new(model, config)?;
    let mut prompt = Vec::new();
    tokenizer::encode(TINY_PROMPT, &mut prompt);
    session.prefill(model, &prompt)?;
    let mut out = Vec::new();
    for _ in 0..TINY_EXPECTED.len() {
        let step = session.decode(model)?;
        out.push(step.token);
        if step.done {
            break;
        }
    }
    Ok(out)
}

fn e2e_tiny() -> TrReturn<()> {
    let model = Model::load(TINY_MODEL.to_vec())?;
    let tokens = tiny_greedy(&model)?;
    check(tokens[..] == TINY_EXPECTED[..])
}
