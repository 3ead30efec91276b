//! The receipt's self-test categories (runtime-architecture.md, "Capability receipt":
//! scalar, simd128, atomics, thread_participation, tokenizer, prng) and which category each
//! startup self-test belongs to. Category ids are ABI (`tr_self_test_detail`, CONTRACT.md §9).

use alloc::vec::Vec;

use crate::result::TrResult;

pub const SCALAR: u32 = 0;
pub const SIMD128: u32 = 1;
pub const ATOMICS: u32 = 2;
pub const THREAD_PARTICIPATION: u32 = 3;
pub const TOKENIZER: u32 = 4;
pub const PRNG: u32 = 5;

/// Receipt field of each category id, indexed by id.
pub const NAMES: [&str; 6] = ["scalar", "simd128", "atomics", "thread_participation", "tokenizer", "prng"];

/// The category of tests that run the build's active kernel set (kernels/mod.rs `active`).
pub const ACTIVE_KERNELS: u32 = if cfg!(target_feature = "simd128") { SIMD128 } else { SCALAR };

/// (test name, category): one row per entry of `selftest::TESTS` (a test keeps them equal).
/// RoPE and the math functions run the scalar kernels in every lane; softmax is the active
/// set's (CONTRACT.md §8).
pub const OF_TEST: [(&str, u32); 13] = [
    ("math.sqrt_exp", SCALAR),
    ("kernel.matvec_f32", ACTIVE_KERNELS),
    ("kernel.matvec_q8", ACTIVE_KERNELS),
    ("kernel.matvec_q4", ACTIVE_KERNELS),
    ("kernel.int8_exact", ACTIVE_KERNELS),
    ("kernel.rmsnorm", ACTIVE_KERNELS),
    ("kernel.rope", SCALAR),
    ("kernel.softmax", ACTIVE_KERNELS),
    ("kernel.attention", ACTIVE_KERNELS),
    ("prng.pcg32", PRNG),
    ("sampler", PRNG),
    ("tokenizer", TOKENIZER),
    ("e2e.tiny_greedy", ACTIVE_KERNELS),
];

/// The category of test `name`, or None for a test this table does not know.
pub fn category_of(name: &str) -> Option<u32> {
    OF_TEST.iter().find(|(n, _)| *n == name).map(|(_, c)| *c)
}

/// One test's outcome: its name, its category and its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub name: &'static str,
    pub category: u32,
    pub result: TrResult,
}

/// Runs every self-test (`selftest::run`) and returns the overall result and each outcome in
/// table order. A test missing from `OF_TEST` fails closed as `InternalInvariant`.
pub fn run_detailed() -> (TrResult, Vec<Outcome>) {
    let mut outcomes = Vec::new();
    let overall = super::run(&mut |name, result| {
        let row = OF_TEST.iter().find(|(n, _)| *n == name);
        outcomes.push(match row {
            Some((n, c)) => Outcome { name: n, category: *c, result },
            None => Outcome { name: "unknown", category: SCALAR, result: TrResult::InternalInvariant },
        });
    });
    let unknown = outcomes.iter().any(|o| o.result == TrResult::InternalInvariant && o.name == "unknown");
    (if unknown && overall == TrResult::Ok { TrResult::InternalInvariant } else { overall }, outcomes)
}
