//! `golden`: THE command that regenerates tests/golden/ from the scalar oracle.
//! Writes one JSON list of `tinyrustlm.golden-vector.v1` records per operator (schema:
//! verify/formats/golden.py). Inputs come from a fixed LCG per case, so reruns are identical
//! apart from `provenance`.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use tinyrustlm_core::kernels::{self, Acts, AttentionShape, Matrix};
use tinyrustlm_core::math::exp_det;
use tinyrustlm_core::pcg32::Pcg32;
use tinyrustlm_core::quant::BLOCK;
use tinyrustlm_core::sampler::{sample, SamplerConfig, SamplerWork};
use tinyrustlm_core::session::SessionConfig;
use tinyrustlm_core::testdata::Lcg;
use tinyrustlm_core::{TrResult, RUNTIME_SEMANTICS};

use crate::args::Args;
use crate::error::{outln, CliError, EXIT_OK};
use crate::generate::generate;
use crate::model_file::read_model;
use crate::{json, sha256};

/// Case data are k/256 - 1: exact in f32.
const STEPS: u32 = 256;

pub const VALUED: &[&str] = &["out", "small-model", "int8-model", "source-revision", "generated-utc"];
pub const ORACLE: &str = "scalar-rust-v1";
pub const COMMAND: &str = "tinyrustlm golden --out tests/golden --small-model MODEL \
     --source-revision REV --generated-utc TIME  (MODEL = tinyrustlm-release pack-model --preset small --seed 7)";
pub const SMALL_MODEL_FIXTURE: &str = "tinyrustlm-release pack-model --preset small --seed 7";
pub const INT8_MODEL_FIXTURE: &str = "tinyrustlm-release pack-model --preset small-int8 --seed 7";

enum Input {
    F32(Vec<f32>),
    U32(Vec<u32>),
    Bytes(Vec<u8>),
    Fixture(String, &'static str),
}

enum Expected {
    F32(Vec<f32>),
    U32(Vec<u32>),
    Code(TrResult),
}

struct Record {
    id: String,
    operator: &'static str,
    layout: Option<&'static str>,
    shape: Vec<(&'static str, u64)>,
    params: Vec<(&'static str, String)>,
    inputs: Vec<(&'static str, Input)>,
    expected: Expected,
}

struct Provenance {
    source_revision: String,
    generated_utc: String,
}

impl Record {
    fn new(id: String, operator: &'static str, expected: Expected) -> Record {
        Record { id, operator, layout: None, shape: Vec::new(), params: Vec::new(), inputs: Vec::new(), expected }
    }

    fn input_sha256(&self) -> String {
        let mut canonical = Vec::new();
        for (name, input) in &self.inputs {
            canonical.extend_from_slice(name.as_bytes());
            canonical.push(0);
            match input {
                Input::F32(v) => v.iter().for_each(|x| canonical.extend_from_slice(&x.to_bits().to_le_bytes())),
                Input::U32(v) => v.iter().for_each(|x| canonical.extend_from_slice(&x.to_le_bytes())),
                Input::Bytes(b) => canonical.extend_from_slice(b),
                Input::Fixture(sha, _) => canonical.extend_from_slice(sha.as_bytes()),
            }
        }
        sha256::hex(&canonical)
    }

    fn to_json(&self, p: &Provenance) -> String {
        let inputs: Vec<(&str, String)> = self
            .inputs
            .iter()
            .map(|(name, input)| {
                let v = match input {
                    Input::F32(v) => json::object(
                        &[("kind", json::string("f32_bits")), ("values", json::list(v, |x| json::bits(*x)))],
                        false,
                    ),
                    Input::U32(v) => json::object(
                        &[("kind", json::string("u32")), ("values", json::list(v, |x| x.to_string()))],
                        false,
                    ),
                    Input::Bytes(b) => {
                        let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
                        json::object(&[("kind", json::string("bytes_hex")), ("hex", json::string(&hex))], false)
                    }
                    Input::Fixture(sha, by) => json::object(
                        &[
                            ("kind", json::string("fixture")),
                            ("sha256", json::string(sha)),
                            ("produced_by", json::string(by)),
                        ],
                        false,
                    ),
                };
                (*name, v)
            })
            .collect();
        let expected = match &self.expected {
            Expected::F32(v) => json::object(
                &[("kind", json::string("f32_bits")), ("values", json::list(v, |x| json::bits(*x)))],
                false,
            ),
            Expected::U32(v) => {
                json::object(&[("kind", json::string("u32")), ("values", json::list(v, |x| x.to_string()))], false)
            }
            Expected::Code(c) => json::object(
                &[
                    ("kind", json::string("result_code")),
                    ("code", c.code().to_string()),
                    ("name", json::string(c.name())),
                ],
                false,
            ),
        };
        let shape: Vec<(&str, String)> = self.shape.iter().map(|(k, v)| (*k, v.to_string())).collect();
        let params: Vec<(&str, String)> = self.params.iter().map(|(k, v)| (*k, v.clone())).collect();
        let provenance = json::object(
            &[
                ("oracle", json::string(ORACLE)),
                ("source_revision", json::string(&p.source_revision)),
                ("generated_utc", json::string(&p.generated_utc)),
                ("command", json::string(COMMAND)),
            ],
            false,
        );
        let fields = [
            ("schema", json::string("tinyrustlm.golden-vector.v1")),
            ("id", json::string(&self.id)),
            ("runtime_semantics", RUNTIME_SEMANTICS.to_string()),
            ("operator", json::string(self.operator)),
            ("layout", self.layout.map_or("null".to_string(), json::string)),
            ("shape", json::object(&shape, false)),
            ("params", json::object(&params, false)),
            ("inputs", json::object(&inputs, false)),
            ("input_sha256", json::string(&self.input_sha256())),
            ("expected", expected),
            ("alternate_tolerance", tolerance_json(self.operator)),
            ("provenance", provenance),
        ];
        json::object(&fields, true).replace('\n', "\n  ")
    }
}

/// The operator's conformance tier for non-oracle lanes (kernels::tolerance), or null.
fn tolerance_json(operator: &str) -> String {
    match kernels::tolerance::alternate_tolerance(operator) {
        None => "null".to_string(),
        Some(t) => json::object(
            &[
                ("abs", format!("{:e}", t.abs as f64)),
                ("rel", format!("{:e}", t.rel as f64)),
                ("max_ulp", t.max_ulp.to_string()),
            ],
            false,
        ),
    }
}

fn bits_param(v: f32) -> String {
    format!("\"0x{:08x}\"", v.to_bits())
}

fn oracle(result: Result<(), TrResult>, out: Vec<f32>) -> Expected {
    match result {
        Ok(()) => Expected::F32(out),
        Err(code) => Expected::Code(code),
    }
}

/// Packed q8/q4 rows: scales are powers of two, codes from the LCG (padding zero).
fn packed(rows: usize, cols: usize, q4: bool, g: &mut Lcg) -> Vec<u8> {
    let blocks = (cols + BLOCK - 1) / BLOCK;
    let mut out = Vec::new();
    for _ in 0..rows {
        for b in 0..blocks {
            let scale = 1.0 / (1u32 << (g.next() % 8)) as f32;
            out.extend_from_slice(&scale.to_le_bytes());
            let n = (cols - b * BLOCK).min(BLOCK);
            let codes: Vec<u8> = (0..BLOCK).map(|j| if j < n { (g.next() % 256) as u8 } else { 0 }).collect();
            if q4 {
                let nib = |j: usize| if j < n { codes[j] & 0x0f } else { 0 };
                out.extend((0..BLOCK / 2).map(|i| nib(2 * i) | (nib(2 * i + 1) << 4)));
            } else {
                out.extend_from_slice(&codes);
            }
        }
    }
    out
}

/// One file of a block-quantized matvec operator: every tail length from 1 to 2x the block
/// size, `rows` rows of seeded codes (seed `seed + cols`), the product computed by `run`.
fn block_matvec_file(
    operator: &'static str,
    q4: bool,
    rows: usize,
    seed: u32,
    run: impl Fn(Matrix, &[f32], &mut [f32]) -> Result<(), TrResult>,
) -> (&'static str, Vec<Record>) {
    let layout = if q4 { "q4-block-v1" } else { "q8-block-v1" };
    let mut records = Vec::new();
    for cols in 1..=2 * BLOCK {
        let mut g = Lcg::seeded(cols as u32 + seed);
        let w = packed(rows, cols, q4, &mut g);
        let x = g.vec(cols, STEPS);
        let mut out = vec![0.0f32; rows];
        let m = if q4 { Matrix::Q4(&w) } else { Matrix::Q8(&w) };
        let r = run(m, &x, &mut out);
        let mut rec = Record::new(format!("{operator}.cols-{cols:03}"), operator, oracle(r, out));
        rec.layout = Some(layout);
        rec.shape = vec![("rows", rows as u64), ("cols", cols as u64)];
        rec.inputs = vec![("w", Input::Bytes(w)), ("x", Input::F32(x))];
        records.push(rec);
    }
    (operator, records)
}

fn matvec_cases() -> Vec<(&'static str, Vec<Record>)> {
    let mut files = vec![
        block_matvec_file("q8_matvec", false, 3, 0, kernels::matvec),
        block_matvec_file("q4_matvec", true, 3, 500, kernels::matvec),
    ];
    let mut records = Vec::new();
    for (rows, cols) in [(1, 1), (3, 7), (2, 32), (4, 33), (5, 64)] {
        let mut g = Lcg::seeded((rows * 100 + cols) as u32);
        let w = g.vec(rows * cols, STEPS);
        let x = g.vec(cols, STEPS);
        let mut out = vec![0.0f32; rows];
        let r = kernels::matvec(Matrix::F32(&w), &x, &mut out);
        let mut rec = Record::new(format!("f32_matvec.{rows}x{cols}"), "f32_matvec", oracle(r, out));
        rec.layout = Some("f32");
        rec.shape = vec![("rows", rows as u64), ("cols", cols as u64)];
        rec.inputs = vec![("w", Input::F32(w)), ("x", Input::F32(x))];
        records.push(rec);
    }
    files.push(("f32_matvec", records));
    files
}

fn elementwise_cases() -> Vec<(&'static str, Vec<Record>)> {
    vec![
        ("rmsnorm", rmsnorm_cases()),
        ("rope", rope_cases()),
        ("softmax", softmax_cases()),
        ("attention", attention_cases()),
        ("silu_mul", silu_mul_cases()),
        ("exp_det", vec![exp_det_grid()]),
    ]
}

fn rmsnorm_cases() -> Vec<Record> {
    let mut rms = Vec::new();
    for n in [1usize, 5, 32, 120] {
        let mut g = Lcg::seeded(n as u32 + 7000);
        let (x, w, eps) = (g.vec(n, STEPS), g.vec(n, STEPS), 1e-5f32);
        let mut out = vec![0.0f32; n];
        let r = kernels::rmsnorm(&x, &w, eps, &mut out);
        let mut rec = Record::new(format!("rmsnorm.n-{n:03}"), "rmsnorm", oracle(r, out));
        rec.shape = vec![("n", n as u64)];
        rec.params = vec![("eps", bits_param(eps))];
        rec.inputs = vec![("x", Input::F32(x)), ("weight", Input::F32(w))];
        rms.push(rec);
    }
    rms
}

fn rope_cases() -> Vec<Record> {
    let mut rope = Vec::new();
    for head_dim in [2usize, 8, 20] {
        let mut g = Lcg::seeded(head_dim as u32 + 8000);
        let mut v = g.vec(head_dim, STEPS);
        let input = v.clone();
        // table row for position 3 of theta_i = 10000^(-2i/d): taken from the LCG instead,
        // since the kernel only multiplies by whatever the model's table holds.
        let cos = g.vec(head_dim / 2, STEPS);
        let sin = g.vec(head_dim / 2, STEPS);
        let r = kernels::rope(&mut v, &cos, &sin);
        let mut rec = Record::new(format!("rope.head_dim-{head_dim:02}"), "rope", oracle(r, v));
        rec.shape = vec![("head_dim", head_dim as u64)];
        rec.inputs = vec![("v", Input::F32(input)), ("cos", Input::F32(cos)), ("sin", Input::F32(sin))];
        rope.push(rec);
    }
    rope
}

fn softmax_cases() -> Vec<Record> {
    let mut soft = Vec::new();
    let inf = f32::INFINITY;
    let cases: [(&str, Vec<f32>); 8] = [
        ("n1", vec![42.0]),
        ("ramp", vec![1.0, 2.0, 3.0, -1.0, 0.5]),
        ("equal", vec![5.0; 4]),
        ("wide", vec![0.0, -200.0, 80.0, -80.0]),
        ("pos-inf", vec![inf, 0.0, inf, -inf]),
        ("with-neg-inf", vec![-inf, 1.0, 2.0]),
        ("nan", vec![0.0, f32::NAN]),
        ("empty", vec![]),
    ];
    for (name, scores) in cases.iter() {
        let mut s = scores.clone();
        let r = kernels::softmax(&mut s);
        let mut rec = Record::new(format!("softmax.{name}"), "softmax", oracle(r, s));
        rec.shape = vec![("n", scores.len() as u64)];
        rec.inputs = vec![("scores", Input::F32(scores.clone()))];
        soft.push(rec);
    }
    let mut g = Lcg::seeded(17);
    for n in [7usize, 33] {
        let mut s: Vec<f32> = (0..n).map(|_| g.unit(STEPS) * 20.0).collect();
        let input = s.clone();
        let r = kernels::softmax(&mut s);
        let mut rec = Record::new(format!("softmax.random-{n}"), "softmax", oracle(r, s));
        rec.shape = vec![("n", n as u64)];
        rec.inputs = vec![("scores", Input::F32(input))];
        soft.push(rec);
    }
    soft
}

fn attention_cases() -> Vec<Record> {
    let mut attn = Vec::new();
    for (n_heads, n_kv_heads, head_dim, n_pos) in
        [(1usize, 1usize, 4usize, 1usize), (4, 2, 8, 5), (6, 2, 20, 9), (4, 4, 2, 3)]
    {
        let mut g = Lcg::seeded((n_heads * 1000 + n_kv_heads * 100 + head_dim * 10 + n_pos) as u32);
        let q = g.vec(n_heads * head_dim, STEPS);
        let keys = g.vec(n_pos * n_kv_heads * head_dim, STEPS);
        let values = g.vec(n_pos * n_kv_heads * head_dim, STEPS);
        let mut scores = vec![0.0f32; n_pos];
        let mut out = vec![0.0f32; n_heads * head_dim];
        let shape = AttentionShape { n_heads, n_kv_heads, head_dim };
        let r = kernels::attention(shape, &q, &keys, &values, &mut scores, &mut out);
        let id = format!("attention.h{n_heads}-kv{n_kv_heads}-d{head_dim}-pos{n_pos}");
        let mut rec = Record::new(id, "attention", oracle(r, out));
        rec.shape = vec![
            ("n_heads", n_heads as u64),
            ("n_kv_heads", n_kv_heads as u64),
            ("head_dim", head_dim as u64),
            ("n_pos", n_pos as u64),
        ];
        rec.inputs = vec![("q", Input::F32(q)), ("keys", Input::F32(keys)), ("values", Input::F32(values))];
        attn.push(rec);
    }
    attn
}

fn silu_mul_cases() -> Vec<Record> {
    let mut silu = Vec::new();
    for n in [1usize, 17] {
        let mut g = Lcg::seeded(n as u32 + 9000);
        let gate: Vec<f32> = (0..n).map(|_| g.unit(STEPS) * 8.0).collect();
        let up = g.vec(n, STEPS);
        let mut out = gate.clone();
        let r = kernels::silu_mul(&mut out, &up);
        let mut rec = Record::new(format!("silu_mul.n-{n:02}"), "silu_mul", oracle(r, out));
        rec.shape = vec![("n", n as u64)];
        rec.inputs = vec![("gate", Input::F32(gate)), ("up", Input::F32(up))];
        silu.push(rec);
    }
    silu
}

fn exp_det_grid() -> Record {
    let xs: Vec<f32> = {
        let mut v: Vec<f32> = (0..=72).map(|i| -90.0 + 2.5 * i as f32).collect();
        v.extend_from_slice(&[0.0, -0.0, 1e-8, -1e-8, 88.72283, -87.33654, f32::INFINITY, -f32::INFINITY]);
        v
    };
    let mut exp_rec =
        Record::new("exp_det.grid".into(), "exp_det", Expected::F32(xs.iter().map(|x| exp_det(*x)).collect()));
    exp_rec.shape = vec![("n", xs.len() as u64)];
    exp_rec.inputs = vec![("x", Input::F32(xs))];
    exp_rec
}

fn sampler_cases() -> Vec<(&'static str, Vec<Record>)> {
    let mut pcg = Vec::new();
    for (seed, stream) in [(42u64, 54u64), (0, 0), (7, 1), (u64::MAX, 3)] {
        let mut rng = Pcg32::new(seed, stream);
        let values: Vec<u32> = (0..8).map(|_| rng.next_u32()).collect();
        let mut rec = Record::new(format!("pcg32.seed-{seed}-stream-{stream}"), "pcg32", Expected::U32(values));
        rec.shape = vec![("n", 8)];
        rec.params = vec![("seed", seed.to_string()), ("stream", stream.to_string())];
        pcg.push(rec);
    }
    let mut samp = Vec::new();
    let mut g = Lcg::seeded(31);
    let logits: Vec<f32> = (0..40).map(|_| g.unit(STEPS) * 4.0).collect();
    let configs: [(&str, SamplerConfig); 6] = [
        ("greedy", SamplerConfig::GREEDY),
        ("t1", SamplerConfig { temperature: 1.0, ..SamplerConfig::GREEDY }),
        ("t0.7-k8", SamplerConfig { temperature: 0.7, top_k: 8, ..SamplerConfig::GREEDY }),
        ("t1-p0.5", SamplerConfig { temperature: 1.0, top_p: 0.5, ..SamplerConfig::GREEDY }),
        ("t1.3-k20-p0.9-rep1.5", SamplerConfig { temperature: 1.3, top_k: 20, top_p: 0.9, repetition_penalty: 1.5 }),
        ("greedy-rep3", SamplerConfig { repetition_penalty: 3.0, ..SamplerConfig::GREEDY }),
    ];
    let history = [3u32, 17, 17, 29];
    for (name, cfg) in configs.iter() {
        let mut rng = Pcg32::new(2024, 0);
        let mut work = SamplerWork::new(logits.len()).expect("small");
        let tokens: Vec<u32> =
            (0..16).map(|_| sample(&logits, &[], &history, cfg, &mut rng, &mut work).unwrap_or(u32::MAX)).collect();
        let mut rec = Record::new(format!("sampler.{name}"), "sampler", Expected::U32(tokens));
        rec.shape = vec![("vocab", logits.len() as u64), ("draws", 16)];
        rec.params = vec![
            ("seed", "2024".into()),
            ("stream", "0".into()),
            ("temperature", bits_param(cfg.temperature)),
            ("top_k", cfg.top_k.to_string()),
            ("top_p", bits_param(cfg.top_p)),
            ("repetition_penalty", bits_param(cfg.repetition_penalty)),
        ];
        rec.inputs = vec![("logits", Input::F32(logits.clone())), ("history", Input::U32(history.to_vec()))];
        samp.push(rec);
    }
    // Exceptional logits (greedy and sampled): NaN, infinities, -0, all masked.
    let inf = f32::INFINITY;
    let special: [(&str, Vec<f32>); 4] = [
        ("nan-inf", vec![f32::NAN, 1.0, inf, -inf, inf]),
        ("neg-zero", vec![-0.0, 0.0, -1.0]),
        ("all-neg-inf", vec![-inf, -inf]),
        ("ties", vec![2.0; 6]),
    ];
    for (name, l) in special.iter() {
        for (cname, cfg) in
            [("greedy", SamplerConfig::GREEDY), ("t1", SamplerConfig { temperature: 1.0, ..SamplerConfig::GREEDY })]
        {
            let mut rng = Pcg32::new(5, 0);
            let mut work = SamplerWork::new(l.len()).expect("small");
            let first = sample(l, &[], &[], &cfg, &mut rng, &mut work);
            let expected = match first {
                Err(code) => Expected::Code(code),
                Ok(t0) => {
                    let mut tokens = vec![t0];
                    tokens.extend((0..7).map(|_| sample(l, &[], &[], &cfg, &mut rng, &mut work).unwrap_or(u32::MAX)));
                    Expected::U32(tokens)
                }
            };
            let mut rec = Record::new(format!("sampler.{name}.{cname}"), "sampler", expected);
            rec.shape = vec![("vocab", l.len() as u64), ("draws", 8)];
            rec.params = vec![
                ("seed", "5".into()),
                ("stream", "0".into()),
                ("temperature", bits_param(cfg.temperature)),
                ("top_k", "0".into()),
                ("top_p", bits_param(1.0)),
                ("repetition_penalty", bits_param(1.0)),
            ];
            rec.inputs = vec![("logits", Input::F32(l.clone())), ("history", Input::U32(vec![]))];
            samp.push(rec);
        }
    }
    vec![("pcg32", pcg), ("sampler", samp)]
}

/// End-to-end token sequences on the small model: (id, prompt, sampler, seed, max tokens).
pub const E2E_CASES: [(&str, &str, SamplerConfig, u64, u32); 4] = [
    ("greedy", "Hello, world", SamplerConfig::GREEDY, 0, 24),
    ("greedy-rep1.3", "The quick brown fox", SamplerConfig { repetition_penalty: 1.3, ..SamplerConfig::GREEDY }, 0, 24),
    (
        "t0.8-k40-p0.95-seed7",
        "Hello, world",
        SamplerConfig { temperature: 0.8, top_k: 40, top_p: 0.95, repetition_penalty: 1.0 },
        7,
        32,
    ),
    (
        "t1.0-seed1234",
        "tiny",
        SamplerConfig { temperature: 1.0, top_k: 0, top_p: 1.0, repetition_penalty: 1.1 },
        1234,
        32,
    ),
];

fn e2e_cases(model_path: &str) -> Result<Vec<(&'static str, Vec<Record>)>, CliError> {
    e2e_records(model_path, "e2e_decode", "small", SMALL_MODEL_FIXTURE)
}

fn e2e_records(
    model_path: &str,
    operator: &'static str,
    model_name: &str,
    fixture: &'static str,
) -> Result<Vec<(&'static str, Vec<Record>)>, CliError> {
    let (model, digest) = read_model(model_path)?;
    let mut records = Vec::new();
    for (name, prompt, sampler, seed, max_tokens) in E2E_CASES.iter() {
        let config = SessionConfig { seed: *seed, stream: 0, sampler: *sampler, context: 0, mask: Vec::new() };
        let out = generate(&model, config, prompt, *max_tokens)?;
        let mut rec = Record::new(format!("{operator}.{model_name}.{name}"), operator, Expected::U32(out.tokens));
        rec.shape = vec![("max_tokens", *max_tokens as u64), ("prompt_tokens", out.prompt_tokens.len() as u64)];
        rec.params = vec![
            ("prompt", json::string(prompt)),
            ("seed", seed.to_string()),
            ("stream", "0".into()),
            ("temperature", bits_param(sampler.temperature)),
            ("top_k", sampler.top_k.to_string()),
            ("top_p", bits_param(sampler.top_p)),
            ("repetition_penalty", bits_param(sampler.repetition_penalty)),
        ];
        rec.inputs =
            vec![("model", Input::Fixture(digest.clone(), fixture)), ("prompt_tokens", Input::U32(out.prompt_tokens))];
        records.push(rec);
    }
    Ok(vec![(operator, records)])
}

/// The integer tier (CONTRACT.md §10): the quantizer on its worked examples, edge values and
/// every length 1..64; integer q8/q4 rows for every tail 1..64; e2e tokens of `small-int8`.
/// `int8_quantize` expects, per block, the scale's f32 bits, then its 32 codes as u8 (two's
/// complement); a refused vector expects its result code.
fn int8_cases(model_path: &str) -> Result<Vec<(&'static str, Vec<Record>)>, CliError> {
    let tiny = f32::from_bits(1);
    let mut edges: Vec<(String, Vec<f32>)> = vec![
        ("all-zero".into(), vec![0.0; 32]),
        ("ties-d1".into(), vec![127.0, -127.0, 63.5, -63.5, 0.5, 1.5, -0.5, 0.0, 2.5, -2.5, 126.5]),
        ("ties-d2".into(), vec![254.0, 1.0, -1.0, 3.0, -3.0, 5.0, 251.0]),
        ("below-tie".into(), vec![127.0, f32::from_bits(0.5f32.to_bits() - 1), f32::from_bits(2.5f32.to_bits() - 1)]),
        ("d-1-over-127".into(), vec![1.0, 0.3]),
        ("plus-minus-max".into(), vec![f32::MAX, -f32::MAX, 1.0]),
        ("subnormal-clamp".into(), vec![190.0 * tiny, tiny]),
        ("subnormal-zero-block".into(), vec![63.0 * tiny, -tiny]),
        ("subnormal-least-scale".into(), vec![64.0 * tiny, -3.0 * tiny]),
        ("nan".into(), vec![1.0, f32::NAN]),
        ("inf".into(), vec![f32::INFINITY]),
        ("minus-inf".into(), vec![2.0, f32::NEG_INFINITY, 0.0]),
    ];
    for n in 1..=2 * BLOCK {
        let mut g = Lcg::seeded(n as u32 + 900);
        edges.push((format!("len-{n:03}"), g.vec(n, STEPS).iter().map(|v| v * 3.0).collect()));
    }
    let mut quant = Vec::new();
    for (name, x) in edges {
        let blocks = (x.len() + BLOCK - 1) / BLOCK;
        let (mut codes, mut scales) = (vec![0i8; blocks * BLOCK], vec![0.0f32; blocks]);
        let expected = match kernels::quantize(&x, &mut codes, &mut scales) {
            Ok(()) => {
                let mut v = Vec::new();
                for (b, s) in scales.iter().enumerate() {
                    v.push(s.to_bits());
                    v.extend(codes[b * BLOCK..(b + 1) * BLOCK].iter().map(|c| *c as u8 as u32));
                }
                Expected::U32(v)
            }
            Err(code) => Expected::Code(code),
        };
        let mut rec = Record::new(format!("int8_quantize.{name}"), "int8_quantize", expected);
        rec.shape = vec![("n", x.len() as u64)];
        rec.inputs = vec![("x", Input::F32(x))];
        quant.push(rec);
    }
    // quantize the activations, then the integer dot
    let int8 = |m: Matrix, x: &[f32], out: &mut [f32]| {
        let blocks = (x.len() + BLOCK - 1) / BLOCK;
        let (mut codes, mut scales) = (vec![0i8; blocks * BLOCK], vec![0.0f32; blocks]);
        kernels::quantize(x, &mut codes, &mut scales)
            .and_then(|()| kernels::matvec_acts(m, x.len(), Acts::Int8 { codes: &codes, scales: &scales }, out))
    };
    // five rows: one group of four and one more (the SIMD set's remainder)
    let mut files = vec![
        ("int8_quantize", quant),
        block_matvec_file("int8_q8_matvec", false, 5, 1000, int8),
        block_matvec_file("int8_q4_matvec", true, 5, 1500, int8),
    ];
    files.extend(e2e_records(model_path, "int8_e2e_decode", "small-int8", INT8_MODEL_FIXTURE)?);
    Ok(files)
}

fn write_atomic(path: &Path, text: &str) -> Result<(), CliError> {
    let tmp: PathBuf = path.with_extension("json.tmp");
    let io = |e: std::io::Error| CliError::input(format!("{}: {e}", path.display()));
    let mut f = fs::File::create(&tmp).map_err(io)?;
    f.write_all(text.as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)?;
    fs::rename(&tmp, path).map_err(io)
}

pub fn command(args: &Args) -> Result<u8, CliError> {
    let out = PathBuf::from(args.required("out")?);
    let provenance = Provenance {
        source_revision: args.required("source-revision")?,
        generated_utc: args.required("generated-utc")?,
    };
    let mut files = matvec_cases();
    files.extend(elementwise_cases());
    files.extend(sampler_cases());
    files.extend(e2e_cases(&args.required("small-model")?)?);
    files.extend(int8_cases(&args.required("int8-model")?)?);
    fs::create_dir_all(&out).map_err(|e| CliError::input(format!("{}: {e}", out.display())))?;
    for (operator, records) in files.iter() {
        let body: Vec<String> = records.iter().map(|r| format!("  {}", r.to_json(&provenance))).collect();
        let text = format!("[\n{}\n]\n", body.join(",\n"));
        write_atomic(&out.join(format!("{operator}.json")), &text)?;
        outln!("{}: {} records", out.join(format!("{operator}.json")).display(), records.len());
    }
    Ok(EXIT_OK)
}
