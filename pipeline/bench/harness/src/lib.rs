//! Kernel harness: `set` 0 runs the scalar oracle (`kernels::scalar`), 1 runs the lane's
//! active kernels through the checked dispatch point (`kernels::*`). Pointers come from
//! `h_alloc`; the host writes inputs and reads outputs in linear memory.

use tinyrustlm_core::kernels::{self, scalar, AttentionShape, Matrix};
use tinyrustlm_core::TrResult;

fn slice<'a, T>(ptr: u32, n: u32) -> &'a [T] {
    // SAFETY: test-only module; the host passes windows from h_alloc of the right size.
    unsafe { core::slice::from_raw_parts(ptr as *const T, n as usize) }
}

fn slice_mut<'a, T>(ptr: u32, n: u32) -> &'a mut [T] {
    // SAFETY: as `slice`.
    unsafe { core::slice::from_raw_parts_mut(ptr as *mut T, n as usize) }
}

fn code(r: Result<(), TrResult>) -> i32 {
    TrResult::of(&r).code()
}

#[no_mangle]
pub extern "C" fn h_alloc(n: u32) -> u32 {
    let mut v = vec![0u8; n.max(1) as usize];
    let p = v.as_mut_ptr() as u32;
    core::mem::forget(v);
    p
}

/// 1 when the active kernel set is SIMD128, 0 when it is the scalar oracle.
#[no_mangle]
pub extern "C" fn h_simd() -> u32 {
    cfg!(target_feature = "simd128") as u32
}

/// layout: 0 f32, 1 q8-block-v1, 2 q4-block-v1; `w_len` in bytes.
#[no_mangle]
pub extern "C" fn h_matvec(set: u32, layout: u32, w: u32, w_len: u32, x: u32, cols: u32, out: u32, rows: u32) -> i32 {
    let (x, out) = (slice::<f32>(x, cols), slice_mut::<f32>(out, rows));
    let m = match layout {
        0 => Matrix::F32(slice(w, w_len / 4)),
        1 => Matrix::Q8(slice(w, w_len)),
        _ => Matrix::Q4(slice(w, w_len)),
    };
    if set == 1 {
        return code(kernels::matvec(m, x, out));
    }
    match m {
        Matrix::F32(w) => scalar::matvec_f32(w, x, out),
        Matrix::Q8(w) => scalar::matvec_q8(w, x, out),
        Matrix::Q4(w) => scalar::matvec_q4(w, x, out),
    }
    0
}

#[no_mangle]
pub extern "C" fn h_rmsnorm(set: u32, x: u32, weight: u32, n: u32, eps_bits: u32, out: u32) -> i32 {
    let (x, weight, out) = (slice(x, n), slice(weight, n), slice_mut(out, n));
    let eps = f32::from_bits(eps_bits);
    if set == 1 {
        return code(kernels::rmsnorm(x, weight, eps, out));
    }
    scalar::rmsnorm(x, weight, eps, out);
    0
}

#[no_mangle]
pub extern "C" fn h_attention(
    set: u32,
    n_heads: u32,
    n_kv_heads: u32,
    head_dim: u32,
    n_pos: u32,
    q: u32,
    keys: u32,
    values: u32,
    out: u32,
) -> i32 {
    let shape =
        AttentionShape { n_heads: n_heads as usize, n_kv_heads: n_kv_heads as usize, head_dim: head_dim as usize };
    let q_dim = n_heads * head_dim;
    let kv = n_pos * n_kv_heads * head_dim;
    let (q, keys, values, out) = (slice(q, q_dim), slice(keys, kv), slice(values, kv), slice_mut(out, q_dim));
    let mut scores = vec![0.0f32; n_pos as usize];
    if set == 1 {
        return code(kernels::attention(shape, q, keys, values, &mut scores, out));
    }
    code(scalar::attention(shape, q, keys, values, &mut scores, out))
}

#[no_mangle]
pub extern "C" fn h_add_assign(set: u32, x: u32, y: u32, n: u32) -> i32 {
    let (x, y) = (slice_mut(x, n), slice(y, n));
    if set == 1 {
        return code(kernels::add_assign(x, y));
    }
    scalar::add_assign(x, y);
    0
}

#[no_mangle]
pub extern "C" fn h_rope(set: u32, v: u32, cos: u32, sin: u32, half: u32) -> i32 {
    let (v, cos, sin) = (slice_mut(v, 2 * half), slice(cos, half), slice(sin, half));
    if set == 1 {
        return code(kernels::rope(v, cos, sin));
    }
    scalar::rope(v, cos, sin);
    0
}

#[no_mangle]
pub extern "C" fn h_silu_mul(set: u32, gate: u32, up: u32, n: u32) -> i32 {
    let (gate, up) = (slice_mut(gate, n), slice(up, n));
    if set == 1 {
        return code(kernels::silu_mul(gate, up));
    }
    scalar::silu_mul(gate, up);
    0
}

#[no_mangle]
pub extern "C" fn h_softmax(set: u32, s: u32, n: u32) -> i32 {
    let s = slice_mut(s, n);
    if set == 1 {
        return code(kernels::softmax(s));
    }
    code(scalar::softmax(s))
}

/// Read-bandwidth probe for pipeline/bench/lanes.mjs: `reps` passes of 16-byte loads over
/// `len` bytes at `ptr` (four independent accumulators); returns a checksum so the loads stay.
#[cfg(target_feature = "simd128")]
#[no_mangle]
pub extern "C" fn h_read_probe(ptr: u32, len: u32, reps: u32) -> u32 {
    use core::arch::wasm32::*;
    let bytes = slice::<u8>(ptr, len);
    let mut acc = [u32x4_splat(0); 4];
    for _ in 0..reps {
        for line in bytes.chunks_exact(64) {
            for (k, a) in acc.iter_mut().enumerate() {
                // SAFETY: 16 bytes inside `line` (64 bytes).
                let v = unsafe { v128_load(line[16 * k..].as_ptr() as *const v128) };
                *a = i32x4_add(*a, v);
            }
        }
    }
    let sum = i32x4_add(i32x4_add(acc[0], acc[1]), i32x4_add(acc[2], acc[3]));
    u32x4_extract_lane::<0>(sum)
}

/// Tiled rows against matvec on the active set: `kernels::tile_rows` over the tile xs [tokens,
/// cols] (rows split at rows / 2, as a partition would) vs one `kernels::matvec` per token.
/// Returns how many of the rows * tokens values differ in any bit (0 = identical), or -code.
#[no_mangle]
pub extern "C" fn h_tile_mismatches(
    layout: u32,
    w: u32,
    w_len: u32,
    xs: u32,
    cols: u32,
    rows: u32,
    tokens: u32,
) -> i32 {
    let (cols_u, rows_u, tokens_u) = (cols as usize, rows as usize, tokens as usize);
    let xs = slice::<f32>(xs, cols * tokens);
    let m = match layout {
        0 => Matrix::F32(slice(w, w_len / 4)),
        1 => Matrix::Q8(slice(w, w_len)),
        _ => Matrix::Q4(slice(w, w_len)),
    };
    let mut tiled = vec![0.0f32; rows_u * tokens_u];
    for part in [0..rows_u / 2, rows_u / 2..rows_u] {
        let r0 = part.start;
        let r = kernels::tile_rows(m, cols_u, part, xs, &mut |r, t, v| tiled[t * rows_u + r0 + r] = v);
        if let Err(e) = r {
            return -e.code();
        }
    }
    let mut out = vec![0.0f32; rows_u];
    let mut differ = 0;
    for t in 0..tokens_u {
        if let Err(e) = kernels::matvec(m, &xs[t * cols_u..(t + 1) * cols_u], &mut out) {
            return -e.code();
        }
        let row = &tiled[t * rows_u..(t + 1) * rows_u];
        differ += row.iter().zip(&out).filter(|(a, b)| a.to_bits() != b.to_bits()).count() as i32;
    }
    differ
}

/// `kernels::attention_head` per head (keys/values of its kv head copied contiguous) vs
/// `kernels::attention`: how many output values differ in any bit (0 = identical), or -code.
#[no_mangle]
pub extern "C" fn h_attention_head_mismatches(
    n_heads: u32,
    n_kv_heads: u32,
    head_dim: u32,
    n_pos: u32,
    q: u32,
    keys: u32,
    values: u32,
) -> i32 {
    let (h, kvh, hd, n) = (n_heads as usize, n_kv_heads as usize, head_dim as usize, n_pos as usize);
    let shape = AttentionShape { n_heads: h, n_kv_heads: kvh, head_dim: hd };
    let (q, keys, values) = (
        slice::<f32>(q, n_heads * head_dim),
        slice::<f32>(keys, n_pos * n_kv_heads * head_dim),
        slice::<f32>(values, n_pos * n_kv_heads * head_dim),
    );
    let mut scores = vec![0.0f32; n];
    let mut whole = vec![0.0f32; h * hd];
    if let Err(e) = kernels::attention(shape, q, keys, values, &mut scores, &mut whole) {
        return -e.code();
    }
    let mut differ = 0;
    let group = h / kvh;
    for head in 0..h {
        let g = head / group;
        let gather = |src: &[f32]| -> Vec<f32> {
            (0..n).flat_map(|t| src[(t * kvh + g) * hd..(t * kvh + g + 1) * hd].to_vec()).collect()
        };
        let (k, v) = (gather(keys), gather(values));
        let mut out = vec![0.0f32; hd];
        if let Err(e) = kernels::attention_head(&q[head * hd..(head + 1) * hd], &k, &v, &mut scores, &mut out) {
            return -e.code();
        }
        differ += out.iter().zip(&whole[head * hd..(head + 1) * hd]).filter(|(a, b)| a.to_bits() != b.to_bits()).count()
            as i32;
    }
    differ
}

// ---- the integer tier (CONTRACT.md §10) -------------------------------------------------------

/// `kernels::quantize` of x [n] into codes [⌈n/32⌉ * 32] (i8) and scales [⌈n/32⌉] (f32).
#[no_mangle]
pub extern "C" fn h_quantize(x: u32, n: u32, codes: u32, scales: u32) -> i32 {
    let blocks = (n + 31) / 32;
    code(kernels::quantize(slice(x, n), slice_mut(codes, blocks * 32), slice_mut(scales, blocks)))
}

/// Integer-tier rows of W [rows, cols] (layout 1 q8, 2 q4) against `tokens` quantized tokens
/// (codes [tokens, blocks * 32], scales [tokens, blocks]) into out [tokens, rows]:
/// `set` 0 the oracle (`kernels::int8`, one row per call), 1 the active set's matvec per token
/// (`kernels::matvec_acts`), 2 the active set's tile (`kernels::tile_rows_acts`, rows r0..rows).
#[no_mangle]
pub extern "C" fn h_int_rows(
    set: u32,
    layout: u32,
    w: u32,
    w_len: u32,
    codes: u32,
    scales: u32,
    cols: u32,
    tokens: u32,
    rows: u32,
    r0: u32,
    out: u32,
) -> i32 {
    use tinyrustlm_core::kernels::{int8, Acts};
    let blocks = (cols + 31) / 32;
    let (w, out) = (slice::<u8>(w, w_len), slice_mut::<f32>(out, tokens * rows));
    let (codes, scales) = (slice::<i8>(codes, tokens * blocks * 32), slice::<f32>(scales, tokens * blocks));
    let (cb, b) = ((blocks * 32) as usize, blocks as usize);
    let m = if layout == 1 { Matrix::Q8(w) } else { Matrix::Q4(w) };
    let row_bytes = w.len() / rows.max(1) as usize;
    for t in 0..tokens as usize {
        let (tc, ts) = (&codes[t * cb..(t + 1) * cb], &scales[t * b..(t + 1) * b]);
        let o = &mut out[t * rows as usize..(t + 1) * rows as usize];
        match set {
            0 => {
                for (r, v) in o.iter_mut().enumerate() {
                    let row = &w[r * row_bytes..(r + 1) * row_bytes];
                    *v = if layout == 1 { int8::row_q8(row, tc, ts) } else { int8::row_q4(row, tc, ts) };
                }
            }
            1 => {
                let r = kernels::matvec_acts(m, cols as usize, Acts::Int8 { codes: tc, scales: ts }, o);
                if r.is_err() {
                    return code(r);
                }
            }
            _ => {}
        }
    }
    if set >= 2 {
        let rows_n = rows as usize;
        let r = kernels::tile_rows_acts(
            m,
            cols as usize,
            r0 as usize..rows_n,
            Acts::Int8 { codes, scales },
            &mut |r, t, v| out[t * rows_n + r0 as usize + r] = v,
        );
        return code(r);
    }
    0
}
