//! One sequence over one model: the f32 KV cache, the tile buffers and the prefill/decode state
//! machine; the normative forward pass of a tile, step by step, is the child module `forward`.
//! State is committed only after a whole step succeeds: a failed forward leaves `position` (the
//! committed length) and the history unchanged.

use alloc::vec::Vec;

use crate::kernels;
use crate::model::{Model, Tier};
use crate::pcg32::Pcg32;
use crate::result::{mul, TrResult, TrReturn};
use crate::sampler::{reserved, sample, SamplerConfig, SamplerWork};
use crate::tokenizer::EOS;

mod forward;
mod reuse;

pub use reuse::{
    numerical_mode, reusable_prefix, CacheIdentity, Reuse, KV_LAYOUT_VERSION, NORMALIZATION_VERSION, TOKENIZER_BYTES,
};

/// Everything a session is created with (the ABI's 40-byte session config + optional mask).
#[derive(Clone, Debug, PartialEq)]
pub struct SessionConfig {
    pub seed: u64,
    pub stream: u64,
    pub sampler: SamplerConfig,
    /// Admitted context C (1..=max_context); 0 means the model's max_context.
    pub context: u32,
    /// Forbidden-token bitset (bit id%8 of byte id/8); empty = none.
    pub mask: Vec<u8>,
}

impl SessionConfig {
    pub fn greedy(context: u32) -> SessionConfig {
        SessionConfig { seed: 0, stream: 0, sampler: SamplerConfig::GREEDY, context, mask: Vec::new() }
    }
}

/// One decode step's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeStep {
    pub token: u32,
    /// The token is EOS: the sequence is complete.
    pub done: bool,
    /// PRNG state after the step.
    pub rng: Pcg32,
}

/// Default prefill tile T (tokens per tile); `Session::set_prefill_tile` changes it.
pub const DEFAULT_PREFILL_TILE: usize = 16;
/// Largest admitted prefill tile.
pub const MAX_PREFILL_TILE: usize = 512;

/// Activations of one tile of up to `cap` tokens, token-major ([cap, dim] each). Decode is a
/// tile of one token.
struct TileBuffers {
    cap: usize,
    x: Vec<f32>,   // [cap, D] residual stream
    xb: Vec<f32>,  // [cap, D] normalized
    q: Vec<f32>,   // [cap, q_dim]
    att: Vec<f32>, // [cap, q_dim] attention output
    hb: Vec<f32>,  // [cap, F] gate, then silu(gate) * up
    hb2: Vec<f32>, // [cap, F] up
    quant: QuantBuffers,
}

/// The integer tier's quantized matrix input of a tile (empty for the f32 tier): per token
/// ⌈W/32⌉ blocks of the widest input W = max(D, q_dim, F); a phase uses ⌈cols/32⌉ of them.
struct QuantBuffers {
    blocks: usize,    // blocks per token (capacity)
    codes: Vec<i8>,   // [cap, blocks * 32]
    scales: Vec<f32>, // [cap, blocks]
}

impl QuantBuffers {
    fn new(c: &crate::model::Config, cap: usize) -> TrReturn<QuantBuffers> {
        let widest = (c.d_model as usize).max(c.d_ff as usize).max(c.q_dim() as usize);
        let blocks = match c.tier {
            Tier::F32 => 0,
            Tier::Int8 => crate::quant::row_blocks(widest),
        };
        let n_codes = mul(mul(cap, blocks)?, crate::quant::BLOCK)?;
        let mut codes = reserved(n_codes)?;
        codes.resize(n_codes, 0i8);
        Ok(QuantBuffers { blocks, codes, scales: zeros(mul(cap, blocks)?)? })
    }

    /// The matrix input of tokens `xs` ([n, cols] values): f32 as is (f32 tier), or each
    /// token quantized (integer tier; done by the calling thread, before the phase's units
    /// start, so every worker reads the same codes).
    fn acts<'a>(&'a mut self, tier: Tier, xs: &'a [f32], cols: usize) -> TrReturn<kernels::Acts<'a>> {
        if tier == Tier::F32 {
            return Ok(kernels::Acts::F32(xs));
        }
        let n = xs.len() / cols;
        let blocks = crate::quant::row_blocks(cols);
        if blocks > self.blocks || n * self.blocks > self.scales.len() {
            return Err(TrResult::InternalInvariant);
        }
        let (codes, scales) = (&mut self.codes[..n * blocks * 32], &mut self.scales[..n * blocks]);
        for (t, x) in xs.chunks_exact(cols).enumerate() {
            kernels::quantize(
                x,
                &mut codes[t * blocks * 32..(t + 1) * blocks * 32],
                &mut scales[t * blocks..(t + 1) * blocks],
            )?;
        }
        Ok(kernels::Acts::Int8 { codes, scales })
    }
}

impl TileBuffers {
    fn new(c: &crate::model::Config, cap: usize) -> TrReturn<TileBuffers> {
        let (d, f, q_dim) = (c.d_model as usize, c.d_ff as usize, c.q_dim() as usize);
        Ok(TileBuffers {
            cap,
            x: zeros(mul(cap, d)?)?,
            xb: zeros(mul(cap, d)?)?,
            q: zeros(mul(cap, q_dim)?)?,
            att: zeros(mul(cap, q_dim)?)?,
            hb: zeros(mul(cap, f)?)?,
            hb2: zeros(mul(cap, f)?)?,
            quant: QuantBuffers::new(c, cap)?,
        })
    }
}

pub struct Session {
    pub config: SessionConfig,
    pub rng: Pcg32,
    context: usize,
    position: usize,
    history: Vec<u32>,
    pending: Option<u32>,
    logits_valid: bool,
    done: bool,
    tile: usize,
    key_cache: Vec<f32>,   // [L, H_kv, C, d_h]: one contiguous [C, d_h] run per kv head
    value_cache: Vec<f32>, // [L, H_kv, C, d_h]
    buf: TileBuffers,
    scores: Vec<f32>,      // [H_kv, C]: one score row per kv-head unit
    logits: Vec<f32>,      // [V] after the last committed token
    next_logits: Vec<f32>, // [V] computed by a forward, swapped in by its commit
    work: SamplerWork,
    model_fingerprint: (usize, u64),
}

fn zeros(n: usize) -> TrReturn<Vec<f32>> {
    let mut v = reserved(n)?;
    v.resize(n, 0.0);
    Ok(v)
}

/// Identifies the model a session was made for (data pointer and length).
fn fingerprint(model: &Model) -> (usize, u64) {
    (model.bytes().as_ptr() as usize, model.bytes().len() as u64)
}

impl Session {
    pub fn new(model: &Model, config: SessionConfig) -> TrReturn<Session> {
        config.sampler.validate()?;
        let c = &model.config;
        let context = if config.context == 0 { c.max_context } else { config.context };
        if context > c.max_context {
            return Err(TrResult::ContextExceeded);
        }
        let vocab = c.vocab as usize;
        if !config.mask.is_empty() && config.mask.len() != (vocab + 7) / 8 {
            return Err(TrResult::InvalidArgument);
        }
        let context = context as usize;
        let kv_dim = c.kv_dim() as usize;
        let cache = mul(mul(c.n_layers as usize, context)?, kv_dim)?;
        let tile = DEFAULT_PREFILL_TILE.min(context);
        Ok(Session {
            rng: Pcg32::new(config.seed, config.stream),
            config,
            context,
            position: 0,
            history: reserved(context.checked_add(1).ok_or(TrResult::IntegerOverflow)?)?,
            pending: None,
            logits_valid: false,
            done: false,
            tile,
            key_cache: zeros(cache)?,
            value_cache: zeros(cache)?,
            buf: TileBuffers::new(c, tile)?,
            scores: zeros(mul(c.n_kv_heads as usize, context)?)?,
            logits: zeros(vocab)?,
            next_logits: zeros(vocab)?,
            work: SamplerWork::new(vocab)?,
            model_fingerprint: fingerprint(model),
        })
    }

    /// Tokens per prefill tile (1..=MAX_PREFILL_TILE; default DEFAULT_PREFILL_TILE, at most the
    /// context). A tile larger than the buffers reallocates them (outside the memory plan,
    /// which assumes the default). Results do not depend on it: every tile size gives the
    /// logits and K/V of token-by-token prefill bit for bit.
    pub fn set_prefill_tile(&mut self, model: &Model, tile: usize) -> TrReturn<()> {
        self.check_model(model)?;
        if tile == 0 || tile > MAX_PREFILL_TILE {
            return Err(TrResult::InvalidArgument);
        }
        let tile = tile.min(self.context);
        if tile > self.buf.cap {
            self.buf = TileBuffers::new(&model.config, tile)?;
        }
        self.tile = tile;
        Ok(())
    }

    pub fn prefill_tile(&self) -> usize {
        self.tile
    }

    /// The committed K and V rows, as (keys, values) per layer and kv head: for layer l and kv
    /// head g, positions 0..position of [L, H_kv, C, d_h] (for differential tests and digests).
    pub fn committed_kv(&self, model: &Model, layer: usize, kv_head: usize) -> Option<(&[f32], &[f32])> {
        let c = &model.config;
        let (heads, hd) = (c.n_kv_heads as usize, c.head_dim as usize);
        if layer >= c.n_layers as usize || kv_head >= heads {
            return None;
        }
        let base = ((layer * heads + kv_head) * self.context) * hd;
        let end = base + self.position * hd;
        Some((self.key_cache.get(base..end)?, self.value_cache.get(base..end)?))
    }

    /// Overwrites every K and V row at positions `position..context` (rows no commit covers:
    /// never written, or left by a cancelled or failed tile) with `value`, for fault-injection
    /// tests: a forward must never read them, so filling them with NaN must change nothing.
    #[doc(hidden)]
    pub fn fill_uncommitted_kv(&mut self, model: &Model, value: f32) -> TrReturn<()> {
        self.check_model(model)?;
        let hd = model.config.head_dim as usize;
        let runs = self.key_cache.len() / (self.context * hd).max(1);
        for run in 0..runs {
            let rows = (run * self.context + self.position) * hd..(run + 1) * self.context * hd;
            self.key_cache.get_mut(rows.clone()).ok_or(TrResult::InternalInvariant)?.fill(value);
            self.value_cache.get_mut(rows).ok_or(TrResult::InternalInvariant)?.fill(value);
        }
        Ok(())
    }

    /// Committed positions (tokens whose K/V are in the cache).
    pub fn position(&self) -> usize {
        self.position
    }

    pub fn context(&self) -> usize {
        self.context
    }

    /// Logits after the last committed token (valid after prefill/decode).
    pub fn logits(&self) -> Option<&[f32]> {
        if self.logits_valid {
            Some(&self.logits)
        } else {
            None
        }
    }

    fn check_model(&self, model: &Model) -> TrReturn<()> {
        if fingerprint(model) == self.model_fingerprint {
            Ok(())
        } else {
            Err(TrResult::InvalidHandle)
        }
    }

    /// Appends prompt tokens (after any sampled-but-unfed token). All-or-nothing checks first.
    pub fn prefill(&mut self, model: &Model, tokens: &[u32]) -> TrReturn<()> {
        self.check_model(model)?;
        if tokens.is_empty() || tokens.iter().any(|t| *t >= model.config.vocab) {
            return Err(TrResult::InvalidArgument);
        }
        let pending = self.pending.is_some() as usize;
        let needed = self.position.checked_add(pending + tokens.len());
        if needed.is_none_or(|n| n > self.context) {
            return Err(TrResult::ContextExceeded);
        }
        self.feed_pending(model)?;
        // The prefill scheduler: one tile of up to T tokens at a time, each committed whole
        // (position, logits, history) before the next; a cancellation (checked between layers
        // and before every commit) leaves the session at the last committed tile.
        for tile in tokens.chunks(self.tile) {
            self.forward(model, tile)?;
            self.history.extend_from_slice(tile);
            self.done = false;
        }
        Ok(())
    }

    /// Feeds the pending sampled token, then samples the next one.
    pub fn decode(&mut self, model: &Model) -> TrReturn<DecodeStep> {
        self.check_model(model)?;
        if self.done {
            return Err(TrResult::InvalidArgument);
        }
        self.feed_pending(model)?;
        if !self.logits_valid {
            return Err(TrResult::InvalidArgument); // nothing prefilled yet
        }
        let mut rng = self.rng;
        let token =
            sample(&self.logits, &self.config.mask, &self.history, &self.config.sampler, &mut rng, &mut self.work)?;
        // Commit: PRNG, history and pending token change together.
        self.rng = rng;
        self.history.push(token);
        // Even EOS stays pending: a later prefill feeds it first, so the history is always
        // exactly the cached tokens plus at most one pending token.
        self.done = token == EOS;
        self.pending = Some(token);
        Ok(DecodeStep { token, done: self.done, rng })
    }

    fn feed_pending(&mut self, model: &Model) -> TrReturn<()> {
        if let Some(token) = self.pending {
            self.forward(model, &[token])?;
            self.pending = None;
        }
        Ok(())
    }
}

/// FNV-1a 64 over the bits of `values` (no hashing crate in `core`; collisions do not matter
/// for the differential tests that compare two digests of one lane).
fn fnv1a(mut h: u64, values: &[f32]) -> u64 {
    for v in values {
        for byte in v.to_bits().to_le_bytes() {
            h = (h ^ byte as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

impl Session {
    /// (committed position, digest of the logits or 0 when not valid, digest of every
    /// committed K and V row in [layer, kv head, position] order): what `tr_session_digest`
    /// reports so hosts can compare two schedules bit for bit.
    pub fn state_digest(&self, model: &Model) -> (usize, u64, u64) {
        let logits = if self.logits_valid { fnv1a(FNV_OFFSET, &self.logits) } else { 0 };
        let mut kv = FNV_OFFSET;
        for l in 0..model.config.n_layers as usize {
            for g in 0..model.config.n_kv_heads as usize {
                if let Some((k, v)) = self.committed_kv(model, l, g) {
                    kv = fnv1a(fnv1a(kv, k), v);
                }
            }
        }
        (self.position, logits, kv)
    }
}
