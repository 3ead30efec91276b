//! The persistent worker pool of the simd128-threads lane (compiled only with `atomics`).
//!
//! Every instance runs the same module over one imported shared memory: the leader serves the
//! `tr_*` calls, N workers loop in `tr_worker_main(id)`. Globals are per instance, so the host
//! gives each worker its own stack by setting the exported `__stack_pointer` to
//! `tr_worker_stack_top(id)` before calling `tr_worker_main(id)` (crates/wasm/js/worker.js).
//!
//! Two kinds of commands, each published with a generation bump (release) + notify:
//!   operation  leader -> worker 0: run one compute export (`tr_prefill`, `tr_decode`,
//!              `tr_self_test`) start to end. The leader then blocks until it completes, so
//!              the runtime state is only ever touched by one thread at a time. Worker 0 runs
//!              the sequential parts (norms, attention, sampling) itself: no thread wake-up
//!              sits between two matvecs.
//!   rows       worker 0 -> workers 1..N-1, one per matvec group: a barrier generation with
//!              participant count, completion count and error code. Worker 0 computes its own
//!              share, then waits for the others (spinning first: it owns a core while the
//!              leader sleeps).
//! Worker `w` of `n` owns rows `share(rows, w, n)` and computes them in tiles with the same
//! SIMD kernel, checking the cancellation epoch between tiles: every output row is written by
//! exactly one worker, so results equal the single-threaded simd128 lane bit for bit.
//!
//! Liveness: worker 0 waits for a barrier at most the liveness bound, the leader waits for an
//! operation at most twice the bound without progress (worker 0 bumps PROGRESS at every
//! barrier). A timeout, or a trap reported by the host (`tr_worker_failed`), fails the pool for
//! good: the operation returns WorkerFailure before committing, and so does every later one;
//! the host must discard the instance and fall back to a lower lane. A barrier generation is
//! never continued with fewer workers.
//!
//! `memory.atomic.wait32`/`notify` are unstable library APIs in the pinned rustc 1.96
//! (feature `stdarch_wasm_atomic_wait`); this module is their only user, and the crate enables the gate only
//! when built with `atomics` (the threads lane builds with RUSTC_BOOTSTRAP=tinyrustlm_wasm).

use core::arch::wasm32::{memory_atomic_notify, memory_atomic_wait32};
use core::cell::UnsafeCell;
use core::ops::Range;
use core::sync::atomic::{AtomicU32, Ordering::*};

use tinyrustlm_core::kernels::{self, Parallel};
use tinyrustlm_core::{TrResult, TrReturn};

use crate::{code, Runtime};

/// Most workers a pool admits (one stack region each).
pub const MAX_WORKERS: usize = tinyrustlm_core::memory::MAX_WORKERS as usize;
/// Stack of one worker. Worker 0 runs whole operations (the forward pass, the sampler, the
/// self-test); a canary at the bottom is checked after every command.
/// The memory plan counts these regions (tinyrustlm_core::memory::WORKER_STACK_BYTES).
const WORKER_STACK_BYTES: usize = tinyrustlm_core::memory::WORKER_STACK_BYTES as usize;
/// Rows a worker computes between two cancellation checks.
const ROW_TILE: usize = 512;
/// Polls of a watched word before blocking in `memory.atomic.wait32` (waking a blocked thread
/// costs tens of microseconds): workers poll long enough to catch the next matvec group across
/// a layer's sequential parts (measured: 20k polls let worker 1 fall asleep between groups on
/// the bench model; 200k do not). The leader barely spins by default: it waits for whole
/// operations, and its core belongs to the workers.
const WORKER_SPIN: u32 = 200_000;
const DEFAULT_LEADER_SPIN: u32 = 1_000;
/// Default liveness bound: a barrier unanswered for this long fails the pool.
const DEFAULT_LIVENESS_MS: u32 = 10_000;
/// Every blocking wait is at most this long, then the watched word is read again: a wake-up
/// can be lost (V8 may interrupt a waiting thread, e.g. to install tiered-up code, and a
/// notify arriving meanwhile finds no waiter), so no thread may depend on a single notify.
/// Liveness is counted in these slices (one per millisecond of silence).
const SLICE_NS: i64 = 1_000_000;
/// Written at the bottom of every worker stack and checked after each command.
const STACK_CANARY: u32 = 0x5452_5354;

const POOL_DOWN: u32 = 0;
const POOL_READY: u32 = 1;
const POOL_FAILED: u32 = 2;
const POOL_SHUTDOWN: u32 = 3;

/// One cache line per contended word, so workers do not false-share command and completion.
#[repr(C, align(64))]
struct Line(AtomicU32);

#[allow(clippy::declare_interior_mutable_const)]
const LINE0: Line = Line(AtomicU32::new(0));

static STATE: Line = LINE0;
static WORKERS: Line = LINE0; // participants of every barrier
static READY: Line = LINE0; // workers that entered tr_worker_main
static OP_GENERATION: Line = LINE0; // operations published to worker 0
static OP_DONE: Line = LINE0; // last operation generation worker 0 completed
static OP_RESULT: Line = LINE0; // its TrResult code
static PROGRESS: Line = LINE0; // heartbeat: bumped by worker 0 at every barrier and layer
static ROWS_GENERATION: Line = LINE0; // row commands published by worker 0
static COMPLETED: Line = LINE0; // workers 1..N-1 done with the current row command
static ERROR: Line = LINE0; // first non-Ok code of the current row command
static FAILED_WORKERS: Line = LINE0; // bit i: the host reported worker i dead
static CANCEL_EPOCH: Line = LINE0; // bumped by the host (any thread) to cancel
static OP_EPOCH: Line = LINE0; // the running operation's snapshot of CANCEL_EPOCH
static IN_OPERATION: Line = LINE0; // 1 while worker 0 runs an operation
static LIVENESS_MS: Line = Line(AtomicU32::new(DEFAULT_LIVENESS_MS));
static LEADER_SPIN: Line = Line(AtomicU32::new(DEFAULT_LEADER_SPIN));
static BARRIERS: Line = LINE0; // barrier sequence number
static CANCEL_AT_BARRIER: Line = LINE0; // fault injection: cancel at this barrier (0 = off)
static WORKER_COMMANDS: [Line; MAX_WORKERS] = [LINE0; MAX_WORKERS];

/// A closure on the publisher's stack (in the shared memory), alive until the command
/// completes because the publisher waits for it. Vtable entries are table indices, identical
/// in every instance of the module.
type RowsBody = dyn Fn(Range<usize>) -> TrReturn<()> + Sync;
type OpBody = dyn Fn() -> i32 + Sync;

#[derive(Clone, Copy)]
struct RowsJob {
    body: Option<*const RowsBody>,
    rows: usize,
    epoch: u32,
}

/// Written only by its publisher while no command of its kind is open; read by the receivers
/// only after the generation release/acquire pair that opens one.
struct Slot<T>(UnsafeCell<T>);

// SAFETY: see `Slot`.
unsafe impl<T> Sync for Slot<T> {}

static ROWS_JOB: Slot<RowsJob> = Slot(UnsafeCell::new(RowsJob { body: None, rows: 0, epoch: 0 }));
static OP_JOB: Slot<Option<*const OpBody>> = Slot(UnsafeCell::new(None));

#[repr(C, align(16))]
struct Stacks([[u8; WORKER_STACK_BYTES]; MAX_WORKERS]);

static mut STACKS: Stacks = Stacks([[0; WORKER_STACK_BYTES]; MAX_WORKERS]);

static PARALLEL: Parallel = Parallel { rows: run_rows, checkpoint };

fn wait(word: &AtomicU32, expected: u32, timeout_ns: i64) -> i32 {
    // SAFETY: a live, aligned static in the shared memory.
    unsafe { memory_atomic_wait32(word as *const AtomicU32 as *mut i32, expected as i32, timeout_ns) }
}

fn notify(word: &AtomicU32) {
    // SAFETY: as `wait`.
    unsafe { memory_atomic_notify(word as *const AtomicU32 as *mut i32, u32::MAX) };
}

/// Block until `word` changes from `seen` or one slice passed; true if the slice ran out.
fn doze(word: &AtomicU32, seen: u32) -> bool {
    wait(word, seen, SLICE_NS) == 2
}

/// Spin, then doze, until `word` differs from `seen`; returns the new value.
fn next_change(word: &AtomicU32, seen: u32) -> u32 {
    let mut polls = 0;
    loop {
        let now = word.load(Acquire);
        if now != seen {
            return now;
        }
        if polls < WORKER_SPIN {
            polls += 1;
            core::hint::spin_loop();
        } else {
            doze(word, seen);
        }
    }
}

/// The contiguous rows worker `w` of `n` owns: fixed by (rows, w, n) alone.
pub fn share(rows: usize, w: u32, n: u32) -> Range<usize> {
    let at = |k: u32| (rows as u64 * k as u64 / n as u64) as usize;
    at(w)..at(w + 1)
}

fn stack_bottom(id: usize) -> *mut u32 {
    // SAFETY: only an address is taken; callers check id < MAX_WORKERS.
    unsafe { core::ptr::addr_of_mut!(STACKS.0[id]) as *mut u32 }
}

fn stack_intact(id: usize) -> bool {
    // SAFETY: the bottom word of worker `id`'s own stack region.
    unsafe { *stack_bottom(id) == STACK_CANARY }
}

fn fail_pool() {
    STATE.0.store(POOL_FAILED, Release);
    let _ = ERROR.0.compare_exchange(0, TrResult::WorkerFailure.code() as u32, AcqRel, Acquire);
    CANCEL_EPOCH.0.fetch_add(1, AcqRel); // survivors stop at their next tile
    for word in [&COMPLETED.0, &READY.0, &OP_DONE.0, &ROWS_GENERATION.0, &OP_GENERATION.0] {
        notify(word);
    }
}

/// The liveness bound in slices of silence.
fn bound_slices() -> u32 {
    LIVENESS_MS.0.load(Relaxed)
}

// ---- workers ---------------------------------------------------------------------------------

/// Host: the initial `__stack_pointer` of worker `id` (0 when out of range).
#[no_mangle]
pub extern "C" fn tr_worker_stack_top(id: u32) -> u32 {
    if id as usize >= MAX_WORKERS {
        return 0;
    }
    stack_bottom(id as usize) as u32 + WORKER_STACK_BYTES as u32
}

/// Worker entry: register, then serve commands (worker 0: operations; the others: row
/// shares) until the pool shuts down (returns Ok) or fails (returns WorkerFailure).
#[no_mangle]
pub extern "C" fn tr_worker_main(id: u32) -> i32 {
    let me = id as usize;
    if me >= MAX_WORKERS {
        return TrResult::InvalidArgument.code();
    }
    // SAFETY: this worker's own stack region; nothing else writes its bottom word.
    unsafe { *stack_bottom(me) = STACK_CANARY };
    let word = if id == 0 { &OP_GENERATION.0 } else { &ROWS_GENERATION.0 };
    let mut seen = word.load(Acquire);
    READY.0.fetch_add(1, AcqRel);
    notify(&READY.0);
    loop {
        seen = next_change(word, seen);
        match STATE.0.load(Acquire) {
            POOL_READY => {}
            POOL_SHUTDOWN => return TrResult::Ok.code(),
            _ => return TrResult::WorkerFailure.code(),
        }
        if id == 0 {
            serve_operation(seen);
        } else {
            serve_rows(id);
        }
    }
}

/// Worker 0: run the published operation and hand its code back to the leader.
fn serve_operation(generation: u32) {
    // SAFETY: published before the OP_GENERATION release this worker acquired.
    let result = match unsafe { *OP_JOB.0.get() } {
        // SAFETY: the leader keeps the closure alive until OP_DONE says this generation.
        Some(op) => {
            IN_OPERATION.0.store(1, Release);
            let code = unsafe { (*op)() };
            IN_OPERATION.0.store(0, Release);
            code
        }
        None => TrResult::InternalInvariant.code(),
    };
    let result = if stack_intact(0) { result } else { TrResult::WorkerFailure.code() };
    WORKER_COMMANDS[0].0.fetch_add(1, Relaxed); // counted before the leader can look
    OP_RESULT.0.store(result as u32, Relaxed);
    OP_DONE.0.store(generation, Release);
    notify(&OP_DONE.0);
}

/// Workers 1..N-1: compute this worker's share of the published row command.
fn serve_rows(id: u32) {
    let n = WORKERS.0.load(Acquire);
    if id >= n {
        return;
    }
    // SAFETY: published before the ROWS_GENERATION release this worker acquired.
    let job = unsafe { *ROWS_JOB.0.get() };
    let mut result = run_share(&job, id, n);
    if !stack_intact(id as usize) {
        result = Err(TrResult::WorkerFailure); // the stack overflowed into its neighbour
    }
    if let Err(e) = result {
        let _ = ERROR.0.compare_exchange(0, e.code() as u32, AcqRel, Acquire);
    }
    WORKER_COMMANDS[id as usize].0.fetch_add(1, Relaxed); // counted before the barrier closes
    if COMPLETED.0.fetch_add(1, AcqRel) + 1 == n - 1 {
        notify(&COMPLETED.0);
    }
}

fn run_share(job: &RowsJob, id: u32, n: u32) -> TrReturn<()> {
    let body = match job.body {
        // SAFETY: the publisher keeps `body` alive until every participant completed.
        Some(b) => unsafe { &*b },
        None => return Err(TrResult::InternalInvariant),
    };
    let mine = share(job.rows, id, n);
    let mut start = mine.start;
    while start < mine.end {
        if CANCEL_EPOCH.0.load(Acquire) != job.epoch {
            return Err(TrResult::Cancelled); // between row tiles
        }
        let end = mine.end.min(start + ROW_TILE);
        body(start..end)?;
        start = end;
    }
    Ok(())
}

/// Host, after worker `id` trapped: fail the pool now instead of at the liveness bound.
#[no_mangle]
pub extern "C" fn tr_worker_failed(id: u32) {
    if (id as usize) < MAX_WORKERS {
        FAILED_WORKERS.0.fetch_or(1 << id, AcqRel);
    }
    fail_pool();
}

// ---- leader ----------------------------------------------------------------------------------

/// Leader: wait (bounded by `liveness_ms`, 0 = default) until `n` workers are in
/// `tr_worker_main`, then run compute exports on the pool. `leader_spin` (0 = default): polls
/// before the leader blocks while an operation runs.
#[no_mangle]
pub extern "C" fn tr_pool_start(n: u32, liveness_ms: u32, leader_spin: u32) -> i32 {
    if n == 0 || n as usize > MAX_WORKERS || STATE.0.load(Acquire) != POOL_DOWN {
        return TrResult::InvalidArgument.code();
    }
    if liveness_ms != 0 {
        LIVENESS_MS.0.store(liveness_ms, Relaxed);
    }
    if leader_spin != 0 {
        LEADER_SPIN.0.store(leader_spin, Relaxed);
    }
    let mut silent = 0;
    loop {
        let ready = READY.0.load(Acquire);
        if STATE.0.load(Acquire) == POOL_FAILED {
            return TrResult::WorkerFailure.code();
        }
        if ready >= n {
            break;
        }
        if doze(&READY.0, ready) {
            silent += 1;
            if silent >= bound_slices() {
                STATE.0.store(POOL_FAILED, Release);
                return TrResult::WorkerFailure.code();
            }
        }
    }
    WORKERS.0.store(n, Release);
    STATE.0.store(POOL_READY, Release);
    kernels::install_parallel(Some(&PARALLEL));
    TrResult::Ok.code()
}

/// Leader: release the workers (their `tr_worker_main` returns Ok). Later operations run on
/// the leader alone.
#[no_mangle]
pub extern "C" fn tr_pool_shutdown() {
    if STATE.0.load(Acquire) == POOL_READY {
        STATE.0.store(POOL_SHUTDOWN, Release);
        kernels::install_parallel(None);
    }
    for word in [&OP_GENERATION.0, &ROWS_GENERATION.0] {
        word.fetch_add(1, AcqRel);
        notify(word);
    }
}

/// Host: address of the cancellation epoch; `Atomics.add(i32, addr / 4, 1)` from any thread
/// stops the running operation at its next check.
#[no_mangle]
pub extern "C" fn tr_cancel_epoch_ptr() -> u32 {
    &CANCEL_EPOCH.0 as *const AtomicU32 as u32
}

/// Fault injection for the cancellation tests: bump the epoch when the `k`-th barrier from now
/// is about to open (0 = off).
#[no_mangle]
pub extern "C" fn tr_fault_cancel_at_barrier(k: u32) {
    let at = if k == 0 { 0 } else { BARRIERS.0.load(Relaxed).wrapping_add(k) };
    CANCEL_AT_BARRIER.0.store(at, Relaxed);
}

/// Host: `out` <- [workers u32, participated u32 (bit i: worker i served a command),
/// barriers u32, state u32 (0 down, 1 ready, 2 failed, 3 shut down)]: 16 bytes.
#[no_mangle]
pub extern "C" fn tr_worker_counters(out: u32) -> i32 {
    crate::with_runtime(|rt| code(rt.worker_counters(out)))
}

pub const WORKER_COUNTERS_BYTES: u32 = 16;

/// (workers started, bit i set: worker i served at least one command): executed-path
/// evidence for `tr_path_counters` and `tr_worker_counters`.
pub fn participation() -> (u32, u32) {
    let mut mask = 0u32;
    for (i, w) in WORKER_COMMANDS.iter().enumerate() {
        if w.0.load(Relaxed) != 0 {
            mask |= 1 << i;
        }
    }
    (WORKERS.0.load(Acquire), mask)
}

impl Runtime {
    pub fn worker_counters(&mut self, out: u32) -> TrReturn<()> {
        let (workers, mask) = participation();
        let words = [workers, mask, BARRIERS.0.load(Relaxed), STATE.0.load(Acquire)];
        let mut record = [0u8; WORKER_COUNTERS_BYTES as usize];
        for (chunk, w) in record.chunks_exact_mut(4).zip(words) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        self.write(out, &record)
    }
}

/// Leader: run one compute export (`op` returns its TrResult code). With a ready pool it runs
/// on worker 0 while the leader waits; without a pool (never started, shut down) on the leader
/// itself; with a failed pool it is refused. The cancellation epoch is snapshot first.
pub fn operation(op: &(dyn Fn() -> i32 + Sync + '_)) -> i32 {
    OP_EPOCH.0.store(CANCEL_EPOCH.0.load(Acquire), Release);
    match STATE.0.load(Acquire) {
        POOL_READY => {}
        POOL_FAILED => return TrResult::WorkerFailure.code(),
        _ => return op(),
    }
    // SAFETY: no operation is open (the leader is the only publisher and waits for each).
    // The lifetime is erased: `op` outlives the operation because this function waits for
    // OP_DONE, or for worker 0's death, before returning.
    unsafe {
        let op: *const OpBody = core::mem::transmute::<&(dyn Fn() -> i32 + Sync + '_), &'static OpBody>(op);
        *OP_JOB.0.get() = Some(op);
    }
    let generation = OP_GENERATION.0.fetch_add(1, AcqRel).wrapping_add(1);
    notify(&OP_GENERATION.0);
    let spin = LEADER_SPIN.0.load(Relaxed);
    let mut polls = 0;
    let mut progress = PROGRESS.0.load(Acquire);
    let mut silent = 0;
    loop {
        let done = OP_DONE.0.load(Acquire);
        if done == generation {
            return OP_RESULT.0.load(Relaxed) as i32;
        }
        if FAILED_WORKERS.0.load(Acquire) & 1 != 0 {
            return TrResult::WorkerFailure.code(); // worker 0 trapped: nothing runs any more
        }
        if polls < spin {
            polls += 1;
            core::hint::spin_loop();
            continue;
        }
        if !doze(&OP_DONE.0, done) {
            continue;
        }
        // Worker 0 answers within one liveness bound even when another worker is gone (its
        // barrier wait is bounded); two bounds without progress means worker 0 is gone.
        let now = PROGRESS.0.load(Acquire);
        if now != progress {
            progress = now;
            silent = 0;
        } else {
            silent += 1;
            if silent >= 2 * bound_slices() {
                fail_pool();
                return TrResult::WorkerFailure.code();
            }
        }
    }
}

/// `Parallel::checkpoint`: the pool is alive and the operation was not cancelled.
fn checkpoint() -> TrReturn<()> {
    PROGRESS.0.fetch_add(1, Relaxed);
    if STATE.0.load(Acquire) != POOL_READY {
        return Err(TrResult::WorkerFailure);
    }
    if CANCEL_EPOCH.0.load(Acquire) != OP_EPOCH.0.load(Acquire) {
        return Err(TrResult::Cancelled);
    }
    Ok(())
}

/// `Parallel::rows`: one barrier over all workers, each on its `share` of `0..rows`. Runs on
/// worker 0 inside an operation; anywhere else (never expected) the rows run right here.
fn run_rows(rows: usize, body: &(dyn Fn(Range<usize>) -> TrReturn<()> + Sync + '_)) -> TrReturn<()> {
    let seq = BARRIERS.0.fetch_add(1, Relaxed).wrapping_add(1);
    if seq == CANCEL_AT_BARRIER.0.load(Relaxed) {
        CANCEL_EPOCH.0.fetch_add(1, AcqRel);
    }
    checkpoint()?; // before the barrier
    let n = WORKERS.0.load(Acquire);
    let epoch = OP_EPOCH.0.load(Acquire);
    let local = RowsJob { body: None, rows, epoch };
    if n == 1 || IN_OPERATION.0.load(Acquire) == 0 {
        // one participant: no barrier to open
        let erased = erase(body);
        run_share(&RowsJob { body: Some(erased), ..local }, 0, 1)?;
        return checkpoint();
    }
    let job = RowsJob { body: Some(erase(body)), ..local };
    // SAFETY: no row command is open (worker 0 is the only publisher and waits for each).
    unsafe { *ROWS_JOB.0.get() = job };
    COMPLETED.0.store(0, Relaxed);
    ERROR.0.store(0, Relaxed);
    ROWS_GENERATION.0.fetch_add(1, AcqRel);
    notify(&ROWS_GENERATION.0);
    let mine = run_share(&job, 0, n);
    let others = n - 1;
    let mut polls = 0;
    let mut silent = 0;
    loop {
        let done = COMPLETED.0.load(Acquire);
        if done >= others {
            break;
        }
        if STATE.0.load(Acquire) != POOL_READY {
            return Err(TrResult::WorkerFailure); // a worker trapped: its rows are unwritten
        }
        if polls < WORKER_SPIN {
            polls += 1;
            core::hint::spin_loop();
            continue;
        }
        // a barrier still open after the liveness bound means a participant is gone
        if doze(&COMPLETED.0, done) {
            silent += 1;
            if silent >= bound_slices() {
                fail_pool();
                return Err(TrResult::WorkerFailure);
            }
        }
    }
    PROGRESS.0.fetch_add(1, Relaxed);
    mine?;
    match ERROR.0.load(Acquire) {
        0 => {}
        e => return Err(code_to_result(e as i32)),
    }
    checkpoint() // after the barrier
}

/// The closure as a raw pointer for the command slot. Sound because `run_rows` does not
/// return before every participant finished with it (or the pool failed for good, after which
/// no worker runs a command again).
fn erase(body: &(dyn Fn(Range<usize>) -> TrReturn<()> + Sync + '_)) -> *const RowsBody {
    // SAFETY: lifetime erasure only; see above.
    unsafe { core::mem::transmute::<&(dyn Fn(Range<usize>) -> TrReturn<()> + Sync + '_), &'static RowsBody>(body) }
}

fn code_to_result(code: i32) -> TrResult {
    tinyrustlm_core::result::ALL_RESULTS
        .iter()
        .find(|(r, _)| r.code() == code && code != 0)
        .map_or(TrResult::InternalInvariant, |(r, _)| *r)
}
