//! Model format v1 validation: each malformed case gives its code (never a panic), and the
//! session state machine commits only whole steps.

use tinyrustlm_core::model::{Model, DIR_ENTRY_BYTES, HEADER_BYTES};
use tinyrustlm_core::selftest::TINY_MODEL;
use tinyrustlm_core::session::{Session, SessionConfig};
use tinyrustlm_core::TrResult;

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
fn entry(i: usize) -> usize {
    HEADER_BYTES + i * DIR_ENTRY_BYTES
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn load_mutated(f: impl Fn(&mut Vec<u8>)) -> Result<(), TrResult> {
    let mut bytes = TINY_MODEL.to_vec();
    f(&mut bytes);
    Model::load(bytes).map(|_| ())
}

#[test]
fn the_embedded_tiny_model_is_valid() {
    let m = Model::load(TINY_MODEL.to_vec()).unwrap();
    assert_eq!((m.config.n_layers, m.config.d_model, m.config.vocab), (2, 32, 258));
    assert!(m.config.tied_embeddings());
}

#[test]
fn every_truncation_is_bounds() {
    for cut in (0..TINY_MODEL.len()).step_by(7) {
        assert_eq!(Model::load(TINY_MODEL[..cut].to_vec()).err(), Some(TrResult::Bounds), "cut {cut}");
    }
}

#[test]
fn malformed_cases_give_their_codes() {
    type Case = (&'static str, fn(&mut Vec<u8>), TrResult);
    let cases: [Case; 19] = [
        ("bad magic", |b| b[0] = b'X', TrResult::InvalidModel),
        ("format version 3", |b| put_u32(b, 8, 3), TrResult::UnsupportedFeature),
        ("format version 2 with an f32 matrix", |b| put_u32(b, 8, 2), TrResult::UnsupportedQuantization),
        ("unknown flag bit", |b| put_u32(b, 12, 1 | 4), TrResult::UnsupportedFeature),
        (
            "trailing byte",
            |b| {
                b.push(0);
            },
            TrResult::InvalidModel,
        ),
        ("zero layers", |b| put_u32(b, 16, 0), TrResult::UnsupportedShape),
        ("heads not a multiple of kv heads", |b| put_u32(b, 36, 3), TrResult::UnsupportedShape),
        ("odd head_dim", |b| put_u32(b, 40, 7), TrResult::UnsupportedShape),
        ("vocab below the byte tokenizer", |b| put_u32(b, 28, 100), TrResult::UnsupportedShape),
        ("nan eps", |b| put_u32(b, 48, 0x7fc0_0000), TrResult::InvalidModel),
        ("wrong tensor count", |b| put_u32(b, 52, 21), TrResult::InvalidModel),
        ("unknown layout", |b| put_u32(b, entry(0) + 4, 9), TrResult::UnsupportedQuantization),
        ("unknown kind", |b| b[entry(0)] = 99, TrResult::InvalidModel),
        ("norm stored as q8", |b| put_u32(b, entry(4) + 4, 1), TrResult::UnsupportedQuantization),
        (
            "misaligned offset",
            |b| {
                let off = u64_at(b, entry(3) + 16);
                put_u64(b, entry(3) + 16, off + 4);
            },
            TrResult::Alignment,
        ),
        ("offset beyond the file", |b| put_u64(b, entry(3) + 16, 1 << 40), TrResult::Bounds),
        ("offset + bytes wraps u64", |b| put_u64(b, entry(3) + 16, u64::MAX - 15), TrResult::IntegerOverflow),
        (
            "overlapping tensors",
            |b| {
                let off = u64_at(b, entry(1) + 16);
                put_u64(b, entry(2) + 16, off);
            },
            TrResult::InvalidModel,
        ),
        (
            "stored bytes disagree with the layout",
            |b| {
                let n = u64_at(b, entry(2) + 24);
                put_u64(b, entry(2) + 24, n - 16);
            },
            TrResult::InvalidModel,
        ),
    ];
    for (name, mutate, want) in cases {
        assert_eq!(load_mutated(mutate), Err(want), "{name}");
    }
}

#[test]
fn overflowing_dimensions_are_integer_overflow() {
    // vocab = d_model = u32::MAX and an embedding of that shape: q8 bytes exceed u64.
    let got = load_mutated(|b| {
        put_u32(b, 28, u32::MAX);
        put_u32(b, 20, u32::MAX);
        put_u32(b, entry(0) + 8, u32::MAX);
        put_u32(b, entry(0) + 12, u32::MAX);
    });
    assert_eq!(got, Err(TrResult::IntegerOverflow));
}

#[test]
fn decode_before_prefill_and_context_limits() {
    let model = Model::load(TINY_MODEL.to_vec()).unwrap();
    let mut s = Session::new(&model, SessionConfig::greedy(4)).unwrap();
    assert_eq!(s.decode(&model).err(), Some(TrResult::InvalidArgument));
    assert_eq!(s.prefill(&model, &[256, 1, 2, 3, 4]), Err(TrResult::ContextExceeded));
    assert_eq!(s.position(), 0, "a rejected prefill changes nothing");
    assert_eq!(s.prefill(&model, &[258]), Err(TrResult::InvalidArgument));
    assert_eq!(s.prefill(&model, &[]), Err(TrResult::InvalidArgument));
    s.prefill(&model, &[256, 1, 2]).unwrap();
    assert_eq!(s.position(), 3);
    s.decode(&model).unwrap(); // samples token 4 from position 3's logits
    s.decode(&model).unwrap(); // feeds it (position 4 = C), samples token 5
    assert_eq!(s.position(), 4);
    assert_eq!(s.decode(&model).err(), Some(TrResult::ContextExceeded));
    assert_eq!(s.position(), 4);
    assert_eq!(Session::new(&model, SessionConfig::greedy(33)).err(), Some(TrResult::ContextExceeded));
}

#[test]
fn sessions_are_deterministic_and_independent() {
    let model = Model::load(TINY_MODEL.to_vec()).unwrap();
    let run = |seed| {
        let mut cfg = SessionConfig::greedy(0);
        cfg.seed = seed;
        cfg.sampler.temperature = 1.0;
        let mut s = Session::new(&model, cfg).unwrap();
        s.prefill(&model, &[256, 104, 105]).unwrap();
        (0..10).map(|_| s.decode(&model).unwrap().token).collect::<Vec<_>>()
    };
    assert_eq!(run(1), run(1));
    assert_ne!(run(1), run(2));
}

#[test]
fn mask_length_must_cover_the_vocabulary() {
    let model = Model::load(TINY_MODEL.to_vec()).unwrap();
    let mut cfg = SessionConfig::greedy(0);
    cfg.mask = vec![0; 3];
    assert_eq!(Session::new(&model, cfg.clone()).err(), Some(TrResult::InvalidArgument));
    cfg.mask = vec![0xff; 33]; // (258 + 7) / 8; everything forbidden
    let mut s = Session::new(&model, cfg).unwrap();
    s.prefill(&model, &[256]).unwrap();
    assert_eq!(s.decode(&model).err(), Some(TrResult::NumericalFailure));
}

#[test]
fn prefill_after_eos_feeds_the_eos_token_first() {
    let model = Model::load(TINY_MODEL.to_vec()).unwrap();
    let mut cfg = SessionConfig::greedy(0);
    // Forbid everything but EOS (257): the first decode must end the sequence.
    cfg.mask = vec![0xff; 33];
    cfg.mask[32] = 0b01; // ids 256 (forbidden) and 257 (allowed)
    let mut s = Session::new(&model, cfg).unwrap();
    s.prefill(&model, &[256, 104]).unwrap();
    let step = s.decode(&model).unwrap();
    assert!(step.done && step.token == 257);
    assert_eq!(s.decode(&model).err(), Some(TrResult::InvalidArgument));
    assert_eq!(s.position(), 2);
    s.prefill(&model, &[105]).unwrap();
    assert_eq!(s.position(), 4, "EOS and the new token are both in the cache");
}

/// Random corruption never panics: load returns a code, or a model that then runs (or fails
/// with a code). Overflow checks are on in tests, so a wrapping product would panic here.
#[test]
fn random_corruption_never_panics() {
    let mut state = 0x2545_f491_u32;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state
    };
    let dir_end = HEADER_BYTES + 21 * DIR_ENTRY_BYTES;
    let mut loaded = 0;
    for _ in 0..3000 {
        let mut bytes = TINY_MODEL.to_vec();
        for _ in 0..(1 + next() % 4) {
            // mostly header/directory (where parsing decisions are), sometimes anywhere
            let span = if next() % 4 == 0 { bytes.len() } else { dir_end };
            let at = next() as usize % span;
            bytes[at] = match next() % 3 {
                0 => 0xff,
                1 => 0,
                _ => next() as u8,
            };
        }
        if let Ok(model) = Model::load(bytes) {
            loaded += 1;
            if let Ok(mut s) = Session::new(&model, SessionConfig::greedy(4)) {
                if s.prefill(&model, &[256, 1]).is_ok() {
                    let _ = s.decode(&model);
                }
            }
        }
    }
    assert!(loaded > 0, "some corruptions (e.g. in weights) still load");
}
