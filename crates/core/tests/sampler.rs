//! Sampler edge cases from the reference's test dimensions: all ties, all masked, NaN,
//! infinities, negative zero, top-p boundary equality, temperature zero, penalty rules.

use tinyrustlm_core::pcg32::Pcg32;
use tinyrustlm_core::sampler::{sample, SamplerConfig, SamplerWork};
use tinyrustlm_core::TrResult;

const GREEDY: SamplerConfig = SamplerConfig::GREEDY;

fn with(temperature: f32, top_k: u32, top_p: f32) -> SamplerConfig {
    SamplerConfig { temperature, top_k, top_p, repetition_penalty: 1.0 }
}

fn one(logits: &[f32], mask: &[u8], history: &[u32], cfg: &SamplerConfig, seed: u64) -> Result<u32, TrResult> {
    let mut work = SamplerWork::new(logits.len()).unwrap();
    sample(logits, mask, history, cfg, &mut Pcg32::new(seed, 0), &mut work)
}

/// Which tokens 2000 seeded draws produce.
fn support(logits: &[f32], cfg: &SamplerConfig) -> Vec<usize> {
    let mut counts = vec![0usize; logits.len()];
    let mut work = SamplerWork::new(logits.len()).unwrap();
    let mut rng = Pcg32::new(99, 1);
    for _ in 0..2000 {
        counts[sample(logits, &[], &[], cfg, &mut rng, &mut work).unwrap() as usize] += 1;
    }
    counts
}

#[test]
fn greedy_ties_pick_the_lowest_id() {
    assert_eq!(one(&[2.0, 5.0, 5.0, 5.0], &[], &[], &GREEDY, 0), Ok(1));
    assert_eq!(one(&[7.0; 9], &[], &[], &GREEDY, 0), Ok(0));
}

#[test]
fn greedy_does_not_draw() {
    let mut rng = Pcg32::new(5, 0);
    let before = rng;
    let mut work = SamplerWork::new(3).unwrap();
    sample(&[0.0, 1.0, 0.5], &[], &[], &GREEDY, &mut rng, &mut work).unwrap();
    assert_eq!(rng, before);
    sample(&[0.0, 1.0, 0.5], &[], &[], &with(1.0, 0, 1.0), &mut rng, &mut work).unwrap();
    assert_ne!(rng, before);
}

#[test]
fn all_masked_or_nan_is_numerical_failure() {
    let cases: [(&[f32], &[u8]); 4] = [
        (&[1.0, 2.0, 3.0], &[0b111]),
        (&[f32::NAN, f32::NAN], &[]),
        (&[f32::NEG_INFINITY; 4], &[]),
        (&[f32::NAN, 1.0], &[0b10]),
    ];
    for (logits, mask) in cases {
        for cfg in [GREEDY, with(0.8, 0, 1.0), with(1.0, 2, 0.5)] {
            assert_eq!(one(logits, mask, &[], &cfg, 1), Err(TrResult::NumericalFailure), "{logits:?}");
        }
    }
}

#[test]
fn mask_and_nan_tokens_are_never_chosen() {
    let logits = [9.0, f32::NAN, 1.0, 1.0];
    assert_eq!(one(&logits, &[0b1], &[], &GREEDY, 0), Ok(2));
    let counts = {
        let mut work = SamplerWork::new(4).unwrap();
        let mut rng = Pcg32::new(3, 0);
        let mut c = [0usize; 4];
        for _ in 0..500 {
            c[sample(&logits, &[0b1], &[], &with(1.0, 0, 1.0), &mut rng, &mut work).unwrap() as usize] += 1;
        }
        c
    };
    assert_eq!((counts[0], counts[1]), (0, 0));
    assert!(counts[2] > 0 && counts[3] > 0);
}

#[test]
fn positive_infinity_is_uniform_among_infinities() {
    let logits = [f32::INFINITY, 1e30, f32::INFINITY, 0.0];
    assert_eq!(one(&logits, &[], &[], &GREEDY, 0), Ok(0));
    let counts = support(&logits, &with(1.0, 0, 1.0));
    assert_eq!((counts[1], counts[3]), (0, 0));
    assert!(counts[0] > 800 && counts[2] > 800, "{counts:?}");
}

#[test]
fn negative_zero_equals_positive_zero() {
    assert_eq!(one(&[-0.0, 0.0], &[], &[], &GREEDY, 0), Ok(0));
    assert_eq!(one(&[0.0, -0.0], &[], &[], &GREEDY, 0), Ok(0));
    let counts = support(&[-0.0, 0.0, -1e9], &with(1.0, 0, 1.0));
    assert!(counts[0] > 850 && counts[1] > 850 && counts[2] == 0, "{counts:?}");
}

#[test]
fn top_p_boundary_equality_keeps_the_minimal_prefix() {
    // Four equal logits: p = 0.25 exactly, so cumulative 0.5 after two tokens.
    let logits = [3.0f32; 4];
    let at = support(&logits, &with(1.0, 0, 0.5));
    assert!(at[0] > 0 && at[1] > 0 && at[2] == 0 && at[3] == 0, "p = 0.5: {at:?}");
    let above = support(&logits, &with(1.0, 0, 0.500_001));
    assert!(above[2] > 0 && above[3] == 0, "p > 0.5: {above:?}");
    let tiny = support(&logits, &with(1.0, 0, 1e-9));
    assert_eq!(tiny[0], 2000, "at least one token is kept");
}

#[test]
fn top_k_breaks_ties_by_ascending_id() {
    let counts = support(&[1.0, 2.0, 2.0, 2.0], &with(1.0, 2, 1.0));
    assert!(counts[1] > 0 && counts[2] > 0 && counts[0] == 0 && counts[3] == 0, "{counts:?}");
    let k1 = support(&[1.0, 2.0, 2.0, 2.0], &with(5.0, 1, 1.0));
    assert_eq!(k1[1], 2000);
}

#[test]
fn repetition_penalty_divides_positive_multiplies_negative_once() {
    let rep = SamplerConfig { repetition_penalty: 2.0, ..GREEDY };
    // 3.0 / 2 = 1.5 > 1.4 (applied once despite two occurrences; twice would be 0.75).
    assert_eq!(one(&[1.4, 3.0], &[], &[1, 1], &rep, 0), Ok(1));
    assert_eq!(one(&[1.6, 3.0], &[], &[1], &rep, 0), Ok(0));
    // -1.0 * 2 = -2.0 < -1.5.
    assert_eq!(one(&[-1.0, -1.5], &[], &[0], &rep, 0), Ok(1));
    // History ids outside the vocabulary are ignored, not an error.
    assert_eq!(one(&[-1.0, -1.5], &[], &[7], &rep, 0), Ok(0));
}

#[test]
fn seeded_sampling_is_reproducible() {
    let logits: Vec<f32> = (0..50).map(|i| ((i * 37) % 11) as f32 * 0.3).collect();
    let cfg = SamplerConfig { temperature: 0.9, top_k: 20, top_p: 0.9, repetition_penalty: 1.3 };
    let run = |seed| {
        let mut rng = Pcg32::new(seed, 4);
        let mut work = SamplerWork::new(50).unwrap();
        (0..20).map(|_| sample(&logits, &[], &[3, 4], &cfg, &mut rng, &mut work).unwrap()).collect::<Vec<_>>()
    };
    assert_eq!(run(11), run(11));
    assert_ne!(run(11), run(12));
}

#[test]
fn invalid_configs_are_rejected() {
    let bad = [
        with(-1.0, 0, 1.0),
        with(f32::NAN, 0, 1.0),
        with(f32::INFINITY, 0, 1.0),
        with(1.0, 0, 0.0),
        with(1.0, 0, 1.5),
        SamplerConfig { repetition_penalty: 0.0, ..GREEDY },
        SamplerConfig { repetition_penalty: -2.0, ..GREEDY },
    ];
    for cfg in bad {
        assert_eq!(one(&[1.0, 2.0], &[], &[], &cfg, 0), Err(TrResult::InvalidArgument), "{cfg:?}");
    }
    assert_eq!(one(&[], &[], &[], &GREEDY, 0), Err(TrResult::InvalidArgument));
}
