// Constants shared with Rust and Python: the ABI's export list, kernel sets, self-test
// categories, model layouts. Kept current by tests/loader/test_constants.py against their one
// source each (crates/core/src, crates/core/CONTRACT.md).

/** `tr_lane()` -> kernel set (crates/core/src/kernels/mod.rs KERNEL_SET). */
export const KERNEL_SETS = Object.freeze(['scalar-v1', 'simd128-v1', 'simd128-threads-v1']);
/** Self-test category ids of `tr_self_test_detail` (crates/core/src/selftest/categories.rs NAMES). */
export const CATEGORIES = Object.freeze(['scalar', 'simd128', 'atomics', 'thread_participation', 'tokenizer', 'prng']);
/** Model format v1 layout ids (crates/core/src/quant.rs) -> receipt names. */
export const LAYOUTS = Object.freeze(['f32', 'q8-block-v1', 'q4-block-v1']);
/** Exports every lane must have for this loader (ABI 1 plus the loader exports, CONTRACT.md §9). */
export const REQUIRED_EXPORTS = Object.freeze([
  'memory', 'tr_abi_version', 'tr_runtime_semantics', 'tr_lane', 'tr_alloc', 'tr_free',
  'tr_model_load', 'tr_model_prefix_bytes', 'tr_preflight_header', 'tr_session_new',
  'tr_prefill', 'tr_decode', 'tr_session_free', 'tr_model_free', 'tr_self_test_detail',
  'tr_self_test_detail_bytes', 'tr_path_counters',
]);
/** Exports the threads lane has besides. */
export const THREADS_EXPORTS = Object.freeze(['tr_atomics_self_test', 'tr_worker_counters', 'tr_pool_start']);
