//! Exports the loader (crates/wasm/js/loader.js) needs beyond ABI 1's core set, kept apart
//! from lib.rs: the self-test with per-category detail and the model admission check that
//! runs on a model's header and directory before the model is copied into the runtime.
//! Record layouts: CONTRACT.md §9.

use tinyrustlm_core::admission;
use tinyrustlm_core::selftest::categories;
use tinyrustlm_core::{TrResult, TrReturn};

use crate::{code, compute, with_runtime, Runtime, PREFLIGHT_RECORD_BYTES};

/// Bytes of one test row in the self-test detail record.
pub const DETAIL_ROW_BYTES: u32 = 32;
/// Bytes of a test name in a row (ASCII, NUL padded; longer names are refused by a test).
pub const DETAIL_NAME_BYTES: usize = 24;

/// Record size `tr_self_test_detail` needs: 8-byte head + one row per self-test.
pub fn detail_record_bytes() -> u32 {
    8 + DETAIL_ROW_BYTES * categories::OF_TEST.len() as u32
}

impl Runtime {
    /// Runs every self-test; writes `u32 overall, u32 n, n × {u32 category, i32 code,
    /// [u8; 24] name}`. The export's own result only says whether the record was written.
    pub fn self_test_detail(&mut self, out: u32, len: u32) -> TrReturn<()> {
        let need = detail_record_bytes();
        if len < need {
            return Err(TrResult::InvalidArgument);
        }
        self.windows.get_mut(out, need)?; // check the output before the work
        let (overall, outcomes) = categories::run_detailed();
        let mut record = alloc_record(8 + DETAIL_ROW_BYTES as usize * outcomes.len())?;
        record[..4].copy_from_slice(&(overall.code() as u32).to_le_bytes());
        record[4..8].copy_from_slice(&(outcomes.len() as u32).to_le_bytes());
        for (i, o) in outcomes.iter().enumerate() {
            let at = 8 + i * DETAIL_ROW_BYTES as usize;
            record[at..at + 4].copy_from_slice(&o.category.to_le_bytes());
            record[at + 4..at + 8].copy_from_slice(&o.result.code().to_le_bytes());
            let name = o.name.as_bytes();
            let n = name.len().min(DETAIL_NAME_BYTES);
            record[at + 8..at + 8 + n].copy_from_slice(&name[..n]);
        }
        self.windows.get_mut(out, record.len() as u32)?.copy_from_slice(&record);
        Ok(())
    }

    /// The memory plan of the model whose first `len` bytes (header + directory) are at
    /// `addr` and whose whole file is `file_length` bytes; writes `u64 peak_prefill, u64
    /// steady_decode` like `tr_preflight`, and `OutOfMemory` if either exceeds `budget`.
    pub fn preflight_header(
        &mut self,
        addr: u32,
        len: u32,
        file_length: u64,
        context: u32,
        budget: u64,
        out: u32,
    ) -> TrReturn<()> {
        self.windows.get_mut(out, PREFLIGHT_RECORD_BYTES)?;
        let prefix = self.windows.get_mut(addr, len)?;
        let plan = admission::plan_from_prefix(prefix, file_length, context)?;
        let mut record = [0u8; 16];
        record[..8].copy_from_slice(&plan.peak_prefill.to_le_bytes());
        record[8..].copy_from_slice(&plan.steady_decode.to_le_bytes());
        self.windows.get_mut(out, PREFLIGHT_RECORD_BYTES)?.copy_from_slice(&record);
        if plan.peak_prefill > budget || plan.steady_decode > budget {
            return Err(TrResult::OutOfMemory);
        }
        Ok(())
    }
}

fn alloc_record(len: usize) -> TrReturn<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| TrResult::OutOfMemory)?;
    v.resize(len, 0);
    Ok(v)
}

/// Bytes of the header + directory prefix `tr_preflight_header` needs, from the 64-byte
/// header at `addr` (0 if the window is invalid or the header too short).
#[no_mangle]
pub extern "C" fn tr_model_prefix_bytes(addr: u32, len: u32) -> u32 {
    with_runtime(|rt| {
        let bytes = match rt.windows.get_mut(addr, len) {
            Ok(b) => b,
            Err(_) => return 0,
        };
        match admission::prefix_bytes(bytes) {
            Ok(n) if n <= u32::MAX as u64 => n as u32,
            _ => 0,
        }
    })
}

#[no_mangle]
pub extern "C" fn tr_preflight_header(
    addr: u32,
    len: u32,
    file_length: u64,
    context: u32,
    budget: u64,
    out: u32,
) -> i32 {
    with_runtime(|rt| code(rt.preflight_header(addr, len, file_length, context, budget, out)))
}

/// Size in bytes of the record `tr_self_test_detail` writes.
#[no_mangle]
pub extern "C" fn tr_self_test_detail_bytes() -> u32 {
    detail_record_bytes()
}

#[no_mangle]
pub extern "C" fn tr_self_test_detail(out: u32, len: u32) -> i32 {
    compute(&|| with_runtime(|rt| code(rt.self_test_detail(out, len))))
}

/// Threads lane: atomics on this instance's view of the shared memory (compare-exchange,
/// add, `memory.atomic.wait32` on a changed value and with a zero timeout, a notify nobody
/// waits for). 0 = Ok, else `SelfTestFailed`. Runs on the leader (a worker thread may block).
#[cfg(target_feature = "atomics")]
#[no_mangle]
pub extern "C" fn tr_atomics_self_test() -> i32 {
    TrResult::of(&atomics_self_test()).code()
}

#[cfg(target_feature = "atomics")]
fn atomics_self_test() -> TrReturn<()> {
    use core::arch::wasm32::{memory_atomic_notify, memory_atomic_wait32};
    use core::sync::atomic::{AtomicU32, Ordering::SeqCst};
    static WORD: AtomicU32 = AtomicU32::new(0);
    let check = |ok: bool| if ok { Ok(()) } else { Err(TrResult::SelfTestFailed) };
    WORD.store(7, SeqCst);
    check(WORD.compare_exchange(7, 9, SeqCst, SeqCst) == Ok(7))?;
    check(WORD.compare_exchange(7, 1, SeqCst, SeqCst) == Err(9))?;
    check(WORD.fetch_add(3, SeqCst) == 9 && WORD.load(SeqCst) == 12)?;
    let ptr = &WORD as *const AtomicU32 as *mut i32;
    // SAFETY: `ptr` is a valid, aligned word of this module's (shared) memory.
    let (not_equal, timed_out, woken) =
        unsafe { (memory_atomic_wait32(ptr, 0, 0), memory_atomic_wait32(ptr, 12, 0), memory_atomic_notify(ptr, 1)) };
    check(not_equal == 1 && timed_out == 2 && woken == 0)
}
