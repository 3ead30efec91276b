//! THE kernel dispatch point. Callers use the checked wrappers below; each checks shapes once,
//! then calls the lane's implementation (`active`). Lane modules have identical signatures:
//! slices in, slices out, no allocation, preconditions checked here. `scalar` is always compiled
//! because it is the oracle (golden vectors, self-test comparisons).
//!
//! `simd128` (SIMD128 kernels, same signatures) replaces `scalar` as `active` when the build
//! enables the `simd128` target feature. The threads lane additionally installs a `Parallel`
//! row runner: `matvec` then splits its output rows over the worker pool. A build that also
//! enables `relaxed-simd` (the relaxed lanes) runs the integer tier on `relaxed_int` (one
//! relaxed instruction, exact by construction, CONTRACT.md §12); its f32 tier stays `simd128`.

use core::ops::Range;
use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

use crate::quant::{row_blocks, Layout, BLOCK, Q4_BLOCK_BYTES, Q8_BLOCK_BYTES};
use crate::result::{TrResult, TrReturn};

pub mod int8;
#[cfg(all(target_feature = "simd128", target_feature = "relaxed-simd"))]
pub mod relaxed_int;
pub mod scalar;
#[cfg(target_feature = "simd128")]
pub mod simd128;
#[cfg(target_feature = "simd128")]
pub mod simd128_int;
pub mod tolerance;

#[cfg(not(target_feature = "simd128"))]
use int8 as active_int;
#[cfg(all(target_feature = "simd128", target_feature = "relaxed-simd"))]
use relaxed_int as active_int;
#[cfg(not(target_feature = "simd128"))]
use scalar as active;
#[cfg(target_feature = "simd128")]
use simd128 as active;
#[cfg(all(target_feature = "simd128", not(target_feature = "relaxed-simd")))]
use simd128_int as active_int;

use crate::model::Tier;

/// Kernel set identity reported by receipts; changes with `active` (and the row runner). The
/// relaxed lanes' f32 sets are the simd128 kernels built in those lanes (no relaxed op).
pub const KERNEL_SET: &str = if cfg!(all(target_feature = "relaxed-simd", target_feature = "atomics")) {
    "relaxed-simd128-threads-v1"
} else if cfg!(target_feature = "relaxed-simd") {
    "relaxed-simd128-v1"
} else if cfg!(target_feature = "atomics") {
    "simd128-threads-v1"
} else if cfg!(target_feature = "simd128") {
    "simd128-v1"
} else {
    "scalar-v1"
};

/// Kernel set of the integer tier (format v2 models, CONTRACT.md §10); receipts name both.
pub const KERNEL_SET_INT8: &str = if cfg!(all(target_feature = "relaxed-simd", target_feature = "atomics")) {
    "relaxed-simd128-threads-int8-v1"
} else if cfg!(target_feature = "relaxed-simd") {
    "relaxed-simd128-int8-v1"
} else if cfg!(target_feature = "atomics") {
    "simd128-threads-int8-v1"
} else if cfg!(target_feature = "simd128") {
    "simd128-int8-v1"
} else {
    "scalar-int8-v1"
};

/// The relaxed instructions the active kernels can execute (by their Wasm names; empty on
/// every lane without `relaxed-simd`): the lane policy admits exactly these.
pub const RELAXED_INSTRUCTIONS: &[&str] =
    if cfg!(target_feature = "relaxed-simd") { &["i32x4.relaxed_dot_i8x16_i7x16_add_s"] } else { &[] };

/// The kernel set a model of `tier` runs on this build.
pub fn kernel_set(tier: Tier) -> &'static str {
    match tier {
        Tier::F32 => KERNEL_SET,
        Tier::Int8 => KERNEL_SET_INT8,
    }
}

/// Matrix input: f32 activations (format v1) or int8-quantized ones (format v2, §10), for one
/// token or a tile of T tokens ([T, cols] values; [T, blocks * 32] codes and [T, blocks] scales).
#[derive(Clone, Copy)]
pub enum Acts<'a> {
    F32(&'a [f32]),
    Int8 { codes: &'a [i8], scales: &'a [f32] },
}

impl<'a> Acts<'a> {
    /// Tokens of `cols` elements held (None when the lengths do not fit `cols`).
    fn tokens(&self, cols: usize) -> Option<usize> {
        let blocks = row_blocks(cols);
        match self {
            Acts::F32(x) => (cols > 0 && x.len() % cols == 0).then(|| x.len() / cols),
            Acts::Int8 { codes, scales } => {
                let t = scales.len().checked_div(blocks)?;
                (scales.len() == t * blocks && codes.len() == t * blocks * BLOCK).then_some(t)
            }
        }
    }
}

/// Quantizes one token's activations `x` for the integer tier (`int8::quantize`'s codes and
/// scales bit for bit on every lane): codes [⌈n/32⌉ * 32], scales [⌈n/32⌉]; non-finite input
/// -> `NumericalFailure`.
pub fn quantize(x: &[f32], codes: &mut [i8], scales: &mut [f32]) -> TrReturn<()> {
    active_int::quantize(x, codes, scales)
}

/// RMSNorm of the model's tier: the f32 tier's active kernel, or the integer tier's (lane
/// order in every kernel set, so all lanes agree bit for bit).
pub fn rmsnorm_tier(tier: Tier, x: &[f32], weight: &[f32], eps: f32, out: &mut [f32]) -> TrReturn<()> {
    require(!x.is_empty() && weight.len() == x.len() && out.len() == x.len())?;
    match tier {
        Tier::F32 => active::rmsnorm(x, weight, eps, out),
        Tier::Int8 => active_int::rmsnorm(x, weight, eps, out),
    }
    Ok(())
}

/// `attention_head` of the model's tier (see `rmsnorm_tier`).
pub fn attention_head_tier(
    tier: Tier,
    q: &[f32],
    keys: &[f32],
    values: &[f32],
    scores: &mut [f32],
    out: &mut [f32],
) -> TrReturn<()> {
    let n = scores.len().checked_mul(q.len()).ok_or(TrResult::IntegerOverflow)?;
    require(!q.is_empty() && out.len() == q.len() && keys.len() == n && values.len() == n)?;
    match tier {
        Tier::F32 => active::attention_head(q, keys, values, scores, out),
        Tier::Int8 => active_int::attention_head(q, keys, values, scores, out),
    }
}

// Executed-path evidence: every kernel implementation bumps exactly one of these per call.
static SCALAR_CALLS: AtomicU64 = AtomicU64::new(0);
static SIMD_CALLS: AtomicU64 = AtomicU64::new(0);
// Of the SIMD calls, those of kernels that execute a relaxed instruction (`relaxed_int`).
static RELAXED_CALLS: AtomicU64 = AtomicU64::new(0);

#[inline]
pub fn count_scalar() {
    SCALAR_CALLS.fetch_add(1, Ordering::Relaxed);
}

#[inline]
pub fn count_simd() {
    SIMD_CALLS.fetch_add(1, Ordering::Relaxed);
}

#[inline]
pub fn count_relaxed() {
    RELAXED_CALLS.fetch_add(1, Ordering::Relaxed);
}

/// (scalar kernel calls, SIMD kernel calls) since start.
pub fn path_counters() -> (u64, u64) {
    (SCALAR_CALLS.load(Ordering::Relaxed), SIMD_CALLS.load(Ordering::Relaxed))
}

/// Calls of kernels that execute `RELAXED_INSTRUCTIONS` since start (0 on lanes without them).
pub fn relaxed_calls() -> u64 {
    RELAXED_CALLS.load(Ordering::Relaxed)
}

fn require(ok: bool) -> TrReturn<()> {
    if ok {
        Ok(())
    } else {
        Err(TrResult::InternalInvariant)
    }
}

// `Matrix` (a weight matrix in one of the layouts) is defined beside the layouts, in
// crate::quant, so that model.rs can hand one out without importing the kernels (no module
// cycle); its methods for the kernels stay here.
pub use crate::quant::Matrix;

impl<'a> Matrix<'a> {
    pub fn layout(&self) -> Layout {
        match self {
            Matrix::F32(_) => Layout::F32,
            Matrix::Q8(_) => Layout::Q8,
            Matrix::Q4(_) => Layout::Q4,
        }
    }

    fn len_for(&self, rows: usize, cols: usize) -> Option<usize> {
        match self {
            Matrix::F32(_) => rows.checked_mul(cols),
            Matrix::Q8(_) => rows.checked_mul(row_blocks(cols).checked_mul(Q8_BLOCK_BYTES)?),
            Matrix::Q4(_) => rows.checked_mul(row_blocks(cols).checked_mul(Q4_BLOCK_BYTES)?),
        }
    }

    /// The stored elements (f32) or bytes (q8/q4) in `range` (whole rows, see `matvec`).
    fn rows(&self, range: Range<usize>) -> Option<Matrix<'a>> {
        Some(match self {
            Matrix::F32(w) => Matrix::F32(w.get(range)?),
            Matrix::Q8(w) => Matrix::Q8(w.get(range)?),
            Matrix::Q4(w) => Matrix::Q4(w.get(range)?),
        })
    }

    fn stored_len(&self) -> usize {
        match self {
            Matrix::F32(w) => w.len(),
            Matrix::Q8(w) | Matrix::Q4(w) => w.len(),
        }
    }
}

/// out[rows] = W[rows, cols] . x[cols]; rows = out.len(), cols = x.len().
/// With a row runner installed, each output row is computed by exactly one worker, with the
/// same kernel and the same per-row arithmetic: results equal the single-threaded lane's.
pub fn matvec(w: Matrix<'_>, x: &[f32], out: &mut [f32]) -> TrReturn<()> {
    matvec_acts(w, x.len(), Acts::F32(x), out)
}

/// `matvec` of one token's activations of either tier (`cols` elements).
pub fn matvec_acts(w: Matrix<'_>, cols: usize, x: Acts<'_>, out: &mut [f32]) -> TrReturn<()> {
    require(w.len_for(out.len(), cols) == Some(w.stored_len()) && x.tokens(cols) == Some(1))?;
    require(!matches!((w, x), (Matrix::F32(_), Acts::Int8 { .. })))?;
    let parallel = match parallel() {
        Some(p) => p,
        None => {
            matvec_rows(w, x, out);
            return Ok(());
        }
    };
    let row_len = if out.is_empty() { 0 } else { w.stored_len() / out.len() };
    let rows = out.len();
    let out = RowsOut(out.as_mut_ptr(), rows);
    (parallel.rows)(rows, &|r: Range<usize>| {
        let part = w.rows(r.start * row_len..r.end * row_len).ok_or(TrResult::InternalInvariant)?;
        // SAFETY: the runner hands out disjoint ranges inside 0..rows (RowRunner contract).
        let o = unsafe { out.rows(r)? };
        matvec_rows(part, x, o);
        Ok(())
    })
}

/// Several matvecs over the same `x` (Q/K/V, gate/up) as ONE row range: with a row runner
/// this is one barrier instead of N. Each output row is computed exactly as by `matvec`, so
/// the results are bit-identical to N separate calls.
pub fn matvec_many<const N: usize>(x: &[f32], parts: [(Matrix<'_>, &mut [f32]); N]) -> TrReturn<()> {
    for (w, out) in parts.iter() {
        require(w.len_for(out.len(), x.len()) == Some(w.stored_len()))?;
    }
    let x = Acts::F32(x);
    let parallel = match parallel() {
        Some(p) => p,
        None => {
            for (w, out) in parts {
                matvec_rows(w, x, out);
            }
            return Ok(());
        }
    };
    let mut first = [0usize; N]; // first global row of each part
    let mut total = 0usize;
    for (i, (_, out)) in parts.iter().enumerate() {
        first[i] = total;
        total = total.checked_add(out.len()).ok_or(TrResult::IntegerOverflow)?;
    }
    let split = parts.map(|(w, out)| {
        let row_len = if out.is_empty() { 0 } else { w.stored_len() / out.len() };
        (w, row_len, RowsOut(out.as_mut_ptr(), out.len()))
    });
    (parallel.rows)(total, &|r: Range<usize>| {
        for (i, (w, row_len, out)) in split.iter().enumerate() {
            // this part's rows inside the global range r
            let lo = r.start.max(first[i]);
            let hi = r.end.min(first[i] + out.1);
            if lo >= hi {
                continue;
            }
            let local = lo - first[i]..hi - first[i];
            let part = w.rows(local.start * row_len..local.end * row_len).ok_or(TrResult::InternalInvariant)?;
            // SAFETY: disjoint global ranges map to disjoint rows of each part.
            let o = unsafe { out.rows(local)? };
            matvec_rows(part, x, o);
        }
        Ok(())
    })
}

/// Rows of one token (shapes checked by the callers; an f32 matrix never meets int8 input:
/// model.rs refuses it in a format v2 model and `matvec_acts` checks it).
fn matvec_rows(w: Matrix<'_>, x: Acts<'_>, out: &mut [f32]) {
    match (w, x) {
        (Matrix::F32(w), Acts::F32(x)) => active::matvec_f32(w, x, out),
        (Matrix::Q8(w), Acts::F32(x)) => active::matvec_q8(w, x, out),
        (Matrix::Q4(w), Acts::F32(x)) => active::matvec_q4(w, x, out),
        (Matrix::Q8(w), Acts::Int8 { codes, scales }) => active_int::matvec_q8(w, codes, scales, out),
        (Matrix::Q4(w), Acts::Int8 { codes, scales }) => active_int::matvec_q4(w, codes, scales, out),
        (Matrix::F32(_), Acts::Int8 { .. }) => out.iter_mut().for_each(|o| *o = f32::NAN),
    }
}

// ---- row-parallel execution (installed by the threads lane) ----------------------------------

/// Runs `body` on disjoint row ranges that together cover `0..rows`, possibly concurrently, and
/// returns Ok only if every call did; otherwise an error (Cancelled, WorkerFailure, the first
/// body error). Ranges must never overlap: `matvec` writes through them without locks.
pub type RowRunner = fn(rows: usize, body: &(dyn Fn(Range<usize>) -> TrReturn<()> + Sync)) -> TrReturn<()>;

/// The threads lane's hooks: the row runner, and a cancellation/liveness check that the
/// forward pass calls between layers and before it commits a position.
pub struct Parallel {
    pub rows: RowRunner,
    pub checkpoint: fn() -> TrReturn<()>,
}

static PARALLEL: AtomicPtr<Parallel> = AtomicPtr::new(core::ptr::null_mut());

/// Installs (Some) or removes (None) the row runner for every later kernel call.
pub fn install_parallel(p: Option<&'static Parallel>) {
    let raw = p.map_or(core::ptr::null_mut(), |p| p as *const Parallel as *mut Parallel);
    PARALLEL.store(raw, Ordering::Release);
}

fn parallel() -> Option<&'static Parallel> {
    // SAFETY: only `install_parallel` stores here, and only &'static references.
    unsafe { PARALLEL.load(Ordering::Acquire).as_ref() }
}

/// Err(Cancelled) / Err(WorkerFailure) when the running operation must stop; Ok otherwise
/// (always Ok without a row runner).
pub fn checkpoint() -> TrReturn<()> {
    parallel().map_or(Ok(()), |p| (p.checkpoint)())
}

/// `out` as a raw pointer that row-range workers may share.
struct RowsOut(*mut f32, usize);

// SAFETY: workers only touch the disjoint ranges the runner gives them.
unsafe impl Sync for RowsOut {}

impl RowsOut {
    /// # Safety
    /// No other live reference may cover any row of `r`.
    #[allow(clippy::mut_from_ref)]
    unsafe fn rows(&self, r: Range<usize>) -> TrReturn<&mut [f32]> {
        if r.start > r.end || r.end > self.1 {
            return Err(TrResult::InternalInvariant);
        }
        Ok(core::slice::from_raw_parts_mut(self.0.add(r.start), r.end - r.start))
    }
}

/// out[cols] = row `row` of W[rows, cols] decoded to f32 (embedding lookup); cols = out.len().
pub fn dequant_row(w: Matrix<'_>, row: usize, out: &mut [f32]) -> TrReturn<()> {
    let cols = out.len();
    let one = w.len_for(1, cols).ok_or(TrResult::IntegerOverflow)?;
    let start = row.checked_mul(one).ok_or(TrResult::IntegerOverflow)?;
    let end = start.checked_add(one).ok_or(TrResult::IntegerOverflow)?;
    require(end <= w.stored_len())?;
    match w {
        Matrix::F32(w) => active::dequant_row_f32(&w[start..end], out),
        Matrix::Q8(w) => active::dequant_row_q8(&w[start..end], out),
        Matrix::Q4(w) => active::dequant_row_q4(&w[start..end], out),
    }
    Ok(())
}

/// out[n] = x[n] / sqrt(mean(x^2) + eps) * weight[n].
pub fn rmsnorm(x: &[f32], weight: &[f32], eps: f32, out: &mut [f32]) -> TrReturn<()> {
    require(!x.is_empty() && weight.len() == x.len() && out.len() == x.len())?;
    active::rmsnorm(x, weight, eps, out);
    Ok(())
}

/// Rotate pairs (v[2i], v[2i+1]) of one head by the table row (cos[i], sin[i]); v.len() = 2 * cos.len().
pub fn rope(v: &mut [f32], cos: &[f32], sin: &[f32]) -> TrReturn<()> {
    require(cos.len() == sin.len() && v.len() == 2 * cos.len())?;
    active::rope(v, cos, sin);
    Ok(())
}

/// In-place stable softmax with the reference's exceptional cases.
pub fn softmax(scores: &mut [f32]) -> TrReturn<()> {
    active::softmax(scores)
}

/// Shape of one causal GQA attention call.
#[derive(Clone, Copy, Debug)]
pub struct AttentionShape {
    pub n_heads: usize,
    pub n_kv_heads: usize,
    pub head_dim: usize,
}

/// out[n_heads*head_dim] = causal GQA attention of q over `n_pos` cached positions,
/// keys/values [n_pos, n_kv_heads*head_dim], scores scratch [n_pos].
pub fn attention(
    shape: AttentionShape,
    q: &[f32],
    keys: &[f32],
    values: &[f32],
    scores: &mut [f32],
    out: &mut [f32],
) -> TrReturn<()> {
    let AttentionShape { n_heads, n_kv_heads, head_dim } = shape;
    let q_dim = n_heads.checked_mul(head_dim).ok_or(TrResult::IntegerOverflow)?;
    let kv_dim = n_kv_heads.checked_mul(head_dim).ok_or(TrResult::IntegerOverflow)?;
    let kv_len = scores.len().checked_mul(kv_dim).ok_or(TrResult::IntegerOverflow)?;
    require(n_kv_heads > 0 && head_dim > 0 && n_heads % n_kv_heads == 0)?;
    require(q.len() == q_dim && out.len() == q_dim)?;
    require(keys.len() == kv_len && values.len() == kv_len)?;
    active::attention(shape, q, keys, values, scores, out)
}

/// gate[n] = silu(gate[n]) * up[n].
pub fn silu_mul(gate: &mut [f32], up: &[f32]) -> TrReturn<()> {
    require(gate.len() == up.len())?;
    active::silu_mul(gate, up);
    Ok(())
}

/// x[n] = x[n] + y[n] (residual).
pub fn add_assign(x: &mut [f32], y: &[f32]) -> TrReturn<()> {
    require(x.len() == y.len())?;
    active::add_assign(x, y);
    Ok(())
}

// ---- tiles and partitions (the forward pass's schedulers, session.rs) -------------------------

/// Runs `body` over `0..units`: split over the row runner's workers when one is installed
/// (disjoint ranges, possibly concurrent), else in one call here.
pub fn partitioned(units: usize, body: &(dyn Fn(Range<usize>) -> TrReturn<()> + Sync)) -> TrReturn<()> {
    match parallel() {
        Some(p) => (p.rows)(units, body),
        None => body(0..units),
    }
}

/// Rows per chunk when a one-token tile goes through the matvec kernel into a stack buffer.
const MATVEC_CHUNK: usize = 512;

/// Rows `rows` of W [R, cols] against the tile `xs` [T, cols] (T = xs.len() / cols):
/// emit(r - rows.start, t, value), every value exactly what `matvec` computes for row r and
/// x = token t (same kernel arithmetic per row), so a tile equals T matvecs bit for bit.
/// T = 1 runs the matvec kernel itself (row pairs, prefetch); T > 1 the lane's `matmul_*`,
/// which reads each weight row from memory once per tile.
pub fn tile_rows(
    w: Matrix<'_>,
    cols: usize,
    rows: Range<usize>,
    xs: &[f32],
    emit: &mut dyn FnMut(usize, usize, f32),
) -> TrReturn<()> {
    tile_rows_acts(w, cols, rows, Acts::F32(xs), emit)
}

/// `tile_rows` for a tile of either tier's activations.
pub fn tile_rows_acts(
    w: Matrix<'_>,
    cols: usize,
    rows: Range<usize>,
    xs: Acts<'_>,
    emit: &mut dyn FnMut(usize, usize, f32),
) -> TrReturn<()> {
    let row_len = w.len_for(1, cols).ok_or(TrResult::IntegerOverflow)?;
    let tokens = xs.tokens(cols).ok_or(TrResult::InternalInvariant)?;
    require(cols > 0 && rows.start <= rows.end)?;
    require(!matches!((w, xs), (Matrix::F32(_), Acts::Int8 { .. })))?;
    let start = rows.start.checked_mul(row_len).ok_or(TrResult::IntegerOverflow)?;
    let end = rows.end.checked_mul(row_len).ok_or(TrResult::IntegerOverflow)?;
    let part = w.rows(start..end).ok_or(TrResult::InternalInvariant)?;
    if tokens == 1 {
        let mut buf = [0.0f32; MATVEC_CHUNK];
        let n = rows.end - rows.start;
        let mut r = 0;
        while r < n {
            let m = MATVEC_CHUNK.min(n - r);
            let chunk = part.rows(r * row_len..(r + m) * row_len).ok_or(TrResult::InternalInvariant)?;
            matvec_rows(chunk, xs, &mut buf[..m]);
            for (i, v) in buf[..m].iter().enumerate() {
                emit(r + i, 0, *v);
            }
            r += m;
        }
        return Ok(());
    }
    let blocks = row_blocks(cols);
    match (part, xs) {
        (Matrix::F32(w), Acts::F32(xs)) => active::matmul_f32(w, xs, cols, emit),
        (Matrix::Q8(w), Acts::F32(xs)) => active::matmul_q8(w, xs, cols, emit),
        (Matrix::Q4(w), Acts::F32(xs)) => active::matmul_q4(w, xs, cols, emit),
        (Matrix::Q8(w), Acts::Int8 { codes, scales }) => active_int::matmul_q8(w, codes, scales, blocks, emit),
        (Matrix::Q4(w), Acts::Int8 { codes, scales }) => active_int::matmul_q4(w, codes, scales, blocks, emit),
        (Matrix::F32(_), Acts::Int8 { .. }) => return Err(TrResult::InternalInvariant),
    }
    Ok(())
}

/// Rows `rows` of W [R, cols] against ONE token's activations, written to `out` (rows.len()
/// values): the matvec kernel itself over the whole range (the T = 1 case of `tile_rows_acts`,
/// the same values, without the per-value `emit`): the decode step's path.
pub fn rows_acts(w: Matrix<'_>, cols: usize, rows: Range<usize>, x: Acts<'_>, out: &mut [f32]) -> TrReturn<()> {
    let row_len = w.len_for(1, cols).ok_or(TrResult::IntegerOverflow)?;
    require(cols > 0 && rows.start <= rows.end && out.len() == rows.end - rows.start && x.tokens(cols) == Some(1))?;
    require(!matches!((w, x), (Matrix::F32(_), Acts::Int8 { .. })))?;
    let start = rows.start.checked_mul(row_len).ok_or(TrResult::IntegerOverflow)?;
    let end = rows.end.checked_mul(row_len).ok_or(TrResult::IntegerOverflow)?;
    matvec_rows(w.rows(start..end).ok_or(TrResult::InternalInvariant)?, x, out);
    Ok(())
}

/// One query head q [d_h] over n_pos = scores.len() positions of its kv head, keys/values
/// contiguous [n_pos, d_h]: the per-head arithmetic of `attention` (bit-identical to it).
pub fn attention_head(q: &[f32], keys: &[f32], values: &[f32], scores: &mut [f32], out: &mut [f32]) -> TrReturn<()> {
    let n = scores.len().checked_mul(q.len()).ok_or(TrResult::IntegerOverflow)?;
    require(!q.is_empty() && out.len() == q.len() && keys.len() == n && values.len() == n)?;
    active::attention_head(q, keys, values, scores, out)
}
