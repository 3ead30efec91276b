//! Host transfer windows: the only memory a `tr_*` export reads or writes on the host's behalf.
//! On wasm32 a window's address is its real linear-memory address (the host writes there);
//! natively (unit tests) addresses are synthetic, and data is always reached through the Box.

use tinyrustlm_core::{TrResult, TrReturn};

struct Window {
    addr: u32,
    data: Box<[u8]>,
}

#[derive(Default)]
pub struct Windows {
    live: Vec<Window>,
    #[cfg(not(target_arch = "wasm32"))]
    next_synthetic: u32,
}

impl Windows {
    pub fn alloc(&mut self, len: u32) -> u32 {
        if len == 0 || self.live.try_reserve(1).is_err() {
            return 0;
        }
        let mut data = Vec::new();
        if data.try_reserve_exact(len as usize).is_err() {
            return 0;
        }
        data.resize(len as usize, 0u8);
        let data = data.into_boxed_slice();
        let addr = self.address_of(&data);
        self.live.push(Window { addr, data });
        addr
    }

    #[cfg(target_arch = "wasm32")]
    fn address_of(&mut self, data: &[u8]) -> u32 {
        data.as_ptr() as u32
    }

    #[cfg(not(target_arch = "wasm32"))]
    fn address_of(&mut self, data: &[u8]) -> u32 {
        // 64 KiB-aligned synthetic addresses, never 0, windows never overlap (<= 4 GiB total).
        let addr = self.next_synthetic.max(0x1_0000);
        let span = ((data.len() as u32).wrapping_add(0xffff)) & !0xffff;
        self.next_synthetic = addr.wrapping_add(span.max(0x1_0000));
        addr
    }

    pub fn free(&mut self, addr: u32, len: u32) -> TrReturn<()> {
        let index = self
            .live
            .iter()
            .position(|w| w.addr == addr && w.data.len() == len as usize)
            .ok_or(TrResult::InvalidArgument)?;
        self.live.swap_remove(index);
        Ok(())
    }

    /// Removes the window that is exactly `len` bytes at `addr` and hands its bytes over
    /// (`tr_model_adopt`); InvalidArgument when no window is exactly that.
    pub fn take(&mut self, addr: u32, len: u32) -> TrReturn<Box<[u8]>> {
        let index = self
            .live
            .iter()
            .position(|w| w.addr == addr && w.data.len() == len as usize)
            .ok_or(TrResult::InvalidArgument)?;
        Ok(self.live.swap_remove(index).data)
    }

    /// `len` bytes at `addr`, entirely inside one live window; otherwise Bounds.
    pub fn get_mut(&mut self, addr: u32, len: u32) -> TrReturn<&mut [u8]> {
        let end = addr.checked_add(len).ok_or(TrResult::Bounds)?;
        for w in self.live.iter_mut() {
            let w_end = w.addr as u64 + w.data.len() as u64;
            if addr >= w.addr && end as u64 <= w_end {
                let start = (addr - w.addr) as usize;
                return Ok(&mut w.data[start..start + len as usize]);
            }
        }
        Err(TrResult::Bounds)
    }
}
