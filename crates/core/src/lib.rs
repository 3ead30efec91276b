//! tinyrustlm-core: the normative scalar runtime (model contract, kernels, sampler).
//! `no_std` + `alloc`; no libm: `exp` and `sqrt` are implemented in `math`.
//! The contract is crates/core/CONTRACT.md, versioned by `RUNTIME_SEMANTICS`.
#![no_std]

extern crate alloc;

pub mod admission;
pub mod kernels;
pub mod math;
pub mod memory;
pub mod model;
pub mod pcg32;
pub mod quant;
pub mod result;
pub mod sampler;
pub mod selftest;
pub mod session;
pub mod testdata;
pub mod tokenizer;

pub use result::{TrResult, TrReturn};

/// Version of the numerical and behavioural contract (operator order, exp_det, sampler order,
/// tokenizer, model format). Any change to an output bit bumps it.
pub const RUNTIME_SEMANTICS: u32 = 1;
/// Version of the `tr_*` ABI (signatures, record layouts, handle encoding).
pub const ABI_VERSION: u32 = 1;
