//! Model format v1 (little-endian; CONTRACT.md "Model format v1") and its validation.
//! Every model-derived product and sum is checked; every malformed input is a `TrResult`.
//!
//! header (64 bytes) | directory (tensor_count x 32 bytes) | tensor data (16-byte aligned)

use alloc::vec::Vec;

use crate::quant::{read_f32, Layout, Matrix};
use crate::result::{add64, mul, mul64, to_usize, TrResult, TrReturn};
use crate::sampler::reserved;
use crate::tokenizer::MIN_VOCAB;

pub const MAGIC: [u8; 8] = *b"TRLMODEL";
/// Format v1: the f32 kernel tier. Format v2: the same layout, integer tier (CONTRACT.md §10):
/// every matrix is q8/q4 and multiplies int8-quantized activations in integer arithmetic.
pub const FORMAT_VERSION: u32 = 1;
pub const FORMAT_VERSION_INT8: u32 = 2;
pub const HEADER_BYTES: usize = 64;
pub const DIR_ENTRY_BYTES: usize = 32;
/// Every tensor offset is a multiple of this.
pub const TENSOR_ALIGN: u64 = 16;
/// Header flag bits; any other bit set is `UnsupportedFeature`.
pub const FLAG_TIED_EMBEDDINGS: u32 = 1;
pub const KNOWN_FLAGS: u32 = FLAG_TIED_EMBEDDINGS;

/// Tensor kinds (directory `kind`). `per_layer` kinds carry layer < L, the others layer 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    TokenEmbedding = 1,
    AttnNorm = 2,
    Wq = 3,
    Wk = 4,
    Wv = 5,
    Wo = 6,
    FfnNorm = 7,
    WGate = 8,
    WUp = 9,
    WDown = 10,
    FinalNorm = 11,
    Output = 12,
    RopeCos = 13,
    RopeSin = 14,
}

/// Which dimension a shape refers to.
#[derive(Clone, Copy)]
#[allow(clippy::enum_variant_names)] // QDim, KvDim: the contract's q_dim and kv_dim
enum Dim {
    One,
    D,
    F,
    V,
    QDim,
    KvDim,
    Ctx,
    HalfHead,
}

/// (kind, name, per_layer, rows, cols, f32_only): the one table of tensor kinds.
const KINDS: [(Kind, &str, bool, Dim, Dim, bool); 14] = [
    (Kind::TokenEmbedding, "token_embedding", false, Dim::V, Dim::D, false),
    (Kind::AttnNorm, "attn_norm", true, Dim::One, Dim::D, true),
    (Kind::Wq, "wq", true, Dim::QDim, Dim::D, false),
    (Kind::Wk, "wk", true, Dim::KvDim, Dim::D, false),
    (Kind::Wv, "wv", true, Dim::KvDim, Dim::D, false),
    (Kind::Wo, "wo", true, Dim::D, Dim::QDim, false),
    (Kind::FfnNorm, "ffn_norm", true, Dim::One, Dim::D, true),
    (Kind::WGate, "w_gate", true, Dim::F, Dim::D, false),
    (Kind::WUp, "w_up", true, Dim::F, Dim::D, false),
    (Kind::WDown, "w_down", true, Dim::D, Dim::F, false),
    (Kind::FinalNorm, "final_norm", false, Dim::One, Dim::D, true),
    (Kind::Output, "output", false, Dim::V, Dim::D, false),
    (Kind::RopeCos, "rope_cos", false, Dim::Ctx, Dim::HalfHead, true),
    (Kind::RopeSin, "rope_sin", false, Dim::Ctx, Dim::HalfHead, true),
];

pub fn kind_name(kind: Kind) -> &'static str {
    KINDS[kind as usize - 1].1
}

fn kind_from_id(id: u16) -> TrReturn<usize> {
    let index = (id as usize).checked_sub(1).ok_or(TrResult::InvalidModel)?;
    if index < KINDS.len() {
        Ok(index)
    } else {
        Err(TrResult::InvalidModel)
    }
}

/// Every dimension of the header, as declared (u32) and validated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    pub n_layers: u32,
    pub d_model: u32,
    pub d_ff: u32,
    pub vocab: u32,
    pub n_heads: u32,
    pub n_kv_heads: u32,
    pub head_dim: u32,
    pub max_context: u32,
    pub rms_eps: f32,
    pub flags: u32,
    /// The kernel tier the header declares (format_version 1 or 2).
    pub tier: Tier,
    pub tensor_count: u32,
    pub file_length: u64,
}

/// The kernel tier of a model (its format version): which matvec arithmetic its matrices run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    /// Format v1: f32 activations times dequantized weights (CONTRACT.md §2, §8).
    F32,
    /// Format v2: int8 activation blocks times weight codes, exact integer sums (§10).
    Int8,
}

impl Tier {
    /// The tier's name (receipts, `inspect-model`, pack-model presets): "f32" or "int8".
    pub fn name(self) -> &'static str {
        match self {
            Tier::F32 => "f32",
            Tier::Int8 => "int8",
        }
    }

    pub fn from_version(version: u32) -> TrReturn<Tier> {
        match version {
            FORMAT_VERSION => Ok(Tier::F32),
            FORMAT_VERSION_INT8 => Ok(Tier::Int8),
            _ => Err(TrResult::UnsupportedFeature),
        }
    }
}

impl Config {
    pub fn tied_embeddings(&self) -> bool {
        self.flags & FLAG_TIED_EMBEDDINGS != 0
    }
    pub fn q_dim(&self) -> u64 {
        self.n_heads as u64 * self.head_dim as u64
    }
    pub fn kv_dim(&self) -> u64 {
        self.n_kv_heads as u64 * self.head_dim as u64
    }
    /// Directory entries a valid model has: 4 globals (+ output if untied) + 9 per layer.
    pub fn expected_tensors(&self) -> u64 {
        let globals = if self.tied_embeddings() { 4 } else { 5 };
        globals + 9 * self.n_layers as u64
    }
    fn dim(&self, d: Dim) -> u64 {
        match d {
            Dim::One => 1,
            Dim::D => self.d_model as u64,
            Dim::F => self.d_ff as u64,
            Dim::V => self.vocab as u64,
            Dim::QDim => self.q_dim(),
            Dim::KvDim => self.kv_dim(),
            Dim::Ctx => self.max_context as u64,
            Dim::HalfHead => self.head_dim as u64 / 2,
        }
    }
}

fn u32_at(bytes: &[u8], at: usize) -> TrReturn<u32> {
    let b = bytes.get(at..at + 4).ok_or(TrResult::Bounds)?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn u16_at(bytes: &[u8], at: usize) -> TrReturn<u16> {
    let b = bytes.get(at..at + 2).ok_or(TrResult::Bounds)?;
    Ok(u16::from_le_bytes([b[0], b[1]]))
}

fn u64_at(bytes: &[u8], at: usize) -> TrReturn<u64> {
    let lo = u32_at(bytes, at)? as u64;
    let hi = u32_at(bytes, at + 4)? as u64;
    Ok(lo | (hi << 32))
}

/// Parses and validates the 64-byte header against the actual file length.
pub fn parse_header(bytes: &[u8]) -> TrReturn<Config> {
    parse_header_of_length(bytes, bytes.len() as u64)
}

/// `parse_header` of a file `actual` bytes long of which `bytes` is a prefix (at least the
/// header): what a host can check before the whole model is in the runtime (admission.rs).
pub fn parse_header_of_length(bytes: &[u8], actual: u64) -> TrReturn<Config> {
    if bytes.len() < HEADER_BYTES {
        return Err(TrResult::Bounds);
    }
    if bytes[..8] != MAGIC {
        return Err(TrResult::InvalidModel);
    }
    let tier = Tier::from_version(u32_at(bytes, 8)?)?;
    let config = Config {
        tier,
        flags: u32_at(bytes, 12)?,
        n_layers: u32_at(bytes, 16)?,
        d_model: u32_at(bytes, 20)?,
        d_ff: u32_at(bytes, 24)?,
        vocab: u32_at(bytes, 28)?,
        n_heads: u32_at(bytes, 32)?,
        n_kv_heads: u32_at(bytes, 36)?,
        head_dim: u32_at(bytes, 40)?,
        max_context: u32_at(bytes, 44)?,
        rms_eps: f32::from_bits(u32_at(bytes, 48)?),
        tensor_count: u32_at(bytes, 52)?,
        file_length: u64_at(bytes, 56)?,
    };
    // A truncated file is Bounds; trailing bytes beyond the declared length are a bad model.
    if config.file_length > actual {
        return Err(TrResult::Bounds);
    }
    if config.file_length < actual {
        return Err(TrResult::InvalidModel);
    }
    if config.flags & !KNOWN_FLAGS != 0 {
        return Err(TrResult::UnsupportedFeature);
    }
    let c = &config;
    let dims = [c.n_layers, c.d_model, c.d_ff, c.vocab, c.n_heads, c.n_kv_heads, c.head_dim];
    if dims.contains(&0) || c.max_context == 0 {
        return Err(TrResult::UnsupportedShape);
    }
    if !c.n_heads.is_multiple_of(c.n_kv_heads) || !c.head_dim.is_multiple_of(2) || c.vocab < MIN_VOCAB {
        return Err(TrResult::UnsupportedShape);
    }
    #[allow(clippy::neg_cmp_op_on_partial_ord)] // a NaN rms_eps must be refused too
    if !(c.rms_eps > 0.0) || !c.rms_eps.is_finite() {
        return Err(TrResult::InvalidModel);
    }
    if c.tensor_count as u64 != c.expected_tensors() {
        return Err(TrResult::InvalidModel);
    }
    // Every in-memory size must fit usize (wasm32: 4 GiB) without wrapping.
    to_usize(c.q_dim())?;
    to_usize(c.kv_dim())?;
    to_usize(c.file_length)?;
    Ok(config)
}

/// One validated directory entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub kind: Kind,
    pub layer: u32,
    pub layout: Layout,
    pub rows: u32,
    pub cols: u32,
    pub offset: u64,
    pub stored_bytes: u64,
}

/// Where a tensor's data lives after loading: f32 tensors are decoded into `Model::floats`,
/// packed tensors stay in `Model::bytes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorRef {
    pub layout: Layout,
    pub rows: usize,
    pub cols: usize,
    pub start: usize,
    pub len: usize,
}

#[derive(Clone, Copy, Debug)]
pub struct LayerWeights {
    pub attn_norm: TensorRef,
    pub wq: TensorRef,
    pub wk: TensorRef,
    pub wv: TensorRef,
    pub wo: TensorRef,
    pub ffn_norm: TensorRef,
    pub w_gate: TensorRef,
    pub w_up: TensorRef,
    pub w_down: TensorRef,
}

pub struct Model {
    pub config: Config,
    pub entries: Vec<Entry>,
    bytes: Vec<u8>,
    floats: Vec<f32>,
    pub embedding: TensorRef,
    pub layers: Vec<LayerWeights>,
    pub final_norm: TensorRef,
    /// Equals `embedding` when embeddings are tied.
    pub output: TensorRef,
    pub rope_cos: TensorRef,
    pub rope_sin: TensorRef,
}

/// Reads and validates the directory (shapes, layouts, bounds, alignment, overlap, uniqueness).
pub fn parse_directory(bytes: &[u8], config: &Config) -> TrReturn<Vec<Entry>> {
    parse_directory_of_length(bytes, config, bytes.len() as u64)
}

/// `parse_directory` of a file `actual` bytes long of which `bytes` is a prefix holding at
/// least the header and the directory.
pub fn parse_directory_of_length(bytes: &[u8], config: &Config, actual: u64) -> TrReturn<Vec<Entry>> {
    let count = config.tensor_count as usize;
    let dir_end = add64(HEADER_BYTES as u64, mul64(count as u64, DIR_ENTRY_BYTES as u64)?)?;
    if dir_end > bytes.len() as u64 || dir_end > actual {
        return Err(TrResult::Bounds);
    }
    let mut entries: Vec<Entry> = reserved(count)?;
    for i in 0..count {
        let at = HEADER_BYTES + i * DIR_ENTRY_BYTES;
        let kind_index = kind_from_id(u16_at(bytes, at)?)?;
        let (kind, _, per_layer, rows_dim, cols_dim, f32_only) = KINDS[kind_index];
        let layer = u16_at(bytes, at + 2)? as u32;
        let layout = Layout::from_id(u32_at(bytes, at + 4)?)?;
        let entry = Entry {
            kind,
            layer,
            layout,
            rows: u32_at(bytes, at + 8)?,
            cols: u32_at(bytes, at + 12)?,
            offset: u64_at(bytes, at + 16)?,
            stored_bytes: u64_at(bytes, at + 24)?,
        };
        if (per_layer && layer >= config.n_layers) || (!per_layer && layer != 0) {
            return Err(TrResult::InvalidModel);
        }
        if kind == Kind::Output && config.tied_embeddings() {
            return Err(TrResult::InvalidModel);
        }
        if f32_only && layout != Layout::F32 {
            return Err(TrResult::UnsupportedQuantization);
        }
        // the integer tier multiplies weight codes: every matrix but an untied embedding (a row
        // lookup only) is q8/q4
        let lookup_only = kind == Kind::TokenEmbedding && !config.tied_embeddings();
        if config.tier == Tier::Int8 && !f32_only && !lookup_only && layout == Layout::F32 {
            return Err(TrResult::UnsupportedQuantization);
        }
        if entry.rows as u64 != config.dim(rows_dim) || entry.cols as u64 != config.dim(cols_dim) {
            return Err(TrResult::UnsupportedShape);
        }
        if entry.stored_bytes != layout.tensor_bytes(entry.rows as u64, entry.cols as u64)? {
            return Err(TrResult::InvalidModel);
        }
        let end = add64(entry.offset, entry.stored_bytes)?;
        if end > actual {
            return Err(TrResult::Bounds);
        }
        if !entry.offset.is_multiple_of(TENSOR_ALIGN) {
            return Err(TrResult::Alignment);
        }
        if entry.offset < dir_end {
            return Err(TrResult::InvalidModel); // tensor data over the header or directory
        }
        for other in entries.iter() {
            if other.kind == entry.kind && other.layer == entry.layer {
                return Err(TrResult::InvalidModel); // duplicate
            }
            let other_end = other.offset + other.stored_bytes; // checked when admitted
            if entry.offset < other_end && other.offset < end {
                return Err(TrResult::InvalidModel); // overlap
            }
        }
        entries.push(entry);
    }
    Ok(entries)
}

impl Model {
    /// Validates `bytes` completely, then takes ownership (f32 tensors decoded once).
    pub fn load(bytes: Vec<u8>) -> TrReturn<Model> {
        let config = parse_header(&bytes)?;
        let entries = parse_directory(&bytes, &config)?;
        let mut float_count = 0usize;
        for e in entries.iter().filter(|e| e.layout == Layout::F32) {
            float_count =
                float_count.checked_add(mul(e.rows as usize, e.cols as usize)?).ok_or(TrResult::IntegerOverflow)?;
        }
        let mut floats: Vec<f32> = reserved(float_count)?;
        let find = |kind: Kind, layer: u32| -> TrReturn<&Entry> {
            entries.iter().find(|e| e.kind == kind && e.layer == layer).ok_or(TrResult::InvalidModel)
        };
        let mut admit = |e: &Entry| -> TrReturn<TensorRef> {
            let start = to_usize(e.offset)?;
            let len = to_usize(e.stored_bytes)?;
            let data = bytes.get(start..start + len).ok_or(TrResult::Bounds)?;
            let (rows, cols) = (e.rows as usize, e.cols as usize);
            match e.layout {
                Layout::F32 => {
                    let first = floats.len();
                    for chunk in data.chunks_exact(4) {
                        let v = f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
                        if !v.is_finite() {
                            return Err(TrResult::InvalidModel);
                        }
                        floats.push(v);
                    }
                    Ok(TensorRef { layout: e.layout, rows, cols, start: first, len: rows * cols })
                }
                Layout::Q8 | Layout::Q4 => {
                    check_scales(data, e.layout)?;
                    Ok(TensorRef { layout: e.layout, rows, cols, start, len })
                }
            }
        };
        let embedding = admit(find(Kind::TokenEmbedding, 0)?)?;
        let mut layers: Vec<LayerWeights> = reserved(config.n_layers as usize)?;
        for l in 0..config.n_layers {
            layers.push(LayerWeights {
                attn_norm: admit(find(Kind::AttnNorm, l)?)?,
                wq: admit(find(Kind::Wq, l)?)?,
                wk: admit(find(Kind::Wk, l)?)?,
                wv: admit(find(Kind::Wv, l)?)?,
                wo: admit(find(Kind::Wo, l)?)?,
                ffn_norm: admit(find(Kind::FfnNorm, l)?)?,
                w_gate: admit(find(Kind::WGate, l)?)?,
                w_up: admit(find(Kind::WUp, l)?)?,
                w_down: admit(find(Kind::WDown, l)?)?,
            });
        }
        let final_norm = admit(find(Kind::FinalNorm, 0)?)?;
        let output = if config.tied_embeddings() { embedding } else { admit(find(Kind::Output, 0)?)? };
        let rope_cos = admit(find(Kind::RopeCos, 0)?)?;
        let rope_sin = admit(find(Kind::RopeSin, 0)?)?;
        Ok(Model { config, entries, bytes, floats, embedding, layers, final_norm, output, rope_cos, rope_sin })
    }

    /// A weight matrix view for the kernels.
    pub fn matrix(&self, t: &TensorRef) -> Matrix<'_> {
        match t.layout {
            Layout::F32 => Matrix::F32(&self.floats[t.start..t.start + t.len]),
            Layout::Q8 => Matrix::Q8(&self.bytes[t.start..t.start + t.len]),
            Layout::Q4 => Matrix::Q4(&self.bytes[t.start..t.start + t.len]),
        }
    }

    /// An f32 tensor's values (norm weights, RoPE tables).
    pub fn floats(&self, t: &TensorRef) -> &[f32] {
        &self.floats[t.start..t.start + t.len]
    }

    /// The whole file as loaded.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Bytes held by this model (file + decoded f32 tensors): M_weights of the memory plan.
    pub fn resident_bytes(&self) -> u64 {
        self.bytes.len() as u64 + 4 * self.floats.len() as u64
    }
}

/// Every block scale of a packed tensor is finite.
fn check_scales(data: &[u8], layout: Layout) -> TrReturn<()> {
    let block_bytes = match layout {
        Layout::Q8 => crate::quant::Q8_BLOCK_BYTES,
        Layout::Q4 => crate::quant::Q4_BLOCK_BYTES,
        Layout::F32 => return Ok(()),
    };
    for block in data.chunks_exact(block_bytes) {
        match read_f32(block, 0) {
            Some(s) if s.is_finite() => {}
            _ => return Err(TrResult::InvalidModel),
        }
    }
    Ok(())
}
