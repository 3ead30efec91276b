//! Cancellation during a tiled prefill: a checkpoint that fails at its k-th call (for every k
//! a prefill reaches) leaves the session at its last committed tile, with the logits and K/V
//! of token-by-token prefill of that prefix; prefilling the rest then gives the uncancelled
//! state bit for bit. One test in this file: the row runner hook is process-global.

use core::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use tinyrustlm_core::kernels::{install_parallel, Parallel};
use tinyrustlm_core::model::Model;
use tinyrustlm_core::selftest::TINY_MODEL;
use tinyrustlm_core::session::{Session, SessionConfig};
use tinyrustlm_core::{TrResult, TrReturn};

static CALLS: AtomicUsize = AtomicUsize::new(0);
static CANCEL_AT: AtomicUsize = AtomicUsize::new(usize::MAX);

fn rows(units: usize, body: &(dyn Fn(Range<usize>) -> TrReturn<()> + Sync)) -> TrReturn<()> {
    body(0..units)
}

fn checkpoint() -> TrReturn<()> {
    if CALLS.fetch_add(1, Ordering::SeqCst) + 1 == CANCEL_AT.load(Ordering::SeqCst) {
        return Err(TrResult::Cancelled);
    }
    Ok(())
}

static HOOKS: Parallel = Parallel { rows, checkpoint };

fn digest(s: &Session, m: &Model) -> (usize, u64, u64) {
    s.state_digest(m)
}

fn prefilled(m: &Model, prompt: &[u32], tile: usize) -> Session {
    let mut s = Session::new(m, SessionConfig::greedy(0)).unwrap();
    s.set_prefill_tile(m, tile).unwrap();
    s.prefill(m, prompt).unwrap();
    s
}

#[test]
fn cancellation_at_every_checkpoint_leaves_the_last_committed_tile() {
    let m = Model::load(TINY_MODEL.to_vec()).unwrap();
    let prompt: Vec<u32> = [256].into_iter().chain("The quick brown fox".bytes().map(u32::from)).collect();
    install_parallel(Some(&HOOKS));
    for tile in [1usize, 2, 7, 16, prompt.len()] {
        let full = digest(&prefilled(&m, &prompt, tile), &m);
        // checkpoints one uncancelled prefill reaches
        CALLS.store(0, Ordering::SeqCst);
        prefilled(&m, &prompt, tile);
        let reached = CALLS.load(Ordering::SeqCst);
        let mut boundaries = 0;
        for k in 1..=reached {
            CALLS.store(0, Ordering::SeqCst);
            CANCEL_AT.store(k, Ordering::SeqCst);
            let mut s = Session::new(&m, SessionConfig::greedy(0)).unwrap();
            s.set_prefill_tile(&m, tile).unwrap();
            assert_eq!(s.prefill(&m, &prompt), Err(TrResult::Cancelled), "tile {tile}, checkpoint {k}");
            CANCEL_AT.store(usize::MAX, Ordering::SeqCst);
            let at = s.position();
            assert_eq!(at % tile, 0, "tile {tile}, checkpoint {k}: position {at} inside a tile");
            if at > 0 {
                // the committed prefix is exactly token-by-token prefill of that prefix
                assert_eq!(digest(&s, &m), digest(&prefilled(&m, &prompt[..at], 1), &m), "tile {tile}, k {k}");
                boundaries += 1;
            } else {
                assert!(s.logits().is_none());
            }
            s.prefill(&m, &prompt[at..]).unwrap();
            assert_eq!(digest(&s, &m), full, "tile {tile}, checkpoint {k}: continuing after the cancel");
        }
        assert!(boundaries >= (prompt.len() - 1) / tile, "tile {tile}: every tile boundary was cancelled at");
    }
    install_parallel(None);
}
