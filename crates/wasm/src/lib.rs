//! tinyrustlm-wasm: the `tr_*` ABI (runtime-architecture.md, "Typed host/Wasm API").
//!
//! extern "C", fixed-width integers, u32 addresses/lengths, i32 results (`TrResult` codes),
//! u64 generational handles (generation << 32 | slot). The host passes data only through
//! transfer windows it obtained from `tr_alloc`: every address/length is checked against a live
//! window, so no export can read or write memory it does not own. Record layouts: CONTRACT.md.

#![cfg_attr(target_feature = "atomics", feature(stdarch_wasm_atomic_wait))] // memory.atomic.wait32/notify: threads.rs

mod handles;
#[cfg(target_feature = "atomics")]
mod heap;
pub mod loader_abi;
pub mod memplan;
#[cfg(target_feature = "atomics")]
pub mod threads;
mod windows;

// The threads lane's memory is created by the host with initial == maximum: std's allocator
// only grows memory, so this lane allocates from the fixed heap instead (heap.rs).
// Every wasm32 lane counts its allocator's bytes (memplan.rs: the measured high-water mark).
#[cfg(target_feature = "atomics")]
#[global_allocator]
static HEAP: memplan::Counting<heap::SharedHeap> = memplan::Counting::new(heap::SharedHeap::new());
#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
#[global_allocator]
static HEAP: memplan::Counting<std::alloc::System> = memplan::Counting::new(std::alloc::System);

use std::cell::UnsafeCell;
use std::rc::Rc;

use tinyrustlm_core::memory;
use tinyrustlm_core::model::Model;
use tinyrustlm_core::sampler::SamplerConfig;
use tinyrustlm_core::session::{Session, SessionConfig};
use tinyrustlm_core::{kernels, selftest, TrResult, TrReturn, ABI_VERSION, RUNTIME_SEMANTICS};

use handles::{Handles, Object};
use windows::Windows;

/// Lane ids reported by `tr_lane`, decided at compile time by the enabled target features.
pub const LANE_SCALAR: u32 = 0;
pub const LANE_SIMD128: u32 = 1;
pub const LANE_SIMD128_THREADS: u32 = 2;
pub const LANE_RELAXED_SIMD128: u32 = 3;
pub const LANE_RELAXED_SIMD128_THREADS: u32 = 4;

/// Bytes of the session config record before the optional forbidden-token mask.
pub const SESSION_CONFIG_BYTES: u32 = 40;
/// Bytes written by `tr_decode`, `tr_preflight`, `tr_path_counters`, handle outputs.
pub const DECODE_RECORD_BYTES: u32 = 24;
pub const PREFLIGHT_RECORD_BYTES: u32 = 16;
pub const COUNTERS_RECORD_BYTES: u32 = 32;
pub const HANDLE_BYTES: u32 = 8;
/// Bytes written by `tr_session_digest`.
pub const DIGEST_RECORD_BYTES: u32 = 24;

/// A session and the model it was made for (the model outlives `tr_model_free` while used).
pub struct SessionObject {
    model: Rc<Model>,
    session: Session,
}

/// All state behind the exports: handle table and transfer windows.
#[derive(Default)]
pub struct Runtime {
    handles: Handles,
    windows: Windows,
}

fn code(result: TrReturn<()>) -> i32 {
    TrResult::of(&result).code()
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    le_u32(b, at) as u64 | ((le_u32(b, at + 4) as u64) << 32)
}

/// Parses the 40-byte session config (+ mask): seed u64, stream u64, temperature f32, top_k
/// u32, top_p f32, repetition_penalty f32, context u32, reserved u32 (must be 0).
pub fn parse_session_config(record: &[u8]) -> TrReturn<SessionConfig> {
    if record.len() < SESSION_CONFIG_BYTES as usize || le_u32(record, 36) != 0 {
        return Err(TrResult::InvalidArgument);
    }
    let sampler = SamplerConfig {
        temperature: f32::from_bits(le_u32(record, 16)),
        top_k: le_u32(record, 20),
        top_p: f32::from_bits(le_u32(record, 24)),
        repetition_penalty: f32::from_bits(le_u32(record, 28)),
    };
    Ok(SessionConfig {
        seed: le_u64(record, 0),
        stream: le_u64(record, 8),
        sampler,
        context: le_u32(record, 32),
        mask: record[SESSION_CONFIG_BYTES as usize..].to_vec(),
    })
}

impl Runtime {
    pub fn alloc(&mut self, len: u32) -> u32 {
        self.windows.alloc(len)
    }

    pub fn free(&mut self, addr: u32, len: u32) -> TrReturn<()> {
        self.windows.free(addr, len)
    }

    fn write(&mut self, addr: u32, bytes: &[u8]) -> TrReturn<()> {
        self.windows.get_mut(addr, bytes.len() as u32)?.copy_from_slice(bytes);
        Ok(())
    }

    pub fn model_load(&mut self, addr: u32, len: u32, out: u32) -> TrReturn<()> {
        self.windows.get_mut(out, HANDLE_BYTES)?; // check the output before the work
        let bytes = self.windows.get_mut(addr, len)?;
        let mut owned = Vec::new();
        owned.try_reserve_exact(bytes.len()).map_err(|_| TrResult::OutOfMemory)?;
        owned.extend_from_slice(bytes);
        let model = Model::load(owned)?;
        let handle = self.handles.insert(Object::Model(Rc::new(model)))?;
        self.write(out, &handle.to_le_bytes())
    }

    pub fn preflight(&mut self, model: u64, context: u32, budget: u64, out: u32) -> TrReturn<()> {
        self.windows.get_mut(out, PREFLIGHT_RECORD_BYTES)?;
        let model = self.handles.model(model)?;
        let plan = memory::plan(&model.config, model.resident_bytes(), context)?;
        let mut record = [0u8; 16];
        record[..8].copy_from_slice(&plan.peak_prefill.to_le_bytes());
        record[8..].copy_from_slice(&plan.steady_decode.to_le_bytes());
        self.write(out, &record)?;
        if plan.peak_prefill > budget || plan.steady_decode > budget {
            return Err(TrResult::OutOfMemory);
        }
        Ok(())
    }

    pub fn session_new(&mut self, model: u64, config: u32, config_len: u32, out: u32) -> TrReturn<()> {
        self.windows.get_mut(out, HANDLE_BYTES)?;
        let model = self.handles.model(model)?;
        let config = parse_session_config(self.windows.get_mut(config, config_len)?)?;
        #[cfg(target_feature = "atomics")]
        fits_fixed_memory(&model, config.context)?;
        let session = Session::new(&model, config)?;
        let object = Object::Session(Box::new(SessionObject { model, session }));
        let handle = self.handles.insert(object)?;
        self.write(out, &handle.to_le_bytes())
    }

    pub fn prefill(&mut self, session: u64, tokens: u32, n_tokens: u32) -> TrReturn<()> {
        let len = n_tokens.checked_mul(4).ok_or(TrResult::IntegerOverflow)?;
        let ids: Vec<u32> = self
            .windows
            .get_mut(tokens, len)?
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let s = self.handles.session(session)?;
        s.session.prefill(&s.model, &ids)
    }

    pub fn decode(&mut self, session: u64, out: u32) -> TrReturn<()> {
        self.windows.get_mut(out, DECODE_RECORD_BYTES)?;
        let s = self.handles.session(session)?;
        let step = s.session.decode(&s.model)?;
        let mut record = [0u8; 24];
        record[..4].copy_from_slice(&step.token.to_le_bytes());
        record[4..8].copy_from_slice(&(step.done as u32).to_le_bytes());
        record[8..16].copy_from_slice(&step.rng.state.to_le_bytes());
        record[16..].copy_from_slice(&step.rng.increment.to_le_bytes());
        self.write(out, &record)
    }

    pub fn session_prefill_tile(&mut self, session: u64, tile: u32) -> TrReturn<()> {
        let s = self.handles.session(session)?;
        s.session.set_prefill_tile(&s.model, tile as usize)
    }

    pub fn session_rewind(&mut self, session: u64, keep: u32) -> TrReturn<()> {
        let s = self.handles.session(session)?;
        s.session.rewind(&s.model, keep as usize)
    }

    pub fn session_digest(&mut self, session: u64, out: u32) -> TrReturn<()> {
        self.windows.get_mut(out, DIGEST_RECORD_BYTES)?;
        let s = self.handles.session(session)?;
        let (position, logits, kv) = s.session.state_digest(&s.model);
        let mut record = [0u8; DIGEST_RECORD_BYTES as usize];
        record[..8].copy_from_slice(&(position as u64).to_le_bytes());
        record[8..16].copy_from_slice(&logits.to_le_bytes());
        record[16..].copy_from_slice(&kv.to_le_bytes());
        self.write(out, &record)
    }

    pub fn session_free(&mut self, session: u64) -> TrReturn<()> {
        self.handles.session(session)?;
        self.handles.remove(session)
    }

    pub fn model_free(&mut self, model: u64) -> TrReturn<()> {
        self.handles.model(model)?;
        self.handles.remove(model)
    }

    pub fn path_counters(&mut self, out: u32) -> TrReturn<()> {
        let (scalar, simd) = kernels::path_counters();
        #[cfg(target_feature = "atomics")]
        let (workers, participated) = threads::participation();
        #[cfg(not(target_feature = "atomics"))]
        let (workers, participated) = (0u32, 0u32); // no worker pool in this lane
        let mut record = [0u8; COUNTERS_RECORD_BYTES as usize];
        record[..8].copy_from_slice(&scalar.to_le_bytes());
        record[8..16].copy_from_slice(&simd.to_le_bytes());
        record[16..20].copy_from_slice(&workers.to_le_bytes());
        record[20..24].copy_from_slice(&participated.to_le_bytes());
        record[24..].copy_from_slice(&kernels::relaxed_calls().to_le_bytes());
        self.write(out, &record)
    }
}

/// The threads lane's memory never grows (the host creates it with initial == maximum, sized
/// from the plan): a session whose plan (prefill and decode peaks, the model in place, the pool's
/// stack regions) exceeds it is refused with `OutOfMemory` before any of it is allocated, never
/// left to run out part-way.
#[cfg(target_feature = "atomics")]
fn fits_fixed_memory(model: &Model, context: u32) -> TrReturn<()> {
    let context = if context == 0 { model.config.max_context } else { context };
    let plan = memory::plan_loaded(&model.config, model.resident_bytes(), context, 1)?;
    if plan.peak_prefill.max(plan.steady_decode) > memplan::memory_bytes() {
        return Err(TrResult::OutOfMemory);
    }
    Ok(())
}

// ---- the one instance behind the exports ------------------------------------------------

struct Global(UnsafeCell<Option<Runtime>>);

// The scalar and simd128 lanes are single-threaded; exports never re-enter each other.
unsafe impl Sync for Global {}

static RUNTIME: Global = Global(UnsafeCell::new(None));

fn with_runtime<T>(f: impl FnOnce(&mut Runtime) -> T) -> T {
    // SAFETY: single-threaded module instance and no re-entrant export calls, so this is the
    // only live reference for the duration of `f`.
    let slot = unsafe { &mut *RUNTIME.0.get() };
    f(slot.get_or_insert_with(Runtime::default))
}

pub fn lane() -> u32 {
    if cfg!(all(target_feature = "relaxed-simd", target_feature = "atomics")) {
        LANE_RELAXED_SIMD128_THREADS
    } else if cfg!(target_feature = "relaxed-simd") {
        LANE_RELAXED_SIMD128
    } else if cfg!(target_feature = "atomics") {
        LANE_SIMD128_THREADS
    } else if cfg!(target_feature = "simd128") {
        LANE_SIMD128
    } else {
        LANE_SCALAR
    }
}

#[no_mangle]
pub extern "C" fn tr_abi_version() -> u32 {
    ABI_VERSION
}

#[no_mangle]
pub extern "C" fn tr_runtime_semantics() -> u32 {
    RUNTIME_SEMANTICS
}

#[no_mangle]
pub extern "C" fn tr_lane() -> u32 {
    lane()
}

/// Address of a fresh zeroed transfer window of `len` bytes, or 0 if `len` is 0 or memory
/// is exhausted.
#[no_mangle]
pub extern "C" fn tr_alloc(len: u32) -> u32 {
    with_runtime(|rt| rt.alloc(len))
}

#[no_mangle]
pub extern "C" fn tr_free(addr: u32, len: u32) -> i32 {
    with_runtime(|rt| code(rt.free(addr, len)))
}

#[no_mangle]
pub extern "C" fn tr_model_load(addr: u32, len: u32, out_handle: u32) -> i32 {
    with_runtime(|rt| code(rt.model_load(addr, len, out_handle)))
}

#[no_mangle]
pub extern "C" fn tr_preflight(model: u64, context: u32, budget: u64, out: u32) -> i32 {
    with_runtime(|rt| code(rt.preflight(model, context, budget, out)))
}

#[no_mangle]
pub extern "C" fn tr_session_new(model: u64, config: u32, config_len: u32, out_handle: u32) -> i32 {
    with_runtime(|rt| code(rt.session_new(model, config, config_len, out_handle)))
}

#[no_mangle]
pub extern "C" fn tr_prefill(session: u64, tokens: u32, n_tokens: u32) -> i32 {
    compute(&|| with_runtime(|rt| code(rt.prefill(session, tokens, n_tokens))))
}

#[no_mangle]
pub extern "C" fn tr_decode(session: u64, out: u32) -> i32 {
    compute(&|| with_runtime(|rt| code(rt.decode(session, out))))
}

/// Tokens per prefill tile of a session (1..=512, at most its context; default 16).
#[no_mangle]
pub extern "C" fn tr_session_prefill_tile(session: u64, tile: u32) -> i32 {
    with_runtime(|rt| code(rt.session_prefill_tile(session, tile)))
}

/// Keeps the first `keep` committed tokens (KV prefix reuse): drops the pending token, restarts
/// the sampler from (seed, stream), invalidates the logits; `keep` > position: `InvalidArgument`.
#[no_mangle]
pub extern "C" fn tr_session_rewind(session: u64, keep: u32) -> i32 {
    with_runtime(|rt| code(rt.session_rewind(session, keep)))
}

/// `out` <- [u64 position, u64 logits digest (0 = none), u64 K/V digest]: 24 bytes.
#[no_mangle]
pub extern "C" fn tr_session_digest(session: u64, out: u32) -> i32 {
    with_runtime(|rt| code(rt.session_digest(session, out)))
}

#[no_mangle]
pub extern "C" fn tr_session_free(session: u64) -> i32 {
    with_runtime(|rt| code(rt.session_free(session)))
}

#[no_mangle]
pub extern "C" fn tr_model_free(model: u64) -> i32 {
    with_runtime(|rt| code(rt.model_free(model)))
}

#[no_mangle]
pub extern "C" fn tr_self_test() -> i32 {
    compute(&|| selftest::run(&mut |_, _| {}).code())
}

/// Runs a compute export: on the threads lane's pool (worker 0, the leader waiting) when one
/// is running, here otherwise.
fn compute(op: &(dyn Fn() -> i32 + Sync + '_)) -> i32 {
    #[cfg(target_feature = "atomics")]
    return threads::operation(op);
    #[cfg(not(target_feature = "atomics"))]
    op()
}

#[no_mangle]
pub extern "C" fn tr_path_counters(out: u32) -> i32 {
    with_runtime(|rt| code(rt.path_counters(out)))
}

#[cfg(test)]
mod tests;
