//! Tiled prefill against token-by-token prefill (T = 1): logits and every committed K/V row
//! bit for bit, for the golden prompts and tile sizes 1, 2, 7, 16 and the prompt length.

use tinyrustlm_core::model::Model;
use tinyrustlm_core::selftest::TINY_MODEL;
use tinyrustlm_core::session::{Session, SessionConfig};

/// The prompts of tests/golden/e2e_decode.json (BOS + UTF-8 bytes), inside the tiny model's
/// context of 32.
const PROMPTS: [(&str, &[u32]); 3] = [
    ("hello-world", &[256, 72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100]),
    (
        "quick-brown-fox",
        &[256, 84, 104, 101, 32, 113, 117, 105, 99, 107, 32, 98, 114, 111, 119, 110, 32, 102, 111, 120],
    ),
    ("tiny", &[256, 116, 105, 110, 121]),
];

fn model() -> Model {
    Model::load(TINY_MODEL.to_vec()).unwrap()
}

/// Logits and K/V (layer by layer, kv head by kv head) after prefilling `prompt` with `tile`.
pub fn state(m: &Model, prompt: &[u32], tile: usize) -> (Vec<u32>, Vec<u32>) {
    let mut s = Session::new(m, SessionConfig::greedy(0)).unwrap();
    s.set_prefill_tile(m, tile).unwrap();
    s.prefill(m, prompt).unwrap();
    assert_eq!(s.position(), prompt.len());
    let logits = s.logits().unwrap().iter().map(|v| v.to_bits()).collect();
    let mut kv = Vec::new();
    for l in 0..m.config.n_layers as usize {
        for g in 0..m.config.n_kv_heads as usize {
            let (k, v) = s.committed_kv(m, l, g).unwrap();
            kv.extend(k.iter().chain(v).map(|x| x.to_bits()));
        }
    }
    (logits, kv)
}

#[test]
fn tiled_prefill_equals_token_by_token_bit_for_bit() {
    let m = model();
    for (name, prompt) in PROMPTS {
        let oracle = state(&m, prompt, 1);
        for tile in [2, 7, 16, prompt.len()] {
            let (logits, kv) = state(&m, prompt, tile);
            assert!(logits == oracle.0, "{name}: tile {tile}: logits differ from T = 1");
            assert!(kv == oracle.1, "{name}: tile {tile}: K/V differ from T = 1");
        }
    }
}

#[test]
fn decode_after_a_tiled_prefill_gives_the_same_tokens() {
    let m = model();
    for (name, prompt) in PROMPTS {
        let run = |tile: usize| {
            let mut s = Session::new(&m, SessionConfig::greedy(0)).unwrap();
            s.set_prefill_tile(&m, tile).unwrap();
            s.prefill(&m, prompt).unwrap();
            (0..6).map(|_| s.decode(&m).unwrap().token).collect::<Vec<_>>()
        };
        let oracle = run(1);
        for tile in [2, 7, 16] {
            assert_eq!(run(tile), oracle, "{name}: tile {tile}");
        }
    }
}

#[test]
fn prefill_tile_bounds_are_checked() {
    let m = model();
    let mut s = Session::new(&m, SessionConfig::greedy(0)).unwrap();
    assert!(s.set_prefill_tile(&m, 0).is_err());
    assert!(s.set_prefill_tile(&m, 100_000).is_err());
    s.set_prefill_tile(&m, 64).unwrap();
    assert_eq!(s.prefill_tile(), 32, "a tile is at most the context");
}
