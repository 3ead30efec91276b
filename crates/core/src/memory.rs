//! Memory plan per the reference's "Memory formulas", specialised to this runtime:
//! tiled prefill (T = min(DEFAULT_PREFILL_TILE, C)), one worker (N_w = 1), byte tokenizer
//! (M_tokenizer = 0).
//! Every term is checked u64 arithmetic; CONTRACT.md lists the terms.

use crate::model::{Config, Tier};
use crate::result::{add64, mul64, TrResult, TrReturn};
use crate::sampler::SamplerWork;
use crate::session::DEFAULT_PREFILL_TILE;

/// Stack reserved per instantiated worker (the Rust wasm32 default stack).
pub const STACK_BYTES: u64 = 1 << 20;
/// Fixed allocator overhead plus a per-allocation allowance (headers, alignment, slack).
pub const ALLOCATOR_FIXED_BYTES: u64 = 64 << 10;
pub const ALLOCATOR_PER_ALLOCATION: u64 = 64;
/// Live allocations a loaded model plus one session hold (vectors in Model and Session).
pub const ALLOCATIONS: u64 = 32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryPlan {
    pub weights: u64,
    pub tokenizer: u64,
    pub kv: u64,
    pub activations: u64,
    pub logits: u64,
    pub sampler: u64,
    pub stack: u64,
    pub transfer: u64,
    pub allocator: u64,
    /// M_prefill: everything above.
    pub peak_prefill: u64,
    /// M_decode: everything but the prompt transfer buffer.
    pub steady_decode: u64,
}

fn sum(terms: &[u64]) -> TrReturn<u64> {
    terms.iter().try_fold(0u64, |acc, t| add64(acc, *t))
}

/// Plans a session of `context` tokens over a model holding `weights` bytes.
pub fn plan(config: &Config, weights: u64, context: u32) -> TrReturn<MemoryPlan> {
    if context == 0 {
        return Err(TrResult::InvalidArgument);
    }
    if context > config.max_context {
        return Err(TrResult::ContextExceeded);
    }
    let c = context as u64;
    let (d, f, v) = (config.d_model as u64, config.d_ff as u64, config.vocab as u64);
    let (q_dim, kv_dim) = (config.q_dim(), config.kv_dim());
    // M_KV(C) = 2 (K and V) * L * C * kv_dim * 4 bytes (f32 cache).
    let kv = mul64(mul64(mul64(2 * 4, config.n_layers as u64)?, c)?, kv_dim)?;
    // per tile token: x, xb [D]; q, att [q_dim]; hb, hb2 [F] (session.rs TileBuffers);
    // scores [H_kv, C]; history [C + 1].
    let tile = (DEFAULT_PREFILL_TILE as u64).min(c);
    let per_token = sum(&[mul64(2, d)?, mul64(2, q_dim)?, mul64(2, f)?])?;
    let floats = sum(&[mul64(tile, per_token)?, mul64(config.n_kv_heads as u64, c)?, c + 1])?;
    // integer tier (format v2): per tile token the quantized input of the widest matrix,
    // 32 codes (1 B) + one scale (4 B) per block of max(D, q_dim, F) (session.rs QuantBuffers)
    let quant = match config.tier {
        Tier::F32 => 0,
        Tier::Int8 => mul64(tile, mul64(add64(d.max(q_dim).max(f), 31)? / 32, 32 + 4)?)?,
    };
    let activations = add64(mul64(floats, 4)?, quant)?;
    let logits = mul64(v, 8)?; // committed logits and the next step's (swapped at commit)
    let sampler = add64(mul64(v, SamplerWork::BYTES_PER_TOKEN)?, (v + 7) / 8)?;
    let transfer = mul64(c, 4)?; // the prompt's token ids in the host window
    let allocator = ALLOCATOR_FIXED_BYTES + ALLOCATOR_PER_ALLOCATION * ALLOCATIONS;
    let steady_decode = sum(&[weights, 0, kv, activations, logits, sampler, STACK_BYTES, allocator])?;
    let peak_prefill = add64(steady_decode, transfer)?;
    Ok(MemoryPlan {
        weights,
        tokenizer: 0,
        kv,
        activations,
        logits,
        sampler,
        stack: STACK_BYTES,
        transfer,
        allocator,
        peak_prefill,
        steady_decode,
    })
}

/// The plan, or `OutOfMemory` if either peak exceeds `budget` (checked before allocating).
pub fn preflight(config: &Config, weights: u64, context: u32, budget: u64) -> TrReturn<MemoryPlan> {
    let p = plan(config, weights, context)?;
    if p.peak_prefill > budget || p.steady_decode > budget {
        return Err(TrResult::OutOfMemory);
    }
    Ok(p)
}
