//! The normative execution graph of one tile (CONTRACT.md "Forward pass" and "Tiled prefill"),
//! one named step per phase: embedding rows; per layer the attention block (RMSNorm, one unit
//! per kv head for Q/K/V rows, RoPE, K/V publish and attention, then output rows with the
//! residual) and the FFN block (RMSNorm, gate/up rows with SiLU·up, down rows with the
//! residual); final RMSNorm and the logits of the tile's last token.

use core::ops::Range;

use super::{QuantBuffers, Session};
use crate::kernels::{self, Acts, Matrix};
use crate::model::{LayerWeights, Model, TensorRef, Tier};
use crate::result::{TrResult, TrReturn};

/// A buffer that the units of one partitioned phase write at disjoint indices (possibly on
/// several workers at once), so it is shared as a raw pointer instead of `&mut`.
#[derive(Clone, Copy)]
struct Shared(*mut f32, usize);

// SAFETY: every phase hands each index to exactly one unit (see the callers).
unsafe impl Sync for Shared {}
unsafe impl Send for Shared {}

impl Shared {
    fn of(v: &mut [f32]) -> Shared {
        Shared(v.as_mut_ptr(), v.len())
    }

    /// # Safety
    /// No other live reference may cover any index of `r` while the slice lives.
    #[allow(clippy::mut_from_ref)]
    unsafe fn slice(&self, r: Range<usize>) -> TrReturn<&mut [f32]> {
        if r.start > r.end || r.end > self.1 {
            return Err(TrResult::InternalInvariant);
        }
        Ok(core::slice::from_raw_parts_mut(self.0.add(r.start), r.end - r.start))
    }

    /// # Safety
    /// As `slice`, for the one index `i`. Callers' indices are in range by construction; one
    /// that is not is dropped (never a write outside the buffer) and `get` reads it as NaN,
    /// which the differential tests would see.
    unsafe fn set(&self, i: usize, v: f32) {
        if i < self.1 {
            *self.0.add(i) = v;
        }
    }

    /// # Safety
    /// As `slice`, for the one index `i`.
    unsafe fn get(&self, i: usize) -> f32 {
        if i < self.1 {
            *self.0.add(i)
        } else {
            f32::NAN
        }
    }
}

/// What every phase of one forward reads: the model, the tile's shape (n tokens at positions
/// pos0..pos0 + n) and the buffers its units write.
#[derive(Clone, Copy)]
struct Pass<'m> {
    model: &'m Model,
    tier: Tier,
    eps: f32,
    n: usize,     // tokens in the tile
    pos0: usize,  // position of its first token
    ctx: usize,   // C, the admitted context (the cache's row count)
    d: usize,     // D
    f: usize,     // F
    n_kv: usize,  // H_kv
    hd: usize,    // d_h
    q_dim: usize, // H * d_h
    group: usize, // query heads per kv head
    half: usize,  // d_h / 2 (RoPE pairs)
    rope_cos: &'m [f32],
    rope_sin: &'m [f32],
    q: Shared,      // [n, q_dim]
    att: Shared,    // [n, q_dim] attention output
    hb: Shared,     // [n, F] gate, then silu(gate) * up
    hb2: Shared,    // [n, F] up
    keys: Shared,   // [L, H_kv, C, d_h]
    values: Shared, // [L, H_kv, C, d_h]
    scores: Shared, // [H_kv, C]
}

impl Session {
    /// The normative execution graph for a tile of `tokens.len()` tokens at positions
    /// `position..`: commits all of them on success only. A tile of one token is a decode step.
    /// Per layer: RMSNorm of every token; per kv-head unit (its Q rows, K and V rows, RoPE,
    /// K/V publish, causal attention of its query heads for every token); output rows with the
    /// residual; RMSNorm; gate/up rows with SiLU·up; down rows with the residual. Each unit
    /// phase is `kernels::partitioned` (one barrier in the threads lane) and every output
    /// element is computed by one unit with the token-by-token arithmetic (CONTRACT.md §2).
    pub(super) fn forward(&mut self, model: &Model, tokens: &[u32]) -> TrReturn<()> {
        let p = self.pass(model, tokens.len())?;
        let b = &mut self.buf;
        let (x, xb, quant) = (&mut b.x[..p.n * p.d], &mut b.xb[..p.n * p.d], &mut b.quant);
        p.embed(tokens, x)?;
        for (l, w) in model.layers.iter().enumerate() {
            kernels::checkpoint()?; // cancellation point between layers (threads lane)
            p.attention_block(l, w, x, xb, quant)?;
            p.ffn_block(w, x, xb, quant)?;
        }
        p.logits_of_last(x, xb, quant, &mut self.next_logits)?;
        kernels::checkpoint()?; // last cancellation point before the commit

        // commit: a failure anywhere above left position, logits and history as they were
        core::mem::swap(&mut self.logits, &mut self.next_logits);
        self.position = p.pos0 + p.n;
        self.logits_valid = true;
        Ok(())
    }

    /// The shape of a forward of `n` tokens at the committed position, and its shared buffers.
    fn pass<'m>(&mut self, model: &'m Model, n: usize) -> TrReturn<Pass<'m>> {
        if n == 0 || n > self.buf.cap {
            return Err(TrResult::InternalInvariant);
        }
        let pos0 = self.position;
        if pos0.checked_add(n).is_none_or(|end| end > self.context) {
            return Err(TrResult::ContextExceeded);
        }
        let c = &model.config;
        let (d, f) = (c.d_model as usize, c.d_ff as usize);
        let (n_heads, n_kv, hd) = (c.n_heads as usize, c.n_kv_heads as usize, c.head_dim as usize);
        let q_dim = n_heads * hd;
        let b = &mut self.buf;
        Ok(Pass {
            model,
            tier: c.tier,
            eps: c.rms_eps,
            n,
            pos0,
            ctx: self.context,
            d,
            f,
            n_kv,
            hd,
            q_dim,
            group: n_heads / n_kv,
            half: hd / 2,
            rope_cos: model.floats(&model.rope_cos),
            rope_sin: model.floats(&model.rope_sin),
            q: Shared::of(&mut b.q[..n * q_dim]),
            att: Shared::of(&mut b.att[..n * q_dim]),
            hb: Shared::of(&mut b.hb[..n * f]),
            hb2: Shared::of(&mut b.hb2[..n * f]),
            keys: Shared::of(&mut self.key_cache),
            values: Shared::of(&mut self.value_cache),
            scores: Shared::of(&mut self.scores),
        })
    }
}

/// Rows per chunk of a decode step's residual rows (a stack buffer).
const RESIDUAL_CHUNK: usize = 512;

/// `residual_rows` of a decode step (one token): x[r] = x[r] + y[r] for rows `rows`, y by
/// `rows_acts` in chunks, the sum by `add_assign` (the closure's own elementwise `x + y`).
fn residual_one(w: Matrix<'_>, cols: usize, rows: Range<usize>, input: Acts<'_>, xs: Shared) -> TrReturn<()> {
    let mut y = [0.0f32; RESIDUAL_CHUNK];
    let mut r = rows.start;
    while r < rows.end {
        let m = (rows.end - r).min(RESIDUAL_CHUNK);
        kernels::rows_acts(w, cols, r..r + m, input, &mut y[..m])?;
        // SAFETY: rows `rows` of the one token belong to this unit alone.
        kernels::add_assign(unsafe { xs.slice(r..r + m)? }, &y[..m])?;
        r += m;
    }
    Ok(())
}

impl Pass<'_> {
    /// x[t] = embedding row of token t.
    fn embed(&self, tokens: &[u32], x: &mut [f32]) -> TrReturn<()> {
        let d = self.d;
        for (t, tok) in tokens.iter().enumerate() {
            kernels::dequant_row(self.model.matrix(&self.model.embedding), *tok as usize, &mut x[t * d..(t + 1) * d])?;
        }
        Ok(())
    }

    /// xb[t] = RMSNorm(x[t]) with `weight`, for every token of the tile.
    fn norm(&self, weight: &TensorRef, x: &[f32], xb: &mut [f32]) -> TrReturn<()> {
        let d = self.d;
        for t in 0..self.n {
            kernels::rmsnorm_tier(
                self.tier,
                &x[t * d..(t + 1) * d],
                self.model.floats(weight),
                self.eps,
                &mut xb[t * d..(t + 1) * d],
            )?;
        }
        Ok(())
    }

    /// RMSNorm; one unit per kv head (`kv_head_unit`); output rows with the residual.
    fn attention_block(
        &self,
        l: usize,
        w: &LayerWeights,
        x: &mut [f32],
        xb: &mut [f32],
        quant: &mut QuantBuffers,
    ) -> TrReturn<()> {
        self.norm(&w.attn_norm, x, xb)?;
        let xin = quant.acts(self.tier, xb, self.d)?;
        kernels::partitioned(self.n_kv, &|units: Range<usize>| {
            for g in units {
                self.kv_head_unit(l, w, g, xin)?;
            }
            Ok(())
        })?;
        // SAFETY: att is complete (the phase above ended) and only read from here on.
        let att_in = quant.acts(self.tier, unsafe { self.att.slice(0..self.n * self.q_dim)? }, self.q_dim)?;
        self.residual_rows(self.model.matrix(&w.wo), self.q_dim, att_in, x)
    }

    /// Unit g (kv head g): Q rows of g's query heads, K/V rows of g, RoPE, publish K/V at
    /// pos0..pos0+n, then attention of g's query heads for every token of the tile.
    fn kv_head_unit(&self, l: usize, w: &LayerWeights, g: usize, xin: Acts<'_>) -> TrReturn<()> {
        let (ctx, hd, n_kv) = (self.ctx, self.hd, self.n_kv);
        let cache = ((l * n_kv + g) * ctx) * hd..((l * n_kv + g + 1) * ctx) * hd;
        // SAFETY: unit g alone writes its query rows, its kv head's cache run and its score
        // row; att columns of its heads likewise.
        let (kc, vc) = unsafe { (self.keys.slice(cache.clone())?, self.values.slice(cache)?) };
        let sc = unsafe { self.scores.slice(g * ctx..(g + 1) * ctx)? };
        self.project_qkv(w, g, xin, kc, vc)?;
        self.rope_unit(g, kc)?;
        self.attend_unit(g, kc, vc, sc)
    }

    /// q[t, heads of g] = Wq rows · xb[t]; kc/vc[pos0 + t] = Wk/Wv rows of g · xb[t].
    fn project_qkv(&self, w: &LayerWeights, g: usize, xin: Acts<'_>, kc: &mut [f32], vc: &mut [f32]) -> TrReturn<()> {
        let (d, hd, q_dim, pos0, q) = (self.d, self.hd, self.q_dim, self.pos0, self.q);
        let m = self.model;
        let (wq, wk, wv) = (m.matrix(&w.wq), m.matrix(&w.wk), m.matrix(&w.wv));
        let qr = g * self.group * hd..(g + 1) * self.group * hd;
        let kv = g * hd..(g + 1) * hd;
        if self.n == 1 {
            // decode: the rows written in place (`rows_acts`, the T = 1 tile's own values)
            let at = pos0 * hd..(pos0 + 1) * hd;
            // SAFETY: the query rows of g's heads belong to unit g alone.
            kernels::rows_acts(wq, d, qr.clone(), xin, unsafe { q.slice(qr)? })?;
            kernels::rows_acts(wk, d, kv.clone(), xin, kc.get_mut(at.clone()).ok_or(TrResult::InternalInvariant)?)?;
            return kernels::rows_acts(wv, d, kv, xin, vc.get_mut(at).ok_or(TrResult::InternalInvariant)?);
        }
        // SAFETY: the query rows of g's heads belong to unit g alone.
        kernels::tile_rows_acts(wq, d, qr.clone(), xin, &mut |r, t, v| unsafe { q.set(t * q_dim + qr.start + r, v) })?;
        kernels::tile_rows_acts(wk, d, kv.clone(), xin, &mut |r, t, v| kc[(pos0 + t) * hd + r] = v)?;
        kernels::tile_rows_acts(wv, d, kv, xin, &mut |r, t, v| vc[(pos0 + t) * hd + r] = v)
    }

    /// RoPE of each token's query heads of g and of its key, at the token's own position.
    fn rope_unit(&self, g: usize, kc: &mut [f32]) -> TrReturn<()> {
        let (hd, half, q_dim, group) = (self.hd, self.half, self.q_dim, self.group);
        for t in 0..self.n {
            let pos = self.pos0 + t;
            let (cos, sin) =
                (&self.rope_cos[pos * half..(pos + 1) * half], &self.rope_sin[pos * half..(pos + 1) * half]);
            for h in g * group..(g + 1) * group {
                // SAFETY: query head h of token t belongs to unit g.
                kernels::rope(unsafe { self.q.slice(t * q_dim + h * hd..t * q_dim + (h + 1) * hd)? }, cos, sin)?;
            }
            kernels::rope(&mut kc[pos * hd..(pos + 1) * hd], cos, sin)?;
        }
        Ok(())
    }

    /// att[t, h] = causal attention of query head h of token t over positions 0..=pos0 + t,
    /// for g's query heads.
    fn attend_unit(&self, g: usize, kc: &[f32], vc: &[f32], sc: &mut [f32]) -> TrReturn<()> {
        let (hd, q_dim, group, pos0) = (self.hd, self.q_dim, self.group, self.pos0);
        for t in 0..self.n {
            let used = (pos0 + t + 1) * hd;
            for h in g * group..(g + 1) * group {
                let head = t * q_dim + h * hd..t * q_dim + (h + 1) * hd;
                // SAFETY: as above; q is only read here, after this unit wrote it.
                let (qh, out) = unsafe { (self.q.slice(head.clone())?, self.att.slice(head)?) };
                kernels::attention_head_tier(self.tier, qh, &kc[..used], &vc[..used], &mut sc[..pos0 + t + 1], out)?;
            }
        }
        Ok(())
    }

    /// RMSNorm; gate/up rows with SiLU·up (`gate_up_rows`); down rows with the residual.
    fn ffn_block(&self, w: &LayerWeights, x: &mut [f32], xb: &mut [f32], quant: &mut QuantBuffers) -> TrReturn<()> {
        self.norm(&w.ffn_norm, x, xb)?;
        let xin = quant.acts(self.tier, xb, self.d)?;
        kernels::partitioned(self.f, &|rows: Range<usize>| self.gate_up_rows(w, rows, xin))?;
        // SAFETY: hb is complete and only read from here on.
        let h_in = quant.acts(self.tier, unsafe { self.hb.slice(0..self.n * self.f)? }, self.f)?;
        self.residual_rows(self.model.matrix(&w.w_down), self.f, h_in, x)
    }

    /// Gated FFN rows `rows` of every token: gate/up rows, then silu(gate) * up on them.
    fn gate_up_rows(&self, w: &LayerWeights, rows: Range<usize>, xin: Acts<'_>) -> TrReturn<()> {
        let (d, f, hb, hb2, r0) = (self.d, self.f, self.hb, self.hb2, rows.start);
        let (wg, wu) = (self.model.matrix(&w.w_gate), self.model.matrix(&w.w_up));
        if self.n == 1 {
            // SAFETY: rows `rows` belong to this unit alone (decode: the rows written in place).
            let (g, u) = unsafe { (hb.slice(rows.clone())?, hb2.slice(rows.clone())?) };
            kernels::rows_acts(wg, d, rows.clone(), xin, g)?;
            kernels::rows_acts(wu, d, rows, xin, u)?;
            return kernels::silu_mul(g, u);
        }
        // SAFETY: rows r0.. of every token belong to this unit alone.
        kernels::tile_rows_acts(wg, d, rows.clone(), xin, &mut |r, t, v| unsafe { hb.set(t * f + r0 + r, v) })?;
        kernels::tile_rows_acts(wu, d, rows.clone(), xin, &mut |r, t, v| unsafe { hb2.set(t * f + r0 + r, v) })?;
        for t in 0..self.n {
            let own = t * f + rows.start..t * f + rows.end;
            let (g, u) = unsafe { (hb.slice(own.clone())?, hb2.slice(own)?) };
            kernels::silu_mul(g, u)?;
        }
        Ok(())
    }

    /// x[t] = x[t] + W · input[t] for every token, fused per row (one unit per row run):
    /// the output rows (W = wo) and the down rows (W = w_down).
    fn residual_rows(&self, w: Matrix<'_>, cols: usize, input: Acts<'_>, x: &mut [f32]) -> TrReturn<()> {
        let (d, xs) = (self.d, Shared::of(x));
        kernels::partitioned(d, &|rows: Range<usize>| {
            if self.n == 1 {
                return residual_one(w, cols, rows, input, xs);
            }
            let r0 = rows.start;
            // SAFETY: row r of every token belongs to this unit alone.
            kernels::tile_rows_acts(w, cols, rows, input, &mut |r, t, y| unsafe {
                let i = t * d + r0 + r;
                xs.set(i, xs.get(i) + y)
            })
        })
    }

    /// out = output matrix · RMSNorm(x[last]): logits of the tile's last token only (the state
    /// a commit leaves).
    fn logits_of_last(&self, x: &[f32], xb: &mut [f32], quant: &mut QuantBuffers, out: &mut [f32]) -> TrReturn<()> {
        let (d, m) = (self.d, self.model);
        let last = (self.n - 1) * d..self.n * d;
        kernels::rmsnorm_tier(self.tier, &x[last], m.floats(&m.final_norm), self.eps, &mut xb[..d])?;
        let xin = quant.acts(self.tier, &xb[..d], d)?;
        kernels::matvec_acts(m.matrix(&m.output), d, xin, out)
    }
}
