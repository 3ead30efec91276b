//! Global allocator of the simd128-threads lane (compiled only with `atomics`).
//!
//! The threads lane imports a shared memory the host creates with initial == maximum, so
//! `memory.grow` always fails and std's allocator (which only obtains memory
//! by growing) cannot allocate at all. This allocator hands out the fixed
//! region [__heap_base, memory.size) instead: first fit over an address-sorted
//! free list, blocks coalesced on free. A spin lock makes it safe, although by
//! contract one instance allocates at a time: the leader, or worker 0 while it
//! runs an operation for the blocked leader (threads.rs).

use core::alloc::{GlobalAlloc, Layout};
use core::ptr;
use core::sync::atomic::{AtomicU32, Ordering};

/// Every block starts with this header; sizes include it and are multiples of ALIGN.
#[repr(C)]
struct Block {
    size: usize,
    next: *mut Block, // free list only
}

const ALIGN: usize = 16;
const HEADER: usize = 16; // size_of::<Block>() rounded up to ALIGN

pub struct SharedHeap {
    lock: AtomicU32,
}

struct State {
    initialised: bool,
    free: *mut Block,
}

static mut STATE: State = State { initialised: false, free: ptr::null_mut() };

extern "C" {
    static __heap_base: u8;
}

const fn align_up(n: usize, a: usize) -> usize {
    (n + a - 1) & !(a - 1)
}

impl SharedHeap {
    pub const fn new() -> Self {
        SharedHeap { lock: AtomicU32::new(0) }
    }

    fn lock(&self) {
        while self.lock.compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
            core::hint::spin_loop();
        }
    }

    fn unlock(&self) {
        self.lock.store(0, Ordering::Release);
    }
}

unsafe fn init(st: &mut State) {
    let start = align_up(&__heap_base as *const u8 as usize, ALIGN);
    // 4 GiB of memory would not fit a wasm32 usize: stop one page short of it
    let end = (core::arch::wasm32::memory_size(0) as u64 * 65536).min(u32::MAX as u64 - 65535) as usize;
    if end > start + HEADER {
        let b = start as *mut Block;
        (*b).size = (end - start) & !(ALIGN - 1);
        (*b).next = ptr::null_mut();
        st.free = b;
    }
    st.initialised = true;
}

/// First fit; returns the block's payload or null.
unsafe fn take(st: &mut State, need: usize) -> *mut u8 {
    let mut prev: *mut *mut Block = &mut st.free;
    let mut cur = st.free;
    while !cur.is_null() {
        if (*cur).size >= need {
            if (*cur).size - need >= HEADER + ALIGN {
                // split: the tail stays free in place of `cur`
                let rest = (cur as usize + need) as *mut Block;
                (*rest).size = (*cur).size - need;
                (*rest).next = (*cur).next;
                (*cur).size = need;
                *prev = rest;
            } else {
                *prev = (*cur).next;
            }
            return (cur as usize + HEADER) as *mut u8;
        }
        prev = &mut (*cur).next;
        cur = (*cur).next;
    }
    ptr::null_mut()
}

/// Insert in address order and merge with both neighbours.
unsafe fn give(st: &mut State, b: *mut Block) {
    let mut prev: *mut Block = ptr::null_mut();
    let mut cur = st.free;
    while !cur.is_null() && (cur as usize) < (b as usize) {
        prev = cur;
        cur = (*cur).next;
    }
    (*b).next = cur;
    if !cur.is_null() && b as usize + (*b).size == cur as usize {
        (*b).size += (*cur).size;
        (*b).next = (*cur).next;
    }
    if prev.is_null() {
        st.free = b;
    } else if prev as usize + (*prev).size == b as usize {
        (*prev).size += (*b).size;
        (*prev).next = (*b).next;
    } else {
        (*prev).next = b;
    }
}

unsafe impl GlobalAlloc for SharedHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // Over-aligned requests get `align` extra bytes and a back pointer to the block.
        let extra = if layout.align() > ALIGN { layout.align() } else { 0 };
        let need = match layout.size().checked_add(HEADER + extra + ALIGN - 1) {
            Some(n) => n & !(ALIGN - 1),
            None => return ptr::null_mut(),
        };
        self.lock();
        let st = &mut *ptr::addr_of_mut!(STATE);
        if !st.initialised {
            init(st);
        }
        let p = take(st, need);
        self.unlock();
        if p.is_null() || extra == 0 {
            return p;
        }
        let aligned = align_up(p as usize + ALIGN, layout.align());
        *((aligned - 4) as *mut u32) = p as u32;
        aligned as *mut u8
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        let payload = if layout.align() > ALIGN { *((p as usize - 4) as *const u32) as usize } else { p as usize };
        self.lock();
        give(&mut *ptr::addr_of_mut!(STATE), (payload - HEADER) as *mut Block);
        self.unlock();
    }
}
