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
/// `history` holds every token already in the context.
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
    // 1-2. copy in token-id order, forbidden -> -inf.
    let values = &mut work.values;
    values.clear();
    values.extend(logits.iter().enumerate().map(|(i, v)| if masked(mask, i) { f32::NEG_INFINITY } else { *v }));
    // 3. repetition penalty, once per distinct token.
    if config.repetition_penalty != 1.0 {
        let p = config.repetition_penalty;
        let seen = &mut work.seen;
        seen.clear();
        seen.resize(n, false);
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
    // 4-5. NaN -> -inf; -0 -> +0.
    for v in values.iter_mut() {
        if v.is_nan() {
            *v = f32::NEG_INFINITY;
        } else if *v == 0.0 {
            *v = 0.0;
        }
    }
    if values.iter().all(|v| *v == f32::NEG_INFINITY) {
        return Err(TrResult::NumericalFailure);
    }
    // 6. greedy: greatest logit, lowest id on ties (strict > keeps the first).
    if config.temperature == 0.0 {
        let mut best = 0usize;
        for (i, v) in values.iter().enumerate() {
            if *v > values[best] {
                best = i;
            }
        }
        return Ok(best as u32);
    }
    // 7. temperature.
    for v in values.iter_mut() {
        *v = *v / config.temperature;
    }
    // 8. eligible candidates by (logit desc, id asc); keep top-k.
    let order = &mut work.order;
    order.clear();
    order.extend((0..n as u32).filter(|i| values[*i as usize] != f32::NEG_INFINITY));
    order.sort_unstable_by(|a, b| by_value_desc(values, *a, *b));
    if config.top_k > 0 && (config.top_k as usize) < order.len() {
        order.truncate(config.top_k as usize);
    }
    // 9. stable probabilities over the survivors (max is order[0]).
    let probs = &mut work.probs;
    probs.clear();
    let max = values[order[0] as usize];
    if max == f32::INFINITY {
        let count = order.iter().filter(|i| values[**i as usize] == f32::INFINITY).count();
        let share = 1.0 / (count as f32);
        probs.extend(order.iter().map(|i| if values[*i as usize] == f32::INFINITY { share } else { 0.0 }));
    } else {
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
    }
    // 10. (p desc, id asc): reorder the pairs; `values` now carries the probabilities.
    for (i, p) in order.iter().zip(probs.iter()) {
        values[*i as usize] = *p;
    }
    order.sort_unstable_by(|a, b| by_value_desc(values, *a, *b));
    probs.clear();
    probs.extend(order.iter().map(|i| values[*i as usize]));
    // 11. top-p: minimal prefix with cumulative >= p, at least one token.
    let mut kept = probs.len();
    if config.top_p < 1.0 {
        let mut cumulative = 0.0f32;
        for (i, p) in probs.iter().enumerate() {
            cumulative = cumulative + p;
            if cumulative >= config.top_p {
                kept = i + 1;
                break;
            }
        }
    }
    // 12. one draw, cumulative scan in the same order.
    let mut total = 0.0f32;
    for p in &probs[..kept] {
        total = total + p;
    }
    let r = rng.next_f32() * total;
    let mut cumulative = 0.0f32;
    for (i, p) in probs[..kept].iter().enumerate() {
        cumulative = cumulative + p;
        if r < cumulative {
            return Ok(order[i]);
        }
    }
    Ok(order[kept - 1])
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
