//! The three tensor layouts of model format v1 and their exact storage sizes.
//! One q8 and one q4 layout, fixed block size; the runtime never runs layout logic from a file.

use crate::result::{add64, mul64, TrResult, TrReturn};

/// Elements per quantization block (both q8 and q4).
pub const BLOCK: usize = 32;
/// q8-block-v1: f32 LE scale, then 32 signed i8 codes; weight = scale * code.
pub const Q8_BLOCK_BYTES: usize = 4 + BLOCK;
/// q4-block-v1: f32 LE scale, then 16 bytes; element 2i is the low nibble of byte i, 2i+1 the
/// high nibble; weight = scale * (nibble - 8).
pub const Q4_BLOCK_BYTES: usize = 4 + BLOCK / 2;

/// Tensor layout ids as stored in the directory (u32).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    F32 = 0,
    Q8 = 1,
    Q4 = 2,
}

/// (id, layout, name): the one table of layouts.
pub const LAYOUTS: [(u32, Layout, &str); 3] =
    [(0, Layout::F32, "f32"), (1, Layout::Q8, "q8-block-v1"), (2, Layout::Q4, "q4-block-v1")];

impl Layout {
    pub fn from_id(id: u32) -> TrReturn<Layout> {
        for (code, layout, _) in LAYOUTS {
            if code == id {
                return Ok(layout);
            }
        }
        Err(TrResult::UnsupportedQuantization)
    }

    pub fn name(self) -> &'static str {
        LAYOUTS[self as usize].2
    }

    /// Bytes of one stored row of `cols` logical elements (tail block padded to a full block;
    /// padding codes are stored as zero and never read as weights).
    pub fn row_bytes(self, cols: u64) -> TrReturn<u64> {
        match self {
            Layout::F32 => mul64(cols, 4),
            Layout::Q8 => mul64(blocks(cols)?, Q8_BLOCK_BYTES as u64),
            Layout::Q4 => mul64(blocks(cols)?, Q4_BLOCK_BYTES as u64),
        }
    }

    pub fn tensor_bytes(self, rows: u64, cols: u64) -> TrReturn<u64> {
        mul64(rows, self.row_bytes(cols)?)
    }
}

fn blocks(cols: u64) -> TrReturn<u64> {
    Ok(add64(cols, BLOCK as u64 - 1)? / BLOCK as u64)
}

/// Block count of a row of `cols` elements (for in-memory shapes already validated).
pub fn row_blocks(cols: usize) -> usize {
    (cols + (BLOCK - 1)) / BLOCK
}

/// Little-endian f32 at `at` of a slice known to hold it.
pub fn read_f32(bytes: &[u8], at: usize) -> Option<f32> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    Some(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_cover_tails() {
        assert_eq!(Layout::Q8.row_bytes(1), Ok(36));
        assert_eq!(Layout::Q8.row_bytes(32), Ok(36));
        assert_eq!(Layout::Q8.row_bytes(33), Ok(72));
        assert_eq!(Layout::Q4.row_bytes(64), Ok(40));
        assert_eq!(Layout::F32.tensor_bytes(3, 5), Ok(60));
        assert_eq!(Layout::Q8.tensor_bytes(u64::MAX, 32), Err(TrResult::IntegerOverflow));
        assert_eq!(Layout::from_id(7), Err(TrResult::UnsupportedQuantization));
    }
}

/// A weight matrix [rows, cols] in one of the layouts: f32 values or packed blocks (the
/// kernels' methods on it are in crate::kernels).
#[derive(Clone, Copy)]
pub enum Matrix<'a> {
    F32(&'a [f32]),
    Q8(&'a [u8]),
    Q4(&'a [u8]),
}
