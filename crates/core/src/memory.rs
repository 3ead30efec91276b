//! Memory plan per the reference's "Memory formulas", specialised to this runtime:
//! tiled prefill (T = min(DEFAULT_PREFILL_TILE, C)), byte tokenizer (M_tokenizer = 0), and
//! itemized per lane and worker count (issue 33 item 2): every byte the runtime's Wasm memory
//! holds while a model loads, prefills a chunk and decodes is in exactly one part.
//! Every term is checked u64 arithmetic; CONTRACT.md lists the terms.

use crate::model::{Config, Entry, LayerWeights, Tier};
use crate::result::{add64, mul64, TrResult, TrReturn};
use crate::sampler::SamplerWork;
use crate::session::DEFAULT_PREFILL_TILE;

/// Stack of the instance that runs operations (the Rust wasm32 default stack, wasm-ld's
/// `-z stack-size`), plus the module's static data (constants, tokenizer text, TLS image).
pub const STACK_BYTES: u64 = 1 << 20;
pub const STATIC_DATA_BYTES: u64 = 64 << 10;
/// Threads lane: the worker stack regions are static (crates/wasm/src/threads.rs), one per
/// admissible worker whatever the pool's size; each worker's TLS block sits in its region.
pub const MAX_WORKERS: u32 = 8;
pub const WORKER_STACK_BYTES: u64 = 512 << 10;
/// Per-thread TLS allowance (std's thread-locals: the panic count; wasm-ld's `__tls_size`).
pub const TLS_BYTES: u64 = 256;
/// Fixed allocator overhead plus a per-allocation allowance (headers, alignment, slack).
pub const ALLOCATOR_FIXED_BYTES: u64 = 64 << 10;
pub const ALLOCATOR_PER_ALLOCATION: u64 = 64;
/// Live allocations a loaded model plus one session hold (vectors in Model and Session).
pub const ALLOCATIONS: u64 = 32;
/// The wasm32 address space: the budget of every wasm32 lane, whatever the integrator sets.
pub const WASM32_BUDGET: u64 = 1 << 32;

/// What the plan is for besides the model and the context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanInputs {
    /// The model file's length (held by the model after load).
    pub file_bytes: u64,
    /// Resident model bytes: the file plus its f32 tensors decoded once.
    pub weights: u64,
    /// Directory entries (tensor count).
    pub tensors: u64,
    pub context: u32,
    /// 0 = an unthreaded lane (or native); 1..=MAX_WORKERS = the threads lane's pool.
    pub workers: u32,
    /// The host loads by copy (`tr_model_load`: the file twice while loading) rather than in
    /// place (`tr_model_adopt`: the transfer window becomes the model's bytes).
    pub load_copy: bool,
}

/// The parts, in bytes. `peak_*` are sums of parts; `peak` their maximum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryPlan {
    pub weights: u64,
    pub metadata: u64,
    pub tokenizer: u64,
    pub kv: u64,
    pub activations: u64,
    pub logits: u64,
    /// Decode scratch: the sampler's work arrays and the forbidden-token mask.
    pub sampler: u64,
    /// The operating stack and static data, plus the threads lane's worker stacks and TLS.
    pub stack: u64,
    pub transfer: u64,
    /// The second copy of the file while `tr_model_load` copies it (0 when loaded in place).
    pub load_copy: u64,
    pub allocator: u64,
    /// Loading: model, metadata, stacks, allocator, the load copy.
    pub peak_load: u64,
    /// M_prefill: everything but the load copy.
    pub peak_prefill: u64,
    /// M_decode: everything but the load copy and the prompt transfer buffer.
    pub steady_decode: u64,
}

/// Part names in record order (`tr_plan_header`, CONTRACT.md §9, loader `plan.parts`).
pub const PART_NAMES: [&str; 11] = [
    "weights",
    "metadata",
    "tokenizer",
    "kv",
    "activations",
    "logits",
    "decode_scratch",
    "stacks_tls",
    "transfer",
    "load_copy",
    "allocator",
];

impl MemoryPlan {
    pub fn parts(&self) -> [u64; 11] {
        [
            self.weights,
            self.metadata,
            self.tokenizer,
            self.kv,
            self.activations,
            self.logits,
            self.sampler,
            self.stack,
            self.transfer,
            self.load_copy,
            self.allocator,
        ]
    }

    /// The highest of the three peaks: what the Wasm memory must hold.
    pub fn peak(&self) -> u64 {
        self.peak_load.max(self.peak_prefill).max(self.steady_decode)
    }

    /// Index into `PART_NAMES` of the largest part (the first on a tie).
    pub fn largest_part(&self) -> usize {
        let parts = self.parts();
        (0..parts.len()).fold(0, |best, i| if parts[i] > parts[best] { i } else { best })
    }
}

fn sum(terms: &[u64]) -> TrReturn<u64> {
    terms.iter().try_fold(0u64, |acc, t| add64(acc, *t))
}

/// Plans a session of `context` tokens over a model holding `weights` bytes, on an unthreaded
/// lane with the model copied in (the plan `tr_preflight` reports).
pub fn plan(config: &Config, weights: u64, context: u32) -> TrReturn<MemoryPlan> {
    let inputs = PlanInputs {
        file_bytes: config.file_length,
        weights,
        tensors: config.tensor_count as u64,
        context,
        workers: 0,
        load_copy: true,
    };
    plan_with(config, &inputs)
}

/// Plans a session of `context` tokens over a loaded model holding `weights` bytes, on a lane
/// with `workers` (0 = unthreaded), the model loaded in place (`tr_model_adopt`): what the
/// threads lane's memory, fixed at its creation, must hold (checked by its `tr_session_new`).
pub fn plan_loaded(config: &Config, weights: u64, context: u32, workers: u32) -> TrReturn<MemoryPlan> {
    let inputs = PlanInputs {
        file_bytes: config.file_length,
        weights,
        tensors: config.tensor_count as u64,
        context,
        workers,
        load_copy: false,
    };
    plan_with(config, &inputs)
}

/// Operating stack, static data, and (threads lane) the static worker stack regions + TLS.
fn stacks(workers: u32) -> TrReturn<u64> {
    if workers > MAX_WORKERS {
        return Err(TrResult::InvalidArgument);
    }
    let regions = if workers == 0 { 0 } else { MAX_WORKERS as u64 };
    sum(&[STACK_BYTES, STATIC_DATA_BYTES, mul64(regions, WORKER_STACK_BYTES + TLS_BYTES)?])
}

/// The itemized plan (see `PlanInputs`).
pub fn plan_with(config: &Config, inputs: &PlanInputs) -> TrReturn<MemoryPlan> {
    let context = inputs.context;
    if context == 0 {
        return Err(TrResult::InvalidArgument);
    }
    if context > config.max_context {
        return Err(TrResult::ContextExceeded);
    }
    let c = context as u64;
    let (d, f, v) = (config.d_model as u64, config.d_ff as u64, config.vocab as u64);
    let (q_dim, kv_dim) = (config.q_dim(), config.kv_dim());
    // M_KV(C) = 2 (K and V) * L * C * kv_dim * 4 bytes (f32 cache).
    let kv = mul64(mul64(mul64(2 * 4, config.n_layers as u64)?, c)?, kv_dim)?;
    // per tile token: x, xb [D]; q, att [q_dim]; hb, hb2 [F] (session.rs TileBuffers);
    // scores [H_kv, C]; history [C + 1].
    let tile = (DEFAULT_PREFILL_TILE as u64).min(c);
    let per_token = sum(&[mul64(2, d)?, mul64(2, q_dim)?, mul64(2, f)?])?;
    let floats = sum(&[mul64(tile, per_token)?, mul64(config.n_kv_heads as u64, c)?, c + 1])?;
    // integer tier (format v2): per tile token the quantized input of the widest matrix,
    // 32 codes (1 B) + one scale (4 B) per block of max(D, q_dim, F) (session.rs QuantBuffers)
    let quant = match config.tier {
        Tier::F32 => 0,
        Tier::Int8 => mul64(tile, mul64(add64(d.max(q_dim).max(f), 31)? / 32, 32 + 4)?)?,
    };
    let activations = add64(mul64(floats, 4)?, quant)?;
    let logits = mul64(v, 8)?; // committed logits and the next step's (swapped at commit)
    let sampler = add64(mul64(v, SamplerWork::BYTES_PER_TOKEN)?, (v + 7) / 8)?;
    let transfer = mul64(c, 4)?; // the prompt's token ids in the host window
    let allocator = ALLOCATOR_FIXED_BYTES + ALLOCATOR_PER_ALLOCATION * ALLOCATIONS;
    // the directory and the per-layer tensor references the model keeps
    let metadata = add64(
        mul64(inputs.tensors, core::mem::size_of::<Entry>() as u64)?,
        mul64(config.n_layers as u64, core::mem::size_of::<LayerWeights>() as u64)?,
    )?;
    let stack = stacks(inputs.workers)?;
    let weights = inputs.weights;
    let load_copy = if inputs.load_copy { inputs.file_bytes } else { 0 };
    let peak_load = sum(&[weights, metadata, stack, load_copy, allocator])?;
    let steady_decode = sum(&[weights, metadata, 0, kv, activations, logits, sampler, stack, allocator])?;
    let peak_prefill = add64(steady_decode, transfer)?;
    Ok(MemoryPlan {
        weights,
        metadata,
        tokenizer: 0,
        kv,
        activations,
        logits,
        sampler,
        stack,
        transfer,
        load_copy,
        allocator,
        peak_load,
        peak_prefill,
        steady_decode,
    })
}

/// The plan, or `OutOfMemory` if either session peak exceeds `budget` (checked before
/// allocating a session: the model is loaded, its load copy gone).
pub fn preflight(config: &Config, weights: u64, context: u32, budget: u64) -> TrReturn<MemoryPlan> {
    let p = plan(config, weights, context)?;
    if p.peak_prefill > budget || p.steady_decode > budget {
        return Err(TrResult::OutOfMemory);
    }
    Ok(p)
}
