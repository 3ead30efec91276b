//! THE kernel dispatch point. Callers use the checked wrappers below; each checks shapes once,
//! then calls the lane's implementation (`active`). Lane modules have identical signatures:
//! slices in, slices out, no allocation, preconditions checked here. `scalar` is always compiled
//! because it is the oracle (golden vectors, self-test comparisons).
//!
//! A SIMD lane adds `#[cfg(target_feature = "simd128")] mod simd128;` and switches `active`.

use core::sync::atomic::{AtomicU64, Ordering};

use crate::quant::{row_blocks, Layout, Q4_BLOCK_BYTES, Q8_BLOCK_BYTES};
use crate::result::{TrResult, TrReturn};

pub mod scalar;

use scalar as active;

/// Kernel set identity reported by receipts; changes with `active`.
pub const KERNEL_SET: &str = "scalar-v1";

// Executed-path evidence: every kernel implementation bumps exactly one of these per call.
static SCALAR_CALLS: AtomicU64 = AtomicU64::new(0);
static SIMD_CALLS: AtomicU64 = AtomicU64::new(0);

#[inline]
pub fn count_scalar() {
    SCALAR_CALLS.fetch_add(1, Ordering::Relaxed);
}

#[inline]
pub fn count_simd() {
    SIMD_CALLS.fetch_add(1, Ordering::Relaxed);
}

/// (scalar kernel calls, SIMD kernel calls) since start.
pub fn path_counters() -> (u64, u64) {
    (SCALAR_CALLS.load(Ordering::Relaxed), SIMD_CALLS.load(Ordering::Relaxed))
}

fn require(ok: bool) -> TrReturn<()> {
    if ok {
        Ok(())
    } else {
        Err(TrResult::InternalInvariant)
    }
}

/// A weight matrix [rows, cols] in one of the layouts: f32 values or packed blocks.
#[derive(Clone, Copy)]
pub enum Matrix<'a> {
    F32(&'a [f32]),
    Q8(&'a [u8]),
    Q4(&'a [u8]),
}

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

    fn stored_len(&self) -> usize {
        match self {
            Matrix::F32(w) => w.len(),
            Matrix::Q8(w) | Matrix::Q4(w) => w.len(),
        }
    }
}

/// out[rows] = W[rows, cols] . x[cols]; rows = out.len(), cols = x.len().
pub fn matvec(w: Matrix<'_>, x: &[f32], out: &mut [f32]) -> TrReturn<()> {
    require(w.len_for(out.len(), x.len()) == Some(w.stored_len()))?;
    match w {
        Matrix::F32(w) => active::matvec_f32(w, x, out),
        Matrix::Q8(w) => active::matvec_q8(w, x, out),
        Matrix::Q4(w) => active::matvec_q4(w, x, out),
    }
    Ok(())
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
