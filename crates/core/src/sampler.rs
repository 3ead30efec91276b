//! The sampler in the reference's exact order ("Deterministic sampling contract"):
//! 1 copy logits (token-id order); 2 forbidden mask -> -inf; 3 repetition penalty (once per
//! distinct token in the history: v > 0 -> v / p, v < 0 -> v * p); 4 NaN -> -inf; 5 -0 -> +0;
//! (no eligible token, i.e. every logit -inf -> NumericalFailure); 6 temperature 0 -> argmax,
//! lowest id on ties, no PRNG draw; 7 otherwise v / T; 8 top-k by (logit desc, id asc);
//! 9 stable probabilities over survivors; 10 order by (p desc, id asc); 11 top-p minimal prefix
//! with cumulative >= p (at least one); 12 one draw u, r = u * (sum of kept p), first i with
//! r < cumulative_i (the last kept token if rounding leaves none).

use alloc::vec::Vec;
use core::cmp::Ordering;

use crate::math::exp_det;
use crate::pcg32::Pcg32;
use crate::result::{TrResult, TrReturn};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SamplerConfig {
    /// 0 = greedy; otherwise finite and > 0.
    pub temperature: f32,
    /// 0 = no top-k.
    pub top_k: u32,
    /// In (0, 1]; 1 = no top-p.
    pub top_p: f32,
    /// Finite and > 0; 1 = none.
    pub repetition_penalty: f32,
}

impl SamplerConfig {
    pub const GREEDY: SamplerConfig = SamplerConfig { temperature: 0.0, top_k: 0, top_p: 1.0, repetition_penalty: 1.0 };

    pub fn validate(&self) -> TrReturn<()> {
        let t = self.temperature;
        let p = self.top_p;
        let r = self.repetition_penalty;
        let ok = t.is_finite() && t >= 0.0 && p > 0.0 && p <= 1.0 && r.is_finite() && r > 0.0;
        if ok {
            Ok(())
        } else {
            Err(TrResult::InvalidArgument)
        }
    }
}

/// Scratch owned by a session so sampling never allocates; sized for one vocabulary.
pub struct SamplerWork {
    values: Vec<f32>,
    order: Vec<u32>,
    probs: Vec<f32>,
    seen: Vec<bool>,
}

impl SamplerWork {
    pub fn new(vocab: usize) -> TrReturn<SamplerWork> {
        Ok(SamplerWork {
            values: reserved(vocab)?,
            order: reserved(vocab)?,
            probs: reserved(vocab)?,
            seen: reserved(vocab)?,
        })
    }

    /// Bytes this scratch holds for `vocab` tokens (memory plan).
    pub const BYTES_PER_TOKEN: u64 = 4 + 4 + 4 + 1;
}

pub(crate) fn reserved<T>(n: usize) -> TrReturn<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| TrResult::OutOfMemory)?;
    Ok(v)
}

/// Is token `id` forbidden by the bitset mask (bit id%8 of byte id/8)?
fn masked(mask: &[u8], id: usize) -> bool {
    mask.get(id / 8).is_some_and(|b| b & (1 << (id % 8)) != 0)
}

/// Chooses the next token. `mask` is a bitset over the vocabulary (empty = nothing forbidden);
/// `history` holds every token already in the context. The steps are the contract's, in its
/// order (module documentation), one function each.
pub fn sample(
    logits: &[f32],
    mask: &[u8],
    history: &[u32],
    config: &SamplerConfig,
    rng: &mut Pcg32,
    work: &mut SamplerWork,
) -> TrReturn<u32> {
    config.validate()?;
    let n = logits.len();
    if n == 0 || work.values.capacity() < n || n > u32::MAX as usize {
        return Err(TrResult::InvalidArgument);
    }
    let SamplerWork { values, order, probs, seen } = work;
    // 1-2. copy in token-id order, forbidden -> -inf.
    values.clear();
    values.extend(logits.iter().enumerate().map(|(i, v)| if masked(mask, i) { f32::NEG_INFINITY } else { *v }));
    if config.repetition_penalty != 1.0 {
        repetition_penalty(values, history, config.repetition_penalty, seen); // 3
    }
    sanitize(values); // 4-5
    if values.iter().all(|v| *v == f32::NEG_INFINITY) {
        return Err(TrResult::NumericalFailure);
    }
    if config.temperature == 0.0 {
        return Ok(argmax(values)); // 6
    }
    // 7. temperature.
    for v in values.iter_mut() {
        *v = *v / config.temperature;
    }
    top_k(values, order, config.top_k); // 8
    probabilities(values, order, probs)?; // 9
    by_probability(values, order, probs); // 10
    let kept = top_p(probs, config.top_p); // 11
    Ok(draw(probs, &order[..kept], rng)) // 12
}

/// Step 3: repetition penalty `p`, once per distinct token of `history` (`seen` is scratch).
fn repetition_penalty(values: &mut [f32], history: &[u32], p: f32, seen: &mut Vec<bool>) {
    seen.clear();
    seen.resize(values.len(), false);
    for t in history {
        if let Some(flag) = seen.get_mut(*t as usize) {
            *flag = true;
        }
    }
    for (v, s) in values.iter_mut().zip(seen.iter()) {
        if *s {
            if *v > 0.0 {
                *v = *v / p;
            } else if *v < 0.0 {
                *v = *v * p;
            }
        }
    }
}

/// Steps 4-5: NaN -> -inf; -0 -> +0.
fn sanitize(values: &mut [f32]) {
    for v in values.iter_mut() {
        if v.is_nan() {
            *v = f32::NEG_INFINITY;
        } else if *v == 0.0 {
            *v = 0.0;
        }
    }
}

/// Step 6, greedy: the greatest logit, lowest id on ties (strict > keeps the first).
fn argmax(values: &[f32]) -> u32 {
    let mut best = 0usize;
    for (i, v) in values.iter().enumerate() {
        if *v > values[best] {
            best = i;
        }
    }
    best as u32
}

/// Step 8: `order` = the eligible candidates by (logit desc, id asc); keeps the first `k`
/// (0 = all).
fn top_k(values: &[f32], order: &mut Vec<u32>, k: u32) {
    order.clear();
    order.extend((0..values.len() as u32).filter(|i| values[*i as usize] != f32::NEG_INFINITY));
    order.sort_unstable_by(|a, b| by_value_desc(values, *a, *b));
    if k > 0 && (k as usize) < order.len() {
        order.truncate(k as usize);
    }
}

/// Step 9: `probs` = stable probabilities over the survivors `order` (max is order[0]).
fn probabilities(values: &[f32], order: &[u32], probs: &mut Vec<f32>) -> TrReturn<()> {
    probs.clear();
    let max = values[order[0] as usize];
    if max == f32::INFINITY {
        let count = order.iter().filter(|i| values[**i as usize] == f32::INFINITY).count();
        let share = 1.0 / (count as f32);
        probs.extend(order.iter().map(|i| if values[*i as usize] == f32::INFINITY { share } else { 0.0 }));
        return Ok(());
    }
    let mut z = 0.0f32;
    for i in order.iter() {
        let e = exp_det(values[*i as usize] - max);
        probs.push(e);
        z = z + e;
    }
    #[allow(clippy::neg_cmp_op_on_partial_ord)] // `!(z > 0.0)` is also true for NaN: the contract's check
    if !(z > 0.0) || z == f32::INFINITY {
        return Err(TrResult::NumericalFailure);
    }
    for p in probs.iter_mut() {
        *p = *p / z;
    }
    Ok(())
}

/// Step 10: reorders the (token, p) pairs by (p desc, id asc); `values` then carries the
/// probabilities.
fn by_probability(values: &mut [f32], order: &mut [u32], probs: &mut Vec<f32>) {
    for (i, p) in order.iter().zip(probs.iter()) {
        values[*i as usize] = *p;
    }
    order.sort_unstable_by(|a, b| by_value_desc(values, *a, *b));
    probs.clear();
    probs.extend(order.iter().map(|i| values[*i as usize]));
}

/// Step 11: top-p, the length of the minimal prefix with cumulative >= `top_p` (at least one
/// token).
fn top_p(probs: &[f32], top_p: f32) -> usize {
    let mut kept = probs.len();
    if top_p < 1.0 {
        let mut cumulative = 0.0f32;
        for (i, p) in probs.iter().enumerate() {
            cumulative = cumulative + p;
            if cumulative >= top_p {
                kept = i + 1;
                break;
            }
        }
    }
    kept
}

/// Step 12: one draw u, r = u * (sum of the kept p), first i with r < cumulative_i (the last kept
/// token if rounding leaves none); cumulative scan in the same order.
fn draw(probs: &[f32], kept: &[u32], rng: &mut Pcg32) -> u32 {
    let probs = &probs[..kept.len()];
    let mut total = 0.0f32;
    for p in probs {
        total = total + p;
    }
    let r = rng.next_f32() * total;
    let mut cumulative = 0.0f32;
    for (i, p) in probs.iter().enumerate() {
        cumulative = cumulative + p;
        if r < cumulative {
            return kept[i];
        }
    }
    kept[kept.len() - 1]
}

fn by_value_desc(values: &[f32], a: u32, b: u32) -> Ordering {
    let va = values[a as usize];
    let vb = values[b as usize];
    // No NaNs remain; equal values fall back to ascending id, so the order is total.
    match vb.partial_cmp(&va) {
        Some(Ordering::Equal) | None => a.cmp(&b),
        Some(o) => o,
    }
}
