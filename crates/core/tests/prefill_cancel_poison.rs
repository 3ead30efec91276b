//! Failure injection at the seams (issue 33 item 6): a chunked prefill cancelled at every
//! checkpoint, for prefill tiles 1, 16, 17, 64 and the largest (64 and MAX_PREFILL_TILE are
//! both clamped to the tiny model's context of 32, so each is the largest tile), commits
//! exactly the tiles that finished before the cancelled one, and no K/V row beyond the
//! committed count is ever read: after the cancel every row at or beyond it is overwritten
//! with NaN (`fill_uncommitted_kv`) and the resumed prefill, and the decode after it, still
//! equal an uncancelled run bit for bit. A NaN read anywhere would reach the logits.
//! One test in this file: the row runner hook is process-global.

use core::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use tinyrustlm_core::kernels::{install_parallel, Parallel};
use tinyrustlm_core::model::Model;
use tinyrustlm_core::selftest::TINY_MODEL;
use tinyrustlm_core::session::{Session, SessionConfig, MAX_PREFILL_TILE};
use tinyrustlm_core::{TrResult, TrReturn};

static CALLS: AtomicUsize = AtomicUsize::new(0);
static CANCEL_AT: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Units in runs of at most 3, as a pool of workers would take them.
fn rows(units: usize, body: &(dyn Fn(Range<usize>) -> TrReturn<()> + Sync)) -> TrReturn<()> {
    (0..units).step_by(3).try_for_each(|start| body(start..(start + 3).min(units)))
}

fn checkpoint() -> TrReturn<()> {
    if CALLS.fetch_add(1, Ordering::SeqCst) + 1 == CANCEL_AT.load(Ordering::SeqCst) {
        return Err(TrResult::Cancelled);
    }
    Ok(())
}

static HOOKS: Parallel = Parallel { rows, checkpoint };

/// (state digest after the prefill, digest after each of 3 decode steps and their tokens).
type Run = ((usize, u64, u64), Vec<((usize, u64, u64), u32)>);

fn session(m: &Model, tile: usize) -> Session {
    let mut s = Session::new(m, SessionConfig::greedy(0)).unwrap();
    s.set_prefill_tile(m, tile).unwrap();
    s
}

/// The digest now, then 3 decode steps, each after poisoning every uncommitted row.
fn finish(s: &mut Session, m: &Model) -> Run {
    let after = s.state_digest(m);
    let steps = (0..3)
        .map(|_| {
            s.fill_uncommitted_kv(m, f32::NAN).unwrap();
            let token = s.decode(m).unwrap().token;
            (s.state_digest(m), token)
        })
        .collect();
    (after, steps)
}

fn uncancelled(m: &Model, prompt: &[u32], tile: usize) -> Run {
    let mut s = session(m, tile);
    s.prefill(m, prompt).unwrap();
    finish(&mut s, m)
}

/// Cancels at checkpoint `k`: the committed count is exactly the tiles before the cancelled
/// one; then poisons every row beyond it and resumes.
fn cancelled_at(m: &Model, prompt: &[u32], tile: usize, k: usize) -> (usize, Run) {
    let per_tile = m.config.n_layers as usize + 1; // between layers, and before the commit
    CALLS.store(0, Ordering::SeqCst);
    CANCEL_AT.store(k, Ordering::SeqCst);
    let mut s = session(m, tile);
    assert_eq!(s.prefill(m, prompt), Err(TrResult::Cancelled), "tile {tile}, checkpoint {k}");
    CANCEL_AT.store(usize::MAX, Ordering::SeqCst);
    let committed = s.position();
    let tile = s.prefill_tile();
    assert_eq!(committed, ((k - 1) / per_tile * tile).min(prompt.len()), "tile {tile}, checkpoint {k}");
    let before = s.state_digest(m);
    s.fill_uncommitted_kv(m, f32::NAN).unwrap();
    assert_eq!(s.state_digest(m), before, "the poison reached a committed row");
    s.prefill(m, &prompt[committed..]).unwrap();
    (committed, finish(&mut s, m))
}

#[test]
fn a_cancelled_prefill_commits_exactly_and_never_reads_beyond_the_committed_rows() {
    let m = Model::load(TINY_MODEL.to_vec()).unwrap();
    let context = m.config.max_context as usize;
    let text = "Once upon a time, a tiny model read only what it had";
    let prompt: Vec<u32> = [256].into_iter().chain(text.bytes().map(u32::from)).take(context - 3).collect();
    install_parallel(Some(&HOOKS));
    let full = uncancelled(&m, &prompt, 1);
    for tile in [1usize, 16, 17, 64, MAX_PREFILL_TILE] {
        assert_eq!(uncancelled(&m, &prompt, tile), full, "tile {tile}: uncancelled");
        let reached = (m.config.n_layers as usize + 1) * prompt.len().div_ceil(tile.min(context));
        CALLS.store(0, Ordering::SeqCst);
        session(&m, tile).prefill(&m, &prompt).unwrap();
        assert_eq!(CALLS.load(Ordering::SeqCst), reached, "tile {tile}: checkpoints of one prefill");
        let mut committed_counts = Vec::new();
        for k in 1..=reached {
            let (committed, run) = cancelled_at(&m, &prompt, tile, k);
            assert_eq!(run, full, "tile {tile}, checkpoint {k}: resumed over NaN rows beyond {committed}");
            committed_counts.push(committed);
        }
        // the first L + 1 cancels commit nothing; the last cancels the last tile's commit
        let tiles = prompt.len().div_ceil(tile.min(context));
        assert_eq!(committed_counts.iter().filter(|c| **c == 0).count(), m.config.n_layers as usize + 1);
        assert_eq!(*committed_counts.last().unwrap(), (tiles - 1) * tile.min(context), "tile {tile}");
    }
    // rewinding leaves stale rows beyond the kept prefix: poisoned, they are never read either
    let mut s = session(&m, 16);
    s.prefill(&m, &prompt).unwrap();
    for keep in [0, 1, 16, 17, prompt.len() - 1] {
        s.rewind(&m, keep).unwrap();
        s.fill_uncommitted_kv(&m, f32::NAN).unwrap();
        s.prefill(&m, &prompt[keep..]).unwrap();
        assert_eq!(s.state_digest(&m), full.0, "rewound to {keep}");
    }
    assert_eq!(finish(&mut s, &m), full);
    install_parallel(None);
}
