//! The memory plan per lane and worker count, and what measures it (issue 33 items 1, 2):
//! `tr_plan_header` (the itemized plan from a model's header and directory, before download),
//! `tr_model_adopt` (load in place: the transfer window holding the file becomes the model's
//! bytes, no second copy), and the allocator's high-water mark (`tr_heap_stats`,
//! `tr_heap_reset_peak`) on every wasm32 lane. Record layouts: CONTRACT.md §9.

use core::alloc::{GlobalAlloc, Layout};
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use tinyrustlm_core::admission;
use tinyrustlm_core::memory::PART_NAMES;
use tinyrustlm_core::model::Model;
use tinyrustlm_core::{TrResult, TrReturn};

use crate::handles::Object;
use crate::{code, with_runtime, Runtime, HANDLE_BYTES};

/// `tr_plan_header`: the parts (PART_NAMES order), peak_load, peak_prefill, steady_decode,
/// then the largest part's index; u64 each.
pub const PLAN_RECORD_BYTES: u32 = 8 * (PART_NAMES.len() as u32 + 4);
/// `tr_heap_stats`: live bytes, high-water bytes, static base (`__heap_base`), memory bytes.
pub const HEAP_RECORD_BYTES: u32 = 32;

/// Counts the bytes live in the inner allocator and their high-water mark (requested sizes;
/// the allocator's own headers are the plan's allocator part).
pub struct Counting<A> {
    inner: A,
    live: AtomicUsize,
    peak: AtomicUsize,
}

impl<A> Counting<A> {
    pub const fn new(inner: A) -> Self {
        Counting { inner, live: AtomicUsize::new(0), peak: AtomicUsize::new(0) }
    }

    fn grew(&self, n: usize) {
        let live = self.live.fetch_add(n, Relaxed) + n;
        self.peak.fetch_max(live, Relaxed);
    }

    pub fn live(&self) -> usize {
        self.live.load(Relaxed)
    }

    pub fn peak(&self) -> usize {
        self.peak.load(Relaxed)
    }

    pub fn reset_peak(&self) {
        self.peak.store(self.live.load(Relaxed), Relaxed);
    }
}

unsafe impl<A: GlobalAlloc> GlobalAlloc for Counting<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = self.inner.alloc(layout);
        if !p.is_null() {
            self.grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = self.inner.alloc_zeroed(layout);
        if !p.is_null() {
            self.grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        self.inner.dealloc(p, layout);
        self.live.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // counted as a new block beside the old one: what a moving realloc holds at its peak
        self.grew(new_size);
        let q = self.inner.realloc(p, layout, new_size);
        let freed = if q.is_null() { new_size } else { layout.size() };
        self.live.fetch_sub(freed, Relaxed);
        q
    }
}

impl Runtime {
    /// The itemized plan of the model whose header + directory are the window bytes `(addr,
    /// len)`, on a lane with `workers` (0 = unthreaded), loaded in place (`tr_model_adopt`)
    /// when `in_place` != 0.
    pub fn plan_header(
        &mut self,
        (addr, len): (u32, u32),
        file_length: u64,
        context: u32,
        workers: u32,
        in_place: u32,
        out: u32,
    ) -> TrReturn<()> {
        self.windows.get_mut(out, PLAN_RECORD_BYTES)?;
        let prefix = self.windows.get_mut(addr, len)?;
        let p = admission::plan_from_prefix_with(prefix, file_length, context, workers, in_place == 0)?;
        let mut record = [0u8; PLAN_RECORD_BYTES as usize];
        let values =
            p.parts().into_iter().chain([p.peak_load, p.peak_prefill, p.steady_decode, p.largest_part() as u64]);
        for (i, v) in values.enumerate() {
            record[8 * i..8 * i + 8].copy_from_slice(&v.to_le_bytes());
        }
        self.windows.get_mut(out, PLAN_RECORD_BYTES)?.copy_from_slice(&record);
        Ok(())
    }

    /// Load in place: the window at `addr` (exactly, `len` bytes) becomes the model's bytes and
    /// is gone from the host's windows whatever the result; the handle goes to `out`, which
    /// must lie in another window (checked first, nothing taken if it does not).
    pub fn model_adopt(&mut self, addr: u32, len: u32, out: u32) -> TrReturn<()> {
        self.windows.get_mut(out, HANDLE_BYTES)?;
        let end = addr as u64 + len as u64;
        if (out as u64) < end && out as u64 + HANDLE_BYTES as u64 > addr as u64 {
            return Err(TrResult::InvalidArgument);
        }
        let bytes = self.windows.take(addr, len)?;
        let model = Model::load(bytes.into_vec())?;
        let handle = self.handles.insert(Object::Model(std::rc::Rc::new(model)))?;
        self.windows.get_mut(out, HANDLE_BYTES)?.copy_from_slice(&handle.to_le_bytes());
        Ok(())
    }
}

#[no_mangle]
pub extern "C" fn tr_plan_header(
    addr: u32,
    len: u32,
    file_length: u64,
    context: u32,
    workers: u32,
    in_place: u32,
    out: u32,
) -> i32 {
    with_runtime(|rt| code(rt.plan_header((addr, len), file_length, context, workers, in_place, out)))
}

/// Bytes of the record `tr_plan_header` writes.
#[no_mangle]
pub extern "C" fn tr_plan_record_bytes() -> u32 {
    PLAN_RECORD_BYTES
}

#[no_mangle]
pub extern "C" fn tr_model_adopt(addr: u32, len: u32, out_handle: u32) -> i32 {
    with_runtime(|rt| code(rt.model_adopt(addr, len, out_handle)))
}

#[cfg(target_arch = "wasm32")]
fn static_base() -> u64 {
    extern "C" {
        static __heap_base: u8;
    }
    // SAFETY: only the symbol's address is taken.
    unsafe { &__heap_base as *const u8 as usize as u64 }
}

/// The Wasm memory's size now, in bytes.
#[cfg(target_arch = "wasm32")]
pub(crate) fn memory_bytes() -> u64 {
    core::arch::wasm32::memory_size(0) as u64 * 65536
}

#[cfg(target_arch = "wasm32")]
#[no_mangle]
pub extern "C" fn tr_heap_stats(out: u32) -> i32 {
    let values = [crate::HEAP.live() as u64, crate::HEAP.peak() as u64, static_base(), memory_bytes()];
    with_runtime(|rt| {
        let record = match rt.windows.get_mut(out, HEAP_RECORD_BYTES) {
            Ok(r) => r,
            Err(e) => return e.code(),
        };
        for (i, v) in values.iter().enumerate() {
            record[8 * i..8 * i + 8].copy_from_slice(&v.to_le_bytes());
        }
        0
    })
}

/// Starts a new high-water mark at the bytes live now (before a phase is measured).
#[cfg(target_arch = "wasm32")]
#[no_mangle]
pub extern "C" fn tr_heap_reset_peak() {
    crate::HEAP.reset_peak();
}
