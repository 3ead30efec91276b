//! `TrResult`: the one error taxonomy (runtime-architecture.md, "Error taxonomy").
//! Codes are ABI: never renumber, only append.

/// Result codes returned by every `tr_*` export (as i32) and by every fallible core function.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrResult {
    Ok = 0,
    InvalidArgument = 1,
    UnsupportedAbi = 2,
    UnsupportedFeature = 3,
    InvalidHandle = 4,
    StaleHandle = 5,
    Bounds = 6,
    Alignment = 7,
    IntegerOverflow = 8,
    OutOfMemory = 9,
    InvalidModel = 10,
    HashMismatch = 11,
    UnsupportedQuantization = 12,
    UnsupportedShape = 13,
    ContextExceeded = 14,
    Cancelled = 15,
    WorkerFailure = 16,
    SelfTestFailed = 17,
    NumericalFailure = 18,
    TrapRecoveredByHost = 19,
    InternalInvariant = 20,
}

/// Every code with its stable name, in code order (one table: names, CLI output, tests).
pub const ALL_RESULTS: [(TrResult, &str); 21] = [
    (TrResult::Ok, "Ok"),
    (TrResult::InvalidArgument, "InvalidArgument"),
    (TrResult::UnsupportedAbi, "UnsupportedAbi"),
    (TrResult::UnsupportedFeature, "UnsupportedFeature"),
    (TrResult::InvalidHandle, "InvalidHandle"),
    (TrResult::StaleHandle, "StaleHandle"),
    (TrResult::Bounds, "Bounds"),
    (TrResult::Alignment, "Alignment"),
    (TrResult::IntegerOverflow, "IntegerOverflow"),
    (TrResult::OutOfMemory, "OutOfMemory"),
    (TrResult::InvalidModel, "InvalidModel"),
    (TrResult::HashMismatch, "HashMismatch"),
    (TrResult::UnsupportedQuantization, "UnsupportedQuantization"),
    (TrResult::UnsupportedShape, "UnsupportedShape"),
    (TrResult::ContextExceeded, "ContextExceeded"),
    (TrResult::Cancelled, "Cancelled"),
    (TrResult::WorkerFailure, "WorkerFailure"),
    (TrResult::SelfTestFailed, "SelfTestFailed"),
    (TrResult::NumericalFailure, "NumericalFailure"),
    (TrResult::TrapRecoveredByHost, "TrapRecoveredByHost"),
    (TrResult::InternalInvariant, "InternalInvariant"),
];

impl TrResult {
    pub const fn code(self) -> i32 {
        self as i32
    }

    pub fn name(self) -> &'static str {
        ALL_RESULTS[self as usize].1
    }

    /// `Ok` for `Ok(())`, the error code otherwise: how a `Result` crosses the ABI.
    pub fn of<T>(result: &Result<T, TrResult>) -> TrResult {
        match result {
            Ok(_) => TrResult::Ok,
            Err(code) => *code,
        }
    }
}

/// Core functions return `Result<T, TrResult>`; the error is never `TrResult::Ok`.
pub type TrReturn<T> = Result<T, TrResult>;

/// Checked arithmetic on model-derived numbers: every overflow is `IntegerOverflow`.
pub fn mul(a: usize, b: usize) -> TrReturn<usize> {
    a.checked_mul(b).ok_or(TrResult::IntegerOverflow)
}

pub fn add(a: usize, b: usize) -> TrReturn<usize> {
    a.checked_add(b).ok_or(TrResult::IntegerOverflow)
}

pub fn mul64(a: u64, b: u64) -> TrReturn<u64> {
    a.checked_mul(b).ok_or(TrResult::IntegerOverflow)
}

pub fn add64(a: u64, b: u64) -> TrReturn<u64> {
    a.checked_add(b).ok_or(TrResult::IntegerOverflow)
}

/// u64 (file offsets) or u32 (header fields) to usize without wrapping on wasm32.
pub fn to_usize(v: u64) -> TrReturn<usize> {
    usize::try_from(v).map_err(|_| TrResult::IntegerOverflow)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_in_code_order() {
        for (i, (code, name)) in ALL_RESULTS.iter().enumerate() {
            assert_eq!(code.code() as usize, i);
            assert_eq!(code.name(), *name);
        }
    }
}
