//! The persistent worker pool of the simd128-threads lane (compiled only with `atomics`).
//!
//! Every instance runs the same module over one imported shared memory: the leader serves the
//! `tr_*` calls, N workers loop in `tr_worker_main(id)`. Globals are per instance, so the host
//! gives each worker its own stack by setting the exported `__stack_pointer` to
//! `tr_worker_stack_top(id)` before calling `tr_worker_main(id)` (crates/wasm/js/worker.js).
//! Workers never allocate: only the leader touches the heap and the runtime state.
//!
//! One command = one barrier generation:
//!   leader  writes JOB, resets the barrier (completed = 0, error = 0), bumps GENERATION
//!           (release) and notifies;
//!   worker  wakes on GENERATION, runs the rows it owns in tiles, checking the cancellation
//!           epoch between tiles, records an error code, bumps COMPLETED and notifies the
//!           leader when it is the last of the WORKERS participants;
//!   leader  waits until COMPLETED == WORKERS, bounded by the liveness bound.
//! A timeout, or a worker trap reported by the host (`tr_worker_failed`), fails the pool for
//! good: the operation stops with WorkerFailure before committing, and so does every later
//! one; the host must discard the instance and fall back to a lower lane. A barrier
//! generation is never continued with fewer workers.
//!
//! Each output row is owned by exactly one worker (`share`), so a result never depends on the
//! completion order and equals the single-threaded simd128 lane bit for bit.
//!
//! `memory.atomic.wait32`/`notify` are unstable library APIs in the pinned rustc 1.63
//! (feature `stdsimd`); this module is their only user, and the crate enables the gate only
//! when built with `atomics` (the threads lane builds with RUSTC_BOOTSTRAP=tinyrustlm_wasm).

use core::arch::wasm32::{memory_atomic_notify, memory_atomic_wait32};
use core::cell::UnsafeCell;
use core::ops::Range;
use core::sync::atomic::{AtomicU32, Ordering::*};

use tinyrustlm_core::kernels::{self, Parallel};
use tinyrustlm_core::{TrResult, TrReturn};

use crate::{code, Runtime};

/// Most workers a pool admits (one stack region each).
pub const MAX_WORKERS: usize = 8;
/// Stack of one worker: kernels use a few hundred bytes; the rest is margin.
const WORKER_STACK_BYTES: usize = 128 * 1024;
/// Rows a worker computes between two cancellation checks.
const ROW_TILE: usize = 512;
/// Polls of a watched word before blocking in `memory.atomic.wait32` (waking a blocked thread
/// costs tens of microseconds). Workers spin long enough to catch the next matvec of the same
/// layer; the leader barely spins, so that on a machine with as many cores as workers its
/// polling never takes a core from a worker that is still computing.
const WORKER_SPIN: u32 = 20_000;
const DEFAULT_LEADER_SPIN: u32 = 1_000;
/// Default liveness bound: a command unanswered for this long fails the pool.
const DEFAULT_LIVENESS_MS: u32 = 10_000;
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
static GENERATION: Line = LINE0;
static COMPLETED: Line = LINE0;
static ERROR: Line = LINE0;
static CANCEL_EPOCH: Line = LINE0; // bumped by the host (any thread) to cancel
static OP_EPOCH: Line = LINE0; // the running operation's snapshot of CANCEL_EPOCH
static LIVENESS_MS: Line = Line(AtomicU32::new(DEFAULT_LIVENESS_MS));
static LEADER_SPIN: Line = Line(AtomicU32::new(DEFAULT_LEADER_SPIN));
static BARRIERS: Line = LINE0; // barrier sequence number
static CANCEL_AT_BARRIER: Line = LINE0; // fault injection: cancel at this barrier (0 = off)
static WORKER_COMMANDS: [Line; MAX_WORKERS] = [LINE0; MAX_WORKERS];

/// The kernel a barrier runs. `body` lives on the leader's stack (in the shared memory) and
/// outlives the barrier because the leader waits for it; vtable entries are table indices,
/// identical in every instance of the module.
type Body = dyn Fn(Range<usize>) -> TrReturn<()> + Sync;

#[derive(Clone, Copy)]
struct Job {
    body: Option<*const Body>,
    rows: usize,
    epoch: u32,
}

struct JobCell(UnsafeCell<Job>);

// SAFETY: written by the leader only while no barrier is open, read by workers only after the
// GENERATION release/acquire pair that opens one.
unsafe impl Sync for JobCell {}

static JOB: JobCell = JobCell(UnsafeCell::new(Job { body: None, rows: 0, epoch: 0 }));

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

/// Worker side: spin, then block, until GENERATION differs from `seen`.
fn next_generation(seen: u32) -> u32 {
    let mut polls = 0;
    loop {
        let now = GENERATION.0.load(Acquire);
        if now != seen {
            return now;
        }
        if polls < WORKER_SPIN {
            polls += 1;
            core::hint::spin_loop();
        } else {
            wait(&GENERATION.0, seen, -1);
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

fn fail_pool() {
    STATE.0.store(POOL_FAILED, Release);
    let _ = ERROR.0.compare_exchange(0, TrResult::WorkerFailure.code() as u32, AcqRel, Acquire);
    notify(&COMPLETED.0);
    notify(&READY.0);
}

// ---- worker side ---------------------------------------------------------------------------

/// Host: the initial `__stack_pointer` of worker `id` (0 when out of range).
#[no_mangle]
pub extern "C" fn tr_worker_stack_top(id: u32) -> u32 {
    if id as usize >= MAX_WORKERS {
        return 0;
    }
    stack_bottom(id as usize) as u32 + WORKER_STACK_BYTES as u32
}

/// Worker entry: register, then serve commands until the pool shuts down (returns Ok) or
/// fails (returns WorkerFailure).
#[no_mangle]
pub extern "C" fn tr_worker_main(id: u32) -> i32 {
    let me = id as usize;
    if me >= MAX_WORKERS {
        return TrResult::InvalidArgument.code();
    }
    // SAFETY: this worker's own stack region; nothing else writes its bottom word.
    unsafe { *stack_bottom(me) = STACK_CANARY };
    let mut seen = GENERATION.0.load(Acquire);
    READY.0.fetch_add(1, AcqRel);
    notify(&READY.0);
    loop {
        seen = next_generation(seen);
        match STATE.0.load(Acquire) {
            POOL_READY => {}
            POOL_SHUTDOWN => return TrResult::Ok.code(),
            _ => return TrResult::WorkerFailure.code(),
        }
        let n = WORKERS.0.load(Acquire);
        if id >= n {
            continue;
        }
        // SAFETY: published before the GENERATION release this worker acquired.
        let job = unsafe { *JOB.0.get() };
        let mut result = run_share(&job, id, n);
        WORKER_COMMANDS[me].0.fetch_add(1, Relaxed);
        // SAFETY: as above.
        if unsafe { *stack_bottom(me) } != STACK_CANARY {
            result = Err(TrResult::WorkerFailure); // the stack overflowed into its neighbour
        }
        if let Err(e) = result {
            let _ = ERROR.0.compare_exchange(0, e.code() as u32, AcqRel, Acquire);
        }
        if COMPLETED.0.fetch_add(1, AcqRel) + 1 == n {
            notify(&COMPLETED.0);
        }
    }
}

fn run_share(job: &Job, id: u32, n: u32) -> TrReturn<()> {
    let body = match job.body {
        // SAFETY: the leader keeps `body` alive until every participant completed.
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
pub extern "C" fn tr_worker_failed(_id: u32) {
    fail_pool();
}

// ---- leader side ---------------------------------------------------------------------------

/// Leader: wait (bounded by `liveness_ms`, 0 = default) until `n` workers are in
/// `tr_worker_main`, then route every matvec through the pool. `leader_spin` (0 = default):
/// polls before the leader blocks on a barrier; a host with a free core per worker plus one
/// for the leader passes a large value (the leader then wakes without a futex round trip).
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
    loop {
        let ready = READY.0.load(Acquire);
        if STATE.0.load(Acquire) == POOL_FAILED {
            return TrResult::WorkerFailure.code();
        }
        if ready >= n {
            break;
        }
        if wait(&READY.0, ready, bound_ns()) == 2 && READY.0.load(Acquire) < n {
            STATE.0.store(POOL_FAILED, Release);
            return TrResult::WorkerFailure.code();
        }
    }
    WORKERS.0.store(n, Release);
    STATE.0.store(POOL_READY, Release);
    kernels::install_parallel(Some(&PARALLEL));
    TrResult::Ok.code()
}

/// Leader: release the workers (their `tr_worker_main` returns Ok). Kernels run on the leader
/// alone afterwards.
#[no_mangle]
pub extern "C" fn tr_pool_shutdown() {
    if STATE.0.load(Acquire) == POOL_READY {
        STATE.0.store(POOL_SHUTDOWN, Release);
        kernels::install_parallel(None);
    }
    GENERATION.0.fetch_add(1, AcqRel);
    notify(&GENERATION.0);
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

impl Runtime {
    pub fn worker_counters(&mut self, out: u32) -> TrReturn<()> {
        let mut mask = 0u32;
        for (i, w) in WORKER_COMMANDS.iter().enumerate() {
            if w.0.load(Relaxed) != 0 {
                mask |= 1 << i;
            }
        }
        let words = [WORKERS.0.load(Acquire), mask, BARRIERS.0.load(Relaxed), STATE.0.load(Acquire)];
        let mut record = [0u8; WORKER_COUNTERS_BYTES as usize];
        for (chunk, w) in record.chunks_exact_mut(4).zip(words) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        self.write(out, &record)
    }
}

/// Leader, at the start of every state-changing export: snapshot the cancellation epoch.
pub fn begin_operation() {
    OP_EPOCH.0.store(CANCEL_EPOCH.0.load(Acquire), Release);
}

fn bound_ns() -> i64 {
    LIVENESS_MS.0.load(Relaxed) as i64 * 1_000_000
}

/// `Parallel::checkpoint`: the pool is alive and the operation was not cancelled.
fn checkpoint() -> TrReturn<()> {
    if STATE.0.load(Acquire) != POOL_READY {
        return Err(TrResult::WorkerFailure);
    }
    if CANCEL_EPOCH.0.load(Acquire) != OP_EPOCH.0.load(Acquire) {
        return Err(TrResult::Cancelled);
    }
    Ok(())
}

/// `Parallel::rows`: one barrier over all workers, each on its `share` of `0..rows`.
fn run_rows(rows: usize, body: &(dyn Fn(Range<usize>) -> TrReturn<()> + Sync + '_)) -> TrReturn<()> {
    let seq = BARRIERS.0.fetch_add(1, Relaxed).wrapping_add(1);
    if seq == CANCEL_AT_BARRIER.0.load(Relaxed) {
        CANCEL_EPOCH.0.fetch_add(1, AcqRel);
    }
    checkpoint()?; // before the barrier
    let n = WORKERS.0.load(Acquire);
    let epoch = OP_EPOCH.0.load(Acquire);
    // SAFETY: no barrier is open, so no worker reads JOB now. The lifetime is erased: `body`
    // outlives the barrier because this function waits for every participant (or fails the
    // pool for good, after which no worker runs a job again).
    unsafe {
        let body: *const Body = core::mem::transmute::<&(dyn Fn(Range<usize>) -> TrReturn<()> + Sync + '_), &'static Body>(body);
        *JOB.0.get() = Job { body: Some(body), rows, epoch };
    }
    COMPLETED.0.store(0, Relaxed);
    ERROR.0.store(0, Relaxed);
    GENERATION.0.fetch_add(1, AcqRel);
    notify(&GENERATION.0);
    let mut polls = 0;
    let spin = LEADER_SPIN.0.load(Relaxed);
    loop {
        let done = COMPLETED.0.load(Acquire);
        if done >= n {
            break;
        }
        if STATE.0.load(Acquire) != POOL_READY {
            return Err(TrResult::WorkerFailure); // a worker trapped: its rows are unwritten
        }
        if polls < spin {
            polls += 1;
            core::hint::spin_loop();
            continue;
        }
        // Only the last participant and `fail_pool` notify COMPLETED; a wait that times out
        // with the barrier still open means a participant is gone.
        if wait(&COMPLETED.0, done, bound_ns()) == 2 && COMPLETED.0.load(Acquire) < n {
            fail_pool();
            CANCEL_EPOCH.0.fetch_add(1, AcqRel); // stop the survivors between tiles
            return Err(TrResult::WorkerFailure);
        }
    }
    match ERROR.0.load(Acquire) {
        0 => {}
        e => return Err(code_to_result(e as i32)),
    }
    checkpoint() // after the barrier
}

fn code_to_result(code: i32) -> TrResult {
    tinyrustlm_core::result::ALL_RESULTS
        .iter()
        .find(|(r, _)| r.code() == code && code != 0)
        .map_or(TrResult::InternalInvariant, |(r, _)| *r)
}
