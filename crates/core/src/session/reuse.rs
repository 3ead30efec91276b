//! KV prefix reuse (CONTRACT.md §11): a session keeps its K/V between turns, and a turn whose
//! prompt extends the committed tokens exactly, under an unchanged cache identity, prefills only
//! the new tokens. The result equals a fresh session's bit for bit: K/V row i depends only on
//! tokens 0..=i, the sampler restarts from (seed, stream), the history is exactly the prompt,
//! and the logits are recomputed by prefilling at least one token.

use alloc::string::String;

use super::Session;
use crate::model::{Model, Tier};
use crate::pcg32::Pcg32;
use crate::result::{TrResult, TrReturn};

/// Version of the K/V cache layout: f32 rows, [L, H_kv, C, d_h], one run per kv head.
pub const KV_LAYOUT_VERSION: u32 = 1;
/// Normalization of tokenizer v1: none (the prompt's UTF-8 bytes as they are).
pub const NORMALIZATION_VERSION: u32 = 1;
/// The bytes that define tokenizer v1 (hosts hash them for `tokenizer_sha256`; it has no file).
pub const TOKENIZER_BYTES: &str =
    "tinyrustlm.byte-tokenizer.v1\nids 0..=255: the bytes 0x00..=0xff\n256: BOS\n257: EOS\nnormalization: none\n";

/// The numerical mode of a tier (the receipt's `selection.numerical_mode`, CONTRACT.md §10).
pub fn numerical_mode(tier: Tier) -> &'static str {
    match tier {
        Tier::F32 => "strict-f32-v1",
        Tier::Int8 => "int8-exact-v1",
    }
}

/// What a cached K/V was computed under. Any field that differs recomputes from scratch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheIdentity {
    pub model_sha256: String,
    pub tokenizer_sha256: String,
    pub normalization_version: u32,
    /// The chat template's SHA-256; none today (prompts are raw text), the field exists.
    pub chat_template_sha256: Option<String>,
    pub numerical_mode: String,
    pub kv_layout_version: u32,
    pub lane: String,
}

impl CacheIdentity {
    /// The first field (in declaration order) where `self` and `other` differ, if any.
    pub fn mismatch(&self, other: &CacheIdentity) -> Option<&'static str> {
        let fields = [
            ("model_sha256", self.model_sha256 == other.model_sha256),
            ("tokenizer_sha256", self.tokenizer_sha256 == other.tokenizer_sha256),
            ("normalization_version", self.normalization_version == other.normalization_version),
            ("chat_template_sha256", self.chat_template_sha256 == other.chat_template_sha256),
            ("numerical_mode", self.numerical_mode == other.numerical_mode),
            ("kv_layout_version", self.kv_layout_version == other.kv_layout_version),
            ("lane", self.lane == other.lane),
        ];
        fields.iter().find(|(_, same)| !same).map(|(name, _)| *name)
    }
}

/// The exact-prefix rule: how many committed tokens a turn with `prompt` may keep. The
/// committed tokens, cut to at most `prompt.len() - 1` (a turn prefills at least one token, so
/// its logits are recomputed), must equal the prompt's first tokens id for id; otherwise 0.
pub fn reusable_prefix(committed: &[u32], prompt: &[u32]) -> usize {
    let keep = committed.len().min(prompt.len().saturating_sub(1));
    if committed[..keep] == prompt[..keep] {
        keep
    } else {
        0
    }
}

/// What a turn reused: tokens kept from the cache, tokens prefilled, and why nothing was kept
/// when a cache identity field differed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reuse {
    pub reused: usize,
    pub recomputed: usize,
    pub refused: Option<&'static str>,
}

impl Session {
    /// The committed tokens (those whose K/V rows are in the cache), oldest first.
    pub fn committed_tokens(&self) -> &[u32] {
        &self.history[..self.position]
    }

    /// Keeps the first `keep` committed tokens and makes the session what a fresh one is after
    /// prefilling exactly them: the pending token is dropped, the sampler restarts from
    /// (seed, stream), the logits are invalid until the next prefill. `keep` beyond the
    /// committed position is `InvalidArgument` (nothing changes).
    pub fn rewind(&mut self, model: &Model, keep: usize) -> TrReturn<()> {
        self.check_model(model)?;
        if keep > self.position {
            return Err(TrResult::InvalidArgument);
        }
        self.position = keep;
        self.history.truncate(keep);
        self.pending = None;
        self.logits_valid = false;
        self.done = false;
        self.rng = Pcg32::new(self.config.seed, self.config.stream);
        Ok(())
    }

    /// One turn: keeps what the exact-prefix rule allows when `cached` (the identity the K/V
    /// was computed under) equals `current` field for field, else rewinds to 0; then prefills
    /// the rest of `prompt` (never empty). Decoding afterwards equals a fresh session's.
    pub fn turn(
        &mut self,
        model: &Model,
        cached: &CacheIdentity,
        current: &CacheIdentity,
        prompt: &[u32],
    ) -> TrReturn<Reuse> {
        if prompt.is_empty() {
            return Err(TrResult::InvalidArgument);
        }
        let refused = cached.mismatch(current);
        let keep = if refused.is_some() { 0 } else { reusable_prefix(self.committed_tokens(), prompt) };
        self.rewind(model, keep)?;
        self.prefill(model, &prompt[keep..])?;
        Ok(Reuse { reused: keep, recomputed: prompt.len() - keep, refused })
    }
}
