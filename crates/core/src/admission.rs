//! Model admission before allocation: the memory plan of a model from its header and directory
//! alone (the reference's "tr_preflight must ... reject a model/context pair before
//! allocating"). A host holding the whole file passes only its first bytes; nothing here
//! allocates more than the directory's entry list.

use crate::memory::{self, MemoryPlan, PlanInputs};
use crate::model::{parse_directory_of_length, parse_header_of_length, DIR_ENTRY_BYTES, HEADER_BYTES};
use crate::quant::Layout;
use crate::result::{add64, mul64, TrResult, TrReturn};

/// Bytes of a file's prefix that `plan_from_prefix` needs: header plus directory (reads the
/// tensor count from the header; `Bounds` when `header` is shorter than 64 bytes).
pub fn prefix_bytes(header: &[u8]) -> TrReturn<u64> {
    if header.len() < HEADER_BYTES {
        return Err(TrResult::Bounds);
    }
    let count = u32::from_le_bytes([header[52], header[53], header[54], header[55]]) as u64;
    add64(HEADER_BYTES as u64, mul64(count, DIR_ENTRY_BYTES as u64)?)
}

/// The memory plan `Model::load` + one session of `context` tokens would need, from the
/// first bytes of a model file `file_length` bytes long, on an unthreaded lane with the model
/// copied in (`tr_preflight_header`). Header and directory get the same checks as at load
/// (same error codes); tensor values are not read, so a model admitted here can still be
/// refused by `Model::load` (non-finite values).
pub fn plan_from_prefix(prefix: &[u8], file_length: u64, context: u32) -> TrReturn<MemoryPlan> {
    plan_from_prefix_with(prefix, file_length, context, 0, true)
}

/// `plan_from_prefix` for a lane with `workers` (0 = unthreaded) and the given load mode.
pub fn plan_from_prefix_with(
    prefix: &[u8],
    file_length: u64,
    context: u32,
    workers: u32,
    load_copy: bool,
) -> TrReturn<MemoryPlan> {
    let config = parse_header_of_length(prefix, file_length)?;
    let entries = parse_directory_of_length(prefix, &config, file_length)?;
    // M_weights = the file plus its f32 tensors decoded once (Model::resident_bytes).
    let mut floats = 0u64;
    for e in entries.iter().filter(|e| e.layout == Layout::F32) {
        floats = add64(floats, mul64(e.rows as u64, e.cols as u64)?)?;
    }
    let weights = add64(file_length, mul64(floats, 4)?)?;
    let inputs =
        PlanInputs { file_bytes: file_length, weights, tensors: entries.len() as u64, context, workers, load_copy };
    memory::plan_with(&config, &inputs)
}
