// Node driver for tests/crates/lanes: runs lanes through crates/wasm/js and prints one JSON document.
// Python (tests/crates/lanes/test_*.py) owns every assertion; this program only measures.
//
//   node drive.mjs kernels HARNESS.wasm GOLDEN_DIR
//   node drive.mjs cases HARNESS.wasm CASES.json   (the lane's kernels on the given inputs)
//   node drive.mjs e2e LANE.wasm WORKERS GOLDEN_DIR MODEL
//   node drive.mjs cancel LANE.wasm WORKERS MODEL
//   node drive.mjs kill LANE.wasm WORKERS MODEL FALLBACK.wasm LIVENESS_MS VICTIM
//   node drive.mjs hash LANE.wasm WORKERS
//   node drive.mjs tiles HARNESS.wasm
//   node drive.mjs prefill LANE.wasm WORKERS GOLDEN_DIR MODEL TILE...
//   node drive.mjs prefill-cancel LANE.wasm WORKERS MODEL TILE
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { instantiate, sha256Hex, TR_CANCELLED } from '../../../crates/wasm/js/host.js';
import * as abi from '../../../crates/wasm/js/abi.js';

const bitsToF32 = (b) => new Float32Array(new Uint32Array([Number(b)]).buffer)[0];
const f32ToBits = (f) => new Uint32Array(new Float32Array([f]).buffer)[0];
const hex = (u) => `0x${u.toString(16).padStart(8, '0')}`;
const readGolden = (dir, op) => JSON.parse(readFileSync(join(dir, `${op}.json`), 'utf8'));

// ---- kernels: the lane's kernels vs the scalar oracle -----------------------------------

class Harness {
  constructor(ex) {
    this.ex = ex;
  }

  f32(values) {
    const p = this.ex.h_alloc(Math.max(4, values.length * 4));
    new Float32Array(this.ex.memory.buffer, p, values.length).set(values);
    return p;
  }

  bytes(u8) {
    const p = this.ex.h_alloc(Math.max(1, u8.length));
    new Uint8Array(this.ex.memory.buffer, p, u8.length).set(u8);
    return p;
  }

  read(p, n) {
    return Array.from(new Uint32Array(this.ex.memory.buffer.slice(p, p + 4 * n)), hex);
  }
}

const LAYOUT_ID = { f32: 0, 'q8-block-v1': 1, 'q4-block-v1': 2 };

/** Runs one operator case with kernel set `set` (0 oracle, 1 lane); returns {code, bits}. */
function runCase(h, set, op, shape, params, inputs) {
  const ex = h.ex;
  switch (op) {
    case 'q8_matvec':
    case 'q4_matvec':
    case 'f32_matvec': {
      const layout = op === 'f32_matvec' ? 0 : op === 'q8_matvec' ? 1 : 2;
      const w = layout === 0 ? h.f32(inputs.w) : h.bytes(inputs.w);
      const wLen = layout === 0 ? inputs.w.length * 4 : inputs.w.length;
      const out = h.f32(new Array(shape.rows).fill(0));
      const code = ex.h_matvec(set, layout, w, wLen, h.f32(inputs.x), shape.cols, out, shape.rows);
      return { code, bits: h.read(out, shape.rows) };
    }
    case 'rmsnorm': {
      const out = h.f32(new Array(shape.n).fill(0));
      const code = ex.h_rmsnorm(set, h.f32(inputs.x), h.f32(inputs.weight), shape.n, Number(params.eps), out);
      return { code, bits: h.read(out, shape.n) };
    }
    case 'attention': {
      const qDim = shape.n_heads * shape.head_dim;
      const out = h.f32(new Array(qDim).fill(0));
      const code = ex.h_attention(set, shape.n_heads, shape.n_kv_heads, shape.head_dim, shape.n_pos,
        h.f32(inputs.q), h.f32(inputs.keys), h.f32(inputs.values), out);
      return { code, bits: h.read(out, qDim) };
    }
    case 'add_assign': {
      const x = h.f32(inputs.x);
      const code = ex.h_add_assign(set, x, h.f32(inputs.y), shape.n);
      return { code, bits: h.read(x, shape.n) };
    }
    case 'rope': {
      const v = h.f32(inputs.v);
      const code = ex.h_rope(set, v, h.f32(inputs.cos), h.f32(inputs.sin), shape.head_dim / 2);
      return { code, bits: h.read(v, shape.head_dim) };
    }
    case 'silu_mul': {
      const g = h.f32(inputs.gate);
      const code = ex.h_silu_mul(set, g, h.f32(inputs.up), shape.n);
      return { code, bits: h.read(g, shape.n) };
    }
    case 'softmax': {
      const s = h.f32(inputs.scores);
      const code = ex.h_softmax(set, s, shape.n);
      return { code, bits: h.read(s, shape.n) };
    }
    default:
      throw new Error(`no harness entry for ${op}`);
  }
}

function goldenInputs(record) {
  const out = {};
  for (const [name, item] of Object.entries(record.inputs)) {
    if (item.kind === 'f32_bits') out[name] = item.values.map(bitsToF32);
    else if (item.kind === 'bytes_hex') out[name] = Uint8Array.from(item.hex.match(/../g) || [], (b) => parseInt(b, 16));
    else out[name] = item.values;
  }
  return out;
}

/** Seeded full-precision inputs (unlike the goldens' k/256 grid, these round in every add). */
function* sweepCases() {
  let s = 0x9e3779b9;
  const next = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s;
  };
  const unit = () => Math.fround(next() / 2 ** 31 - 1); // [-1, 1)
  const vec = (n) => Array.from({ length: n }, unit);
  const packed = (rows, cols, q4) => {
    const blocks = Math.ceil(cols / 32);
    const bytes = [];
    for (let r = 0; r < rows; r++) {
      for (let b = 0; b < blocks; b++) {
        // |scale * code| <= 1, like real weights after the packer's absmax scaling
        const scale = new Uint8Array(new Float32Array([Math.fround((next() / 2 ** 32) / 128)]).buffer);
        bytes.push(...scale);
        const n = Math.min(32, cols - 32 * b);
        const codes = Array.from({ length: 32 }, (_, j) => (j < n ? next() & 0xff : 0));
        if (q4) for (let i = 0; i < 16; i++) bytes.push((codes[2 * i] & 15) | ((codes[2 * i + 1] & 15) << 4));
        else bytes.push(...codes);
      }
    }
    return Uint8Array.from(bytes);
  };
  // every tail length from 1 to 2x the q8/q4 block (32); rows 3, 5, 6, 7: the two-row kernel
  // with and without a single last row, over one to three pairs
  for (const [op, q4] of [['q8_matvec', false], ['q4_matvec', true]]) {
    for (let cols = 1; cols <= 64; cols++) yield { op, shape: { rows: 5, cols }, inputs: { w: packed(5, cols, q4), x: vec(cols) } };
    for (const cols of [96, 1024]) {
      for (const rows of [3, 6, 7]) yield { op, shape: { rows, cols }, inputs: { w: packed(rows, cols, q4), x: vec(cols) } };
    }
  }
  // f32 kernels: every tail length from 1 to 2x the vector width (4), and a few long ones
  const lengths = [1, 2, 3, 4, 5, 6, 7, 8, 31, 33, 64, 257];
  for (const cols of lengths) yield { op: 'f32_matvec', shape: { rows: 3, cols }, inputs: { w: vec(3 * cols), x: vec(cols) } };
  for (const n of lengths) yield { op: 'rmsnorm', shape: { n }, params: { eps: f32ToBits(1e-5) }, inputs: { x: vec(n), weight: vec(n) } };
  for (const n of lengths) yield { op: 'add_assign', shape: { n }, inputs: { x: vec(n), y: vec(n) } };
  for (const n of lengths) yield { op: 'silu_mul', shape: { n }, inputs: { gate: vec(n), up: vec(n) } };
  for (const n of lengths) yield { op: 'softmax', shape: { n }, inputs: { scores: vec(n) } };
  for (const half of [1, 2, 3, 4, 5, 8]) yield { op: 'rope', shape: { head_dim: 2 * half }, inputs: { v: vec(2 * half), cos: vec(half), sin: vec(half) } };
  for (const headDim of [1, 2, 3, 4, 5, 6, 7, 8, 64]) {
    for (const [nh, nkv, pos] of [[1, 1, 1], [4, 2, 3], [6, 2, 9]]) {
      const kv = pos * nkv * headDim;
      yield { op: 'attention', shape: { n_heads: nh, n_kv_heads: nkv, head_dim: headDim, n_pos: pos }, inputs: { q: vec(nh * headDim), keys: vec(kv), values: vec(kv) } };
    }
  }
}

const GOLDEN_OPERATORS = ['q8_matvec', 'q4_matvec', 'f32_matvec', 'rmsnorm', 'attention', 'rope', 'silu_mul', 'softmax'];

async function kernels(harnessPath, goldenDir) {
  const { instance } = /** @type {any} */ (await WebAssembly.instantiate(readFileSync(harnessPath), {}));
  const h = new Harness(instance.exports);
  const cases = [];
  for (const op of GOLDEN_OPERATORS) {
    for (const record of readGolden(goldenDir, op)) {
      const got = runCase(h, 1, op, record.shape, record.params, goldenInputs(record));
      cases.push({ id: record.id, operator: op, source: 'golden', got });
    }
  }
  let k = 0;
  for (const c of sweepCases()) {
    const id = `${c.op}.sweep-${String(k++).padStart(3, '0')}`;
    const oracle = runCase(h, 0, c.op, c.shape, c.params || {}, c.inputs);
    const got = runCase(h, 1, c.op, c.shape, c.params || {}, c.inputs);
    cases.push({ id, operator: c.op, source: 'sweep', shape: c.shape, oracle, got });
  }
  return { simd: instance.exports.h_simd() === 1, cases };
}

// ---- cases: the lane's kernel set on inputs written by Python (tests/crates/lanes/simd_cases.py) --

async function cases(harnessPath, casesPath) {
  const { instance } = /** @type {any} */ (await WebAssembly.instantiate(readFileSync(harnessPath), {}));
  const h = new Harness(instance.exports);
  const out = [];
  for (const c of JSON.parse(readFileSync(casesPath, 'utf8'))) {
    const got = runCase(h, 1, c.operator, c.shape, c.params || {}, goldenInputs(c));
    out.push({ id: c.id, got });
  }
  return { simd: instance.exports.h_simd() === 1, cases: out };
}

// ---- end to end through the shipped lane modules -----------------------------------------

function sessionConfig(record) {
  const p = record.params;
  return {
    seed: BigInt(p.seed),
    stream: BigInt(p.stream),
    temperature: bitsToF32(p.temperature),
    topK: Number(p.top_k),
    topP: bitsToF32(p.top_p),
    repetitionPenalty: bitsToF32(p.repetition_penalty),
  };
}

/**
 * The lane of `lanePath` started for the model of `modelPath` (read, loaded by copy as
 * abi.loadModel does): the threads lane's shared memory created at the plan's peak, with room
 * for `sessions` sessions alive at once. { rt, modelBytes }.
 * @param {string} lanePath
 * @param {number} workers
 * @param {string} modelPath
 * @param {{ sessions?: number, livenessMs?: number }} [options]
 */
async function startFor(lanePath, workers, modelPath, { sessions = 1, livenessMs = 5000 } = {}) {
  const modelBytes = readFileSync(modelPath);
  const options = { bytes: readFileSync(lanePath), workers, livenessMs };
  const { rt } = await abi.instantiateFor(options, modelBytes, { inPlace: false, sessions });
  return { rt: /** @type {any} */ (rt), modelBytes };
}

async function counters(rt) {
  const c = await abi.pathCounters(rt);
  const out = { scalar: Number(c.scalar), simd: Number(c.simd), relaxed: Number(c.relaxed) };
  if (rt.workers > 0) out.workers = await abi.workerCounters(rt);
  return out;
}

async function e2e(lanePath, workers, goldenDir, modelPath) {
  const { rt, modelBytes } = await startFor(lanePath, workers, modelPath);
  try {
    const model = await abi.loadModel(rt, modelBytes);
    const results = [];
    for (const record of readGolden(goldenDir, 'e2e_decode')) {
      const prompt = record.inputs.prompt_tokens.values;
      const out = await abi.generate(rt, model, sessionConfig(record), prompt, record.shape.max_tokens);
      results.push({ id: record.id, code: out.code, tokens: out.tokens, rng_state: hex32x2(out.rngState) });
    }
    return { lane: await rt.call('tr_lane'), sha256: rt.sha256, results, counters: await counters(rt) };
  } finally {
    await rt.close();
  }
}

const hex32x2 = (big) => `0x${big.toString(16).padStart(16, '0')}`;

// ---- cancellation at every barrier of a decode step --------------------------------------

const PROMPT = abi.encodePrompt('Hello, world');
const STEPS = 4;

async function cancel(lanePath, workers, modelPath) {
  const { rt, modelBytes } = await startFor(lanePath, workers, modelPath);
  try {
    const model = await abi.loadModel(rt, modelBytes);
    // reference: the uncancelled tokens, and how many barriers one decode step opens (the
    // first step only samples from the prefill's logits; later ones run the forward pass of
    // the token sampled before)
    const ref = await abi.newSession(rt, model, {});
    await abi.prefill(rt, ref, PROMPT);
    const reference = [await abi.decode(rt, ref)];
    const before = (await abi.workerCounters(rt)).barriers;
    reference.push(await abi.decode(rt, ref));
    const barriersPerStep = (await abi.workerCounters(rt)).barriers - before;
    for (let i = 2; i < STEPS; i++) reference.push(await abi.decode(rt, ref));
    await rt.call('tr_session_free', ref);
    const trials = [];
    for (let k = 1; k <= barriersPerStep; k++) {
      const s = await abi.newSession(rt, model, {});
      await abi.prefill(rt, s, PROMPT);
      await abi.decode(rt, s); // commit one token, so there is state to keep
      await rt.call('tr_fault_cancel_at_barrier', k);
      const cancelled = await abi.decode(rt, s);
      await rt.call('tr_fault_cancel_at_barrier', 0);
      const after = [];
      for (let i = 1; i < STEPS; i++) after.push(await abi.decode(rt, s));
      trials.push({ barrier: k, code: cancelled.code, resumed: after.map((d) => [d.code, d.token, hex32x2(d.rngState)]) });
      await rt.call('tr_session_free', s);
    }
    return {
      cancelled_code: TR_CANCELLED,
      barriers_per_step: barriersPerStep,
      reference: reference.map((d) => [d.code, d.token, hex32x2(d.rngState)]),
      trials,
    };
  } finally {
    await rt.close();
  }
}

// ---- tiled kernels against matvec, every tail length -----------------------------------------

/** Deterministic matrices per layout, cols (every q8/q4 tail: 1..64, and longer rows) and
 * tile size (1..13: groups of 8 and 4 and remainders); the harness counts differing bits. */
async function tiles(harnessPath) {
  const { instance } = /** @type {any} */ (await WebAssembly.instantiate(readFileSync(harnessPath), {}));
  const h = new Harness(instance.exports);
  const ex = instance.exports;
  let s = 0x1234567;
  const next = () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0);
  const unit = () => (next() >>> 8) / 8388608 - 1;
  const cases = [];
  const colsList = [...Array.from({ length: 64 }, (_, i) => i + 1), 95, 128, 1024];
  for (const layout of [0, 1, 2]) {
    for (const cols of colsList) {
      const rows = 5;
      const blocks = Math.ceil(cols / 32);
      let w;
      let wLen;
      if (layout === 0) {
        w = h.f32(Array.from({ length: rows * cols }, unit));
        wLen = rows * cols * 4;
      } else {
        const blockBytes = layout === 1 ? 36 : 20;
        const bytes = new Uint8Array(rows * blocks * blockBytes);
        const view = new DataView(bytes.buffer);
        for (let b = 0; b < rows * blocks; b++) {
          view.setFloat32(b * blockBytes, 1 / (1 << (next() % 6)), true);
          for (let j = 4; j < blockBytes; j++) bytes[b * blockBytes + j] = next() >>> 24;
        }
        w = h.bytes(bytes);
        wLen = bytes.length;
      }
      for (let tokens = 1; tokens <= 13; tokens++) { // every mix of the 8-, 4- and 1-token groups
        const xs = h.f32(Array.from({ length: tokens * cols }, unit));
        cases.push({ layout, cols, tokens, differ: ex.h_tile_mismatches(layout, w, wLen, xs, cols, rows, tokens) });
      }
    }
  }
  const attention = [];
  for (const [nHeads, nKv, hd, nPos] of [[6, 2, 20, 1], [6, 2, 20, 9], [4, 4, 7, 5], [8, 1, 64, 33]]) {
    const q = h.f32(Array.from({ length: nHeads * hd }, unit));
    const kv = nPos * nKv * hd;
    const keys = h.f32(Array.from({ length: kv }, unit));
    const values = h.f32(Array.from({ length: kv }, unit));
    attention.push({ shape: [nHeads, nKv, hd, nPos], differ: ex.h_attention_head_mismatches(nHeads, nKv, hd, nPos, q, keys, values) });
  }
  return { simd: ex.h_simd() === 1, cases, attention };
}

// ---- tiled prefill against token-by-token prefill ----------------------------------------

const digestOf = async (rt, s) => {
  const d = await abi.sessionDigest(rt, s);
  return { position: Number(d.position), logits: d.logits.toString(16), kv: d.kv.toString(16) };
};

/** Per golden prompt and tile size: the digest after prefill and after 3 greedy decode steps. */
async function prefillTiles(lanePath, workers, goldenDir, modelPath, tiles) {
  // a tile over the default reallocates the session's buffers (outside the plan): room for two
  const { rt, modelBytes } = await startFor(lanePath, workers, modelPath, { sessions: 2 });
  try {
    const model = await abi.loadModel(rt, modelBytes);
    const seen = new Set();
    const results = [];
    for (const record of readGolden(goldenDir, 'e2e_decode')) {
      const prompt = record.inputs.prompt_tokens.values;
      if (seen.has(prompt.join(','))) continue;
      seen.add(prompt.join(','));
      for (const tile of [...tiles, prompt.length]) {
        const s = await abi.newSession(rt, model, {});
        const tileCode = await abi.setPrefillTile(rt, s, tile);
        const code = await abi.prefill(rt, s, prompt);
        const prefilled = await digestOf(rt, s);
        const tokens = [];
        for (let i = 0; i < 3; i++) tokens.push((await abi.decode(rt, s)).token);
        await abi.decode(rt, s); // feeds the third token: its K/V enter the digest
        results.push({ prompt: record.id, tile, tile_code: tileCode, code, prefilled, tokens, decoded: await digestOf(rt, s) });
        await rt.call('tr_session_free', s);
      }
    }
    return { lane: await rt.call('tr_lane'), workers: rt.workers, results, counters: await counters(rt) };
  } finally {
    await rt.close();
  }
}

// ---- cancellation at every barrier of a tiled prefill -------------------------------------

const LONG_PROMPT = abi.encodePrompt('The quick brown fox jumps over the lazy dog.');

async function prefillCancel(lanePath, workers, modelPath, tile) {
  // the cancelled session and its token-by-token reference alive at once (+ a larger tile)
  const { rt, modelBytes } = await startFor(lanePath, workers, modelPath, { sessions: 3 });
  try {
    const model = await abi.loadModel(rt, modelBytes);
    const session = async (t) => {
      const s = await abi.newSession(rt, model, {});
      await abi.setPrefillTile(rt, s, t);
      return s;
    };
    const ref = await session(tile);
    const before = (await abi.workerCounters(rt)).barriers;
    await abi.prefill(rt, ref, LONG_PROMPT);
    const barriers = (await abi.workerCounters(rt)).barriers - before;
    const full = await digestOf(rt, ref);
    await rt.call('tr_session_free', ref);
    const prefixes = {}; // committed length -> digest of token-by-token prefill of the prefix
    const trials = [];
    for (let k = 1; k <= barriers; k++) {
      const s = await session(tile);
      await rt.call('tr_fault_cancel_at_barrier', k);
      const code = await abi.prefill(rt, s, LONG_PROMPT);
      await rt.call('tr_fault_cancel_at_barrier', 0);
      const cancelled = await digestOf(rt, s);
      const at = cancelled.position;
      if (at > 0 && !(at in prefixes)) {
        const p = await session(1);
        await abi.prefill(rt, p, LONG_PROMPT.slice(0, at));
        prefixes[at] = await digestOf(rt, p);
        await rt.call('tr_session_free', p);
      }
      const resumedCode = await abi.prefill(rt, s, LONG_PROMPT.slice(at));
      trials.push({ barrier: k, code, cancelled, prefix: prefixes[at] ?? null, resumed_code: resumedCode, resumed: await digestOf(rt, s) });
      await rt.call('tr_session_free', s);
    }
    return { cancelled_code: TR_CANCELLED, prompt_len: LONG_PROMPT.length, barriers, full, trials };
  } finally {
    await rt.close();
  }
}

// ---- a worker killed mid-operation --------------------------------------------------------

async function kill(lanePath, workers, modelPath, fallbackPath, livenessMs, victim) {
  const { rt, modelBytes } = await startFor(lanePath, workers, modelPath, { livenessMs });
  const report = { steps: [] };
  try {
    const model = await abi.loadModel(rt, modelBytes);
    const s = await abi.newSession(rt, model, {});
    report.prefill = await abi.prefill(rt, s, PROMPT);
    const first = await abi.decode(rt, s);
    report.steps.push([first.code, first.token]);
    // the victim dies while the next step runs (or, if that step already finished, before
    // the one after): either way a barrier is left without its participant
    const pending = abi.decode(rt, s);
    await rt.kill(victim);
    const t0 = performance.now();
    for (const p of [pending, abi.decode(rt, s), abi.decode(rt, s)]) {
      const d = await p;
      report.steps.push([d.code, d.token]);
    }
    report.failure_ms = performance.now() - t0;
    report.worker_counters = await abi.workerCounters(rt);
    report.host_failures = rt.workerFailures();
  } finally {
    await rt.close();
  }
  // the lower lane takes over from scratch and produces the same first tokens
  const lower = await instantiate({ bytes: readFileSync(fallbackPath) });
  try {
    const model = await abi.loadModel(lower, modelBytes);
    const out = await abi.generate(lower, model, {}, PROMPT, 3);
    report.fallback = { lane: await lower.call('tr_lane'), code: out.code, tokens: out.tokens };
  } finally {
    await lower.close();
  }
  return report;
}

// ---- the module hash gate ------------------------------------------------------------------

async function hash(lanePath, workers) {
  const bytes = readFileSync(lanePath);
  const sha256 = await sha256Hex(bytes);
  const wrong = sha256.replace(/^./, (c) => (c === '0' ? '1' : '0'));
  let refused = null;
  try {
    const rt = await instantiate({ bytes, workers, sha256: wrong });
    await rt.close();
  } catch (e) {
    refused = e.message;
  }
  const rt = await instantiate({ bytes, workers, sha256 });
  const accepted = { workers: rt.workers, sha256: rt.sha256 };
  await rt.close();
  return { sha256, refused, accepted };
}

const [command, ...args] = process.argv.slice(2);
const commands = {
  kernels: () => kernels(args[0], args[1]),
  cases: () => cases(args[0], args[1]),
  e2e: () => e2e(args[0], Number(args[1]), args[2], args[3]),
  cancel: () => cancel(args[0], Number(args[1]), args[2]),
  kill: () => kill(args[0], Number(args[1]), args[2], args[3], Number(args[4]), Number(args[5])),
  hash: () => hash(args[0], Number(args[1])),
  tiles: () => tiles(args[0]),
  prefill: () => prefillTiles(args[0], Number(args[1]), args[2], args[3], args.slice(4).map(Number)),
  'prefill-cancel': () => prefillCancel(args[0], Number(args[1]), args[2], Number(args[3])),
};
if (!commands[command]) {
  console.error(`usage: node drive.mjs ${Object.keys(commands).join('|')} ...`);
  process.exit(2);
}
commands[command]().then(
  (doc) => {
    // exit only after the pipe took everything (a large document is written asynchronously)
    const text = JSON.stringify(doc, (_, v) => (typeof v === 'bigint' ? v.toString() : v)) + '\n';
    process.stdout.write(text, () => process.exit(0));
  },
  (e) => {
    console.error(e.stack || String(e));
    process.exit(1);
  },
);
