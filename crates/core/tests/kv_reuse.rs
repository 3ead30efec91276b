//! KV prefix reuse (CONTRACT.md §11): a turn that reuses the cached prefix equals a fresh
//! session bit for bit (state digest, sampled tokens, PRNG); a prompt that differs from the
//! cache in any token (the last one too) or any cache identity field changed alone reuses
//! nothing and still equals a fresh session.

use tinyrustlm_core::model::Model;
use tinyrustlm_core::sampler::SamplerConfig;
use tinyrustlm_core::selftest::TINY_MODEL;
use tinyrustlm_core::session::{reusable_prefix, CacheIdentity, Session, SessionConfig};
use tinyrustlm_core::TrResult;

fn model() -> Model {
    Model::load(TINY_MODEL.to_vec()).unwrap()
}

/// A sampling config, so the PRNG and the repetition penalty (the history) both matter.
fn config() -> SessionConfig {
    let sampler = SamplerConfig { temperature: 0.9, top_k: 0, top_p: 0.95, repetition_penalty: 1.3 };
    SessionConfig { seed: 42, stream: 7, sampler, context: 0, mask: Vec::new() }
}

fn identity() -> CacheIdentity {
    CacheIdentity {
        model_sha256: "a".repeat(64),
        tokenizer_sha256: "b".repeat(64),
        normalization_version: 1,
        chat_template_sha256: None,
        numerical_mode: "strict-f32-v1".into(),
        kv_layout_version: 1,
        lane: "x86_64-unknown-linux-gnu".into(),
    }
}

type Outcome = ((usize, u64, u64), Vec<u32>, (u64, u64));

/// Decodes `n` tokens; returns (state digest after the prefill, tokens, final PRNG).
fn decode(m: &Model, s: &mut Session, n: usize) -> Outcome {
    let digest = s.state_digest(m);
    let tokens = (0..n).map(|_| s.decode(m).unwrap().token).collect();
    (digest, tokens, (s.rng.state, s.rng.increment))
}

fn fresh(m: &Model, prompt: &[u32], n: usize) -> Outcome {
    let mut s = Session::new(m, config()).unwrap();
    s.prefill(m, prompt).unwrap();
    decode(m, &mut s, n)
}

/// A session after a first turn of `first` and 5 decoded tokens; returns it and the
/// conversation so far (prompt + every decoded token, the last one still pending).
fn after_first_turn(m: &Model, first: &[u32]) -> (Session, Vec<u32>) {
    let mut s = Session::new(m, config()).unwrap();
    let r = s.turn(m, &identity(), &identity(), first).unwrap();
    assert_eq!((r.reused, r.recomputed), (0, first.len()));
    let (_, tokens, _) = decode(m, &mut s, 5);
    let mut conversation = first.to_vec();
    conversation.extend(tokens);
    (s, conversation)
}

const FIRST: &[u32] = &[256, 72, 101, 108, 108, 111, 44, 32, 119, 111];
const NEW: &[u32] = &[10, 81, 58, 32, 104, 105];

#[test]
fn a_follow_up_turn_reuses_the_prefix_and_equals_a_fresh_session() {
    let m = model();
    let (mut s, mut prompt) = after_first_turn(&m, FIRST);
    prompt.extend_from_slice(NEW);
    let cached = s.committed_tokens().len();
    assert_eq!(cached, FIRST.len() + 4, "the last decoded token is pending, not cached");
    let r = s.turn(&m, &identity(), &identity(), &prompt).unwrap();
    assert_eq!((r.reused, r.recomputed, r.refused), (cached, prompt.len() - cached, None));
    assert_eq!(decode(&m, &mut s, 6), fresh(&m, &prompt, 6));
}

#[test]
fn the_same_prompt_again_reuses_all_but_its_last_token() {
    let m = model();
    let mut s = Session::new(&m, config()).unwrap();
    s.prefill(&m, FIRST).unwrap();
    let r = s.turn(&m, &identity(), &identity(), FIRST).unwrap();
    assert_eq!((r.reused, r.recomputed), (FIRST.len() - 1, 1));
    assert_eq!(decode(&m, &mut s, 6), fresh(&m, FIRST, 6));
    // a shorter prompt whose tokens all agree with the cache: all but its last token
    let r = s.turn(&m, &identity(), &identity(), &FIRST[..6]).unwrap();
    assert_eq!((r.reused, r.recomputed), (5, 1));
    assert_eq!(decode(&m, &mut s, 6), fresh(&m, &FIRST[..6], 6));
}

#[test]
fn a_prompt_that_differs_in_any_cached_token_reuses_nothing() {
    let m = model();
    let (s0, conversation) = after_first_turn(&m, FIRST);
    let cached = s0.committed_tokens().to_vec();
    // the first, a middle and the last cached token changed (the last: the planted bug's case)
    for at in [0, cached.len() / 2, cached.len() - 1] {
        let (mut s, _) = after_first_turn(&m, FIRST);
        let mut prompt = conversation.clone();
        prompt[at] = if prompt[at] == 120 { 121 } else { 120 };
        prompt.extend_from_slice(NEW);
        assert_eq!(reusable_prefix(&cached, &prompt), 0, "token {at} changed");
        let r = s.turn(&m, &identity(), &identity(), &prompt).unwrap();
        assert_eq!((r.reused, r.recomputed), (0, prompt.len()), "token {at} changed");
        assert_eq!(decode(&m, &mut s, 6), fresh(&m, &prompt, 6), "token {at} changed");
    }
}

/// Each identity field changed alone, with the field's name.
fn changed_alone() -> Vec<(&'static str, CacheIdentity)> {
    let base = identity();
    let mut out = Vec::new();
    let mut edit = |name: &'static str, f: &dyn Fn(&mut CacheIdentity)| {
        let mut id = base.clone();
        f(&mut id);
        out.push((name, id));
    };
    edit("model_sha256", &|id| id.model_sha256 = "c".repeat(64));
    edit("tokenizer_sha256", &|id| id.tokenizer_sha256 = "d".repeat(64));
    edit("normalization_version", &|id| id.normalization_version = 2);
    edit("chat_template_sha256", &|id| id.chat_template_sha256 = Some("e".repeat(64)));
    edit("numerical_mode", &|id| id.numerical_mode = "int8-exact-v1".into());
    edit("kv_layout_version", &|id| id.kv_layout_version = 2);
    edit("lane", &|id| id.lane = "aarch64-unknown-linux-gnu".into());
    out
}

#[test]
fn each_identity_field_changed_alone_recomputes_from_scratch() {
    let m = model();
    let fields = changed_alone();
    assert_eq!(fields.len(), 7, "every field of the identity");
    for (name, current) in fields {
        let (mut s, mut prompt) = after_first_turn(&m, FIRST);
        prompt.extend_from_slice(NEW);
        let r = s.turn(&m, &identity(), &current, &prompt).unwrap();
        assert_eq!(r.refused, Some(name));
        assert_eq!((r.reused, r.recomputed), (0, prompt.len()), "{name}");
        assert_eq!(decode(&m, &mut s, 6), fresh(&m, &prompt, 6), "{name}");
    }
}

#[test]
fn rewind_beyond_the_committed_tokens_is_refused_and_changes_nothing() {
    let m = model();
    let mut s = Session::new(&m, config()).unwrap();
    s.prefill(&m, FIRST).unwrap();
    let before = s.state_digest(&m);
    assert_eq!(s.rewind(&m, FIRST.len() + 1), Err(TrResult::InvalidArgument));
    assert_eq!(s.state_digest(&m), before);
    assert_eq!(s.turn(&m, &identity(), &identity(), &[]).err(), Some(TrResult::InvalidArgument));
    s.rewind(&m, 3).unwrap();
    assert_eq!(s.committed_tokens(), &FIRST[..3]);
    assert_eq!(s.logits(), None, "no logits until the next prefill");
    assert_eq!(s.decode(&m).err(), Some(TrResult::InvalidArgument));
}
