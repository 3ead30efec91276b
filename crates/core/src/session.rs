//! One sequence over one model: the normative forward pass (token-by-token), an f32 KV cache,
//! and the prefill/decode state machine. State is committed only after a whole step succeeds:
//! a failed forward leaves `position` (the committed length) and the history unchanged.

use alloc::vec::Vec;

use crate::kernels::{self, AttentionShape};
use crate::model::Model;
use crate::pcg32::Pcg32;
use crate::result::{mul, TrResult, TrReturn};
use crate::sampler::{reserved, sample, SamplerConfig, SamplerWork};
use crate::tokenizer::EOS;

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

pub struct Session {
    pub config: SessionConfig,
    pub rng: Pcg32,
    context: usize,
    position: usize,
    history: Vec<u32>,
    pending: Option<u32>,
    logits_valid: bool,
    done: bool,
    key_cache: Vec<f32>,   // [L, C, kv_dim]
    value_cache: Vec<f32>, // [L, C, kv_dim]
    x: Vec<f32>,           // [D] residual stream
    xb: Vec<f32>,          // [D] normalized
    xb2: Vec<f32>,         // [D] projection output
    q: Vec<f32>,           // [q_dim]
    k: Vec<f32>,           // [kv_dim]
    v: Vec<f32>,           // [kv_dim]
    att: Vec<f32>,         // [q_dim] attention output
    scores: Vec<f32>,      // [C]
    hb: Vec<f32>,          // [F] gate
    hb2: Vec<f32>,         // [F] up
    logits: Vec<f32>,      // [V]
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
        let (d, f, q_dim) = (c.d_model as usize, c.d_ff as usize, c.q_dim() as usize);
        Ok(Session {
            rng: Pcg32::new(config.seed, config.stream),
            config,
            context,
            position: 0,
            history: reserved(context.checked_add(1).ok_or(TrResult::IntegerOverflow)?)?,
            pending: None,
            logits_valid: false,
            done: false,
            key_cache: zeros(cache)?,
            value_cache: zeros(cache)?,
            x: zeros(d)?,
            xb: zeros(d)?,
            xb2: zeros(d)?,
            q: zeros(q_dim)?,
            k: zeros(kv_dim)?,
            v: zeros(kv_dim)?,
            att: zeros(q_dim)?,
            scores: zeros(context)?,
            hb: zeros(f)?,
            hb2: zeros(f)?,
            logits: zeros(vocab)?,
            work: SamplerWork::new(vocab)?,
            model_fingerprint: fingerprint(model),
        })
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
        if needed.map_or(true, |n| n > self.context) {
            return Err(TrResult::ContextExceeded);
        }
        self.feed_pending(model)?;
        for t in tokens {
            self.forward(model, *t)?;
            self.history.push(*t);
        }
        self.done = false;
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
        let token = sample(
            &self.logits,
            &self.config.mask,
            &self.history,
            &self.config.sampler,
            &mut rng,
            &mut self.work,
        )?;
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
            self.forward(model, token)?;
            self.pending = None;
        }
        Ok(())
    }

    /// The normative execution graph for one token at `position`; commits on success only.
    fn forward(&mut self, model: &Model, token: u32) -> TrReturn<()> {
        if self.position >= self.context {
            return Err(TrResult::ContextExceeded);
        }
        self.logits_valid = false;
        let c = &model.config;
        let pos = self.position;
        let shape = AttentionShape {
            n_heads: c.n_heads as usize,
            n_kv_heads: c.n_kv_heads as usize,
            head_dim: c.head_dim as usize,
        };
        let head_dim = shape.head_dim;
        let half = head_dim / 2;
        let kv_dim = shape.n_kv_heads * head_dim;
        let cos = &model.floats(&model.rope_cos)[pos * half..(pos + 1) * half];
        let sin = &model.floats(&model.rope_sin)[pos * half..(pos + 1) * half];
        let eps = c.rms_eps;

        kernels::dequant_row(model.matrix(&model.embedding), token as usize, &mut self.x)?;
        for (l, w) in model.layers.iter().enumerate() {
            kernels::checkpoint()?; // cancellation point between layers (threads lane)
            // attention block
            kernels::rmsnorm(&self.x, model.floats(&w.attn_norm), eps, &mut self.xb)?;
            // Q, K, V (and gate, up below): one row range, so one barrier in the threads lane
            let qkv = [
                (model.matrix(&w.wq), &mut self.q[..]),
                (model.matrix(&w.wk), &mut self.k[..]),
                (model.matrix(&w.wv), &mut self.v[..]),
            ];
            kernels::matvec_many(&self.xb, qkv)?;
            for head in self.q.chunks_exact_mut(head_dim) {
                kernels::rope(head, cos, sin)?;
            }
            for head in self.k.chunks_exact_mut(head_dim) {
                kernels::rope(head, cos, sin)?;
            }
            let layer_base = l * self.context * kv_dim;
            let slot = layer_base + pos * kv_dim;
            self.key_cache[slot..slot + kv_dim].copy_from_slice(&self.k);
            self.value_cache[slot..slot + kv_dim].copy_from_slice(&self.v);
            let used = layer_base..slot + kv_dim;
            kernels::attention(
                shape,
                &self.q,
                &self.key_cache[used.clone()],
                &self.value_cache[used],
                &mut self.scores[..pos + 1],
                &mut self.att,
            )?;
            kernels::matvec(model.matrix(&w.wo), &self.att, &mut self.xb2)?;
            kernels::add_assign(&mut self.x, &self.xb2)?;
            // gated FFN block
            kernels::rmsnorm(&self.x, model.floats(&w.ffn_norm), eps, &mut self.xb)?;
            let gate_up = [(model.matrix(&w.w_gate), &mut self.hb[..]), (model.matrix(&w.w_up), &mut self.hb2[..])];
            kernels::matvec_many(&self.xb, gate_up)?;
            kernels::silu_mul(&mut self.hb, &self.hb2)?;
            kernels::matvec(model.matrix(&w.w_down), &self.hb, &mut self.xb2)?;
            kernels::add_assign(&mut self.x, &self.xb2)?;
        }
        kernels::rmsnorm(&self.x, model.floats(&model.final_norm), eps, &mut self.xb)?;
        kernels::matvec(model.matrix(&model.output), &self.xb, &mut self.logits)?;
        kernels::checkpoint()?; // last cancellation point before the commit
        self.position = pos + 1;
        self.logits_valid = true;
        Ok(())
    }
}
