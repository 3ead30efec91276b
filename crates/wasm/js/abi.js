// Thin async wrappers over the tr_* ABI (record layouts: crates/core/CONTRACT.md), for any
// runtime made by host.js `instantiate` (same code for every lane). ES module, no dependencies.
import { HostError, TR_OUT_OF_MEMORY, instantiate, memoryImport, planner } from './host.js';

/** @typedef {import('./host.js').Runtime} Runtime */
/** @typedef {import('./host.js').WasmArg} WasmArg */

/** Byte tokenizer: BOS (256), then the UTF-8 bytes (crates/core/src/tokenizer.rs). */
export const BOS = 256;
export const EOS = 257;
/** @param {string} text */
export function encodePrompt(text) {
  return [BOS, ...new TextEncoder().encode(text)];
}

/**
 * @param {Runtime} rt
 * @param {string} name
 * @param {...WasmArg} args
 */
async function check(rt, name, ...args) {
  const code = await rt.call(name, ...args);
  if (code !== 0) throw new HostError(`${name} returned ${code}`, code);
}

/**
 * A transfer window of `len` bytes; `fn(ptr)` runs while it exists.
 * @template T
 * @param {Runtime} rt
 * @param {number} len
 * @param {(ptr: number) => Promise<T>} fn
 * @returns {Promise<T>}
 */
async function withWindow(rt, len, fn) {
  const ptr = await rt.call('tr_alloc', len);
  if (ptr === 0) throw new HostError(`tr_alloc(${len}) failed`, TR_OUT_OF_MEMORY);
  try {
    return await fn(ptr);
  } finally {
    await rt.call('tr_free', ptr, len);
  }
}

const view = (/** @type {Runtime} */ rt, /** @type {number} */ ptr, /** @type {number} */ len) => new DataView(rt.memory.buffer, ptr, len);

/**
 * Loads model bytes; returns the model handle (BigInt).
 * @param {Runtime} rt
 * @param {Uint8Array} bytes
 */
export async function loadModel(rt, bytes) {
  return withWindow(rt, bytes.length + 8, async (ptr) => {
    rt.bytes(ptr, bytes.length).set(bytes);
    await check(rt, 'tr_model_load', ptr, bytes.length, ptr + bytes.length);
    return view(rt, ptr + bytes.length, 8).getBigUint64(0, true);
  });
}

/**
 * The 40-byte session config record of `cfg` (defaults: greedy, the model's context) into `v`.
 * @param {DataView} v
 * @param {SessionRecord} [cfg]
 */
export function writeSessionConfig(v, cfg = {}) {
  const c = { seed: 0n, stream: 0n, temperature: 0, topK: 0, topP: 1, repetitionPenalty: 1, context: 0, ...cfg };
  v.setBigUint64(0, BigInt(c.seed), true);
  v.setBigUint64(8, BigInt(c.stream), true);
  v.setFloat32(16, c.temperature, true);
  v.setUint32(20, c.topK, true);
  v.setFloat32(24, c.topP, true);
  v.setFloat32(28, c.repetitionPenalty, true);
  v.setUint32(32, c.context, true);
  v.setUint32(36, 0, true);
}

/**
 * The session config record's fields (loader.d.ts `SessionConfig` and the context in tokens).
 * @typedef {import('./loader.js').SessionConfig & { context?: number }} SessionRecord
 */

/**
 * A session over `model`. cfg: { seed, stream, temperature, topK, topP, repetitionPenalty,
 * context } (the 40-byte session config record); returns the session handle (BigInt).
 * @param {Runtime} rt
 * @param {bigint} model
 * @param {SessionRecord} [cfg]
 */
export async function newSession(rt, model, cfg = {}) {
  return withWindow(rt, 48, async (ptr) => {
    const v = view(rt, ptr, 48);
    writeSessionConfig(v, cfg);
    await check(rt, 'tr_session_new', model, ptr, 40, ptr + 40);
    return view(rt, ptr + 40, 8).getBigUint64(0, true); // re-read: the session may grow memory
  });
}

/**
 * Feeds prompt tokens; resolves to the TrResult code (0 = Ok).
 * @param {Runtime} rt
 * @param {bigint} session
 * @param {number[]} tokens
 */
export async function prefill(rt, session, tokens) {
  return withWindow(rt, tokens.length * 4, async (ptr) => {
    const v = view(rt, ptr, tokens.length * 4);
    tokens.forEach((t, i) => v.setUint32(4 * i, t, true));
    return rt.call('tr_prefill', session, ptr, tokens.length);
  });
}

/**
 * One decode step: { code, token, done, rngState, rngIncrement } (token fields when code 0).
 * @param {Runtime} rt
 * @param {bigint} session
 */
export async function decode(rt, session) {
  return withWindow(rt, 24, async (ptr) => {
    const code = await rt.call('tr_decode', session, ptr);
    const v = view(rt, ptr, 24);
    return {
      code,
      token: v.getUint32(0, true),
      done: v.getUint32(4, true) !== 0,
      rngState: v.getBigUint64(8, true),
      rngIncrement: v.getBigUint64(16, true),
    };
  });
}

/**
 * Executed-path evidence: { scalar, simd, relaxed } kernel calls since start (BigInt; relaxed:
 * of the SIMD calls, those of kernels running a relaxed instruction), the worker count and the
 * ids of the workers that served a command (threads lane; 0 and [] elsewhere).
 * @param {Runtime} rt
 */
export async function pathCounters(rt) {
  return withWindow(rt, 32, async (ptr) => {
    await check(rt, 'tr_path_counters', ptr);
    const v = view(rt, ptr, 32);
    const workers = v.getUint32(16, true);
    const mask = v.getUint32(20, true);
    /** @type {number[]} */
    const participating = [];
    for (let id = 0; id < 32; id++) if (mask & (1 << id)) participating.push(id);
    return { scalar: v.getBigUint64(0, true), simd: v.getBigUint64(8, true), workers, participating, relaxed: v.getBigUint64(24, true) };
  });
}

/**
 * Threads lane: { workers, participated (bit i = worker i served a command), barriers, state }.
 * @param {Runtime} rt
 */
export async function workerCounters(rt) {
  return withWindow(rt, 16, async (ptr) => {
    await check(rt, 'tr_worker_counters', ptr);
    const v = view(rt, ptr, 16);
    return { workers: v.getUint32(0, true), participated: v.getUint32(4, true), barriers: v.getUint32(8, true), state: v.getUint32(12, true) };
  });
}

/**
 * Tokens per prefill tile of `session` (tr_session_prefill_tile); resolves to the code.
 * @param {Runtime} rt
 * @param {bigint} session
 * @param {number} tile
 */
export async function setPrefillTile(rt, session, tile) {
  return rt.call('tr_session_prefill_tile', session, tile);
}

/** Bytes `tr_session_digest` writes: position, logits digest, K/V digest (u64 each). */
export const DIGEST_BYTES = 24;

/** { position, logits, kv }: the session's committed position and FNV-1a digests (BigInt) of
 * its logits (0n = none) and committed K/V rows (tr_session_digest).
 * @param {Runtime} rt
 * @param {bigint} session
 */
export async function sessionDigest(rt, session) {
  return withWindow(rt, DIGEST_BYTES, async (ptr) => {
    await check(rt, 'tr_session_digest', session, ptr);
    const v = view(rt, ptr, DIGEST_BYTES);
    return { position: v.getBigUint64(0, true), logits: v.getBigUint64(8, true), kv: v.getBigUint64(16, true) };
  });
}

/**
 * Prefill `promptTokens`, then decode up to `maxTokens` (stopping at EOS).
 * Returns { code, tokens, rngState, decodeMs: [...], prefillMs } ; code is the first non-Ok TrResult.
 * @param {Runtime} rt
 * @param {bigint} model
 * @param {SessionRecord} cfg
 * @param {number[]} promptTokens
 * @param {number} maxTokens
 */
export async function generate(rt, model, cfg, promptTokens, maxTokens) {
  const session = await newSession(rt, model, cfg);
  /** @type {number[]} */
  const tokens = [];
  /** @type {number[]} */
  const decodeMs = [];
  let rngState = 0n;
  const p0 = performance.now();
  let code = await prefill(rt, session, promptTokens);
  const prefillMs = performance.now() - p0;
  while (code === 0 && tokens.length < maxTokens) {
    const t0 = performance.now();
    const step = await decode(rt, session);
    decodeMs.push(performance.now() - t0);
    code = step.code;
    if (code !== 0) break;
    tokens.push(step.token);
    rngState = step.rngState;
    if (step.done) break;
  }
  await rt.call('tr_session_free', session);
  return { code, tokens, rngState, decodeMs, prefillMs };
}

// ---- the records the loader reads (every offset of the ABI lives in this file) ----

export { withWindow };

/** The 40-byte session config record's size, and the session handle after it. */
export const SESSION_CONFIG_BYTES = 40;

/** Bytes of a model file's fixed header (what tr_model_prefix_bytes needs to see). */
export const MODEL_HEADER_BYTES = 64;

/**
 * A model header's format_version (bytes 8..12, after the magic: the kernel tier, CONTRACT.md
 * §1), or null when the header is shorter or lacks `magic` (then it is no model at all).
 * @param {Uint8Array} header
 * @param {string} magic
 */
export function modelFormatVersion(header, magic) {
  if (header.length < 12 || new TextDecoder().decode(header.subarray(0, 8)) !== magic) return null;
  return new DataView(header.buffer, header.byteOffset, header.byteLength).getUint32(8, true);
}

/**
 * { maxContext, vocab, layouts (non-f32 layout names, sorted), tier } from a model's header +
 * directory; `tierNames` maps format_version -> tier (an unknown one was refused before).
 * @param {Uint8Array} prefix
 * @param {readonly string[]} layoutNames
 * @param {Readonly<Record<number, string>>} tierNames
 */
export function modelFacts(prefix, layoutNames, tierNames) {
  const v = new DataView(prefix.buffer, prefix.byteOffset, prefix.byteLength);
  const count = v.getUint32(52, true);
  /** @type {Set<string>} */
  const layouts = new Set();
  for (let i = 0; i < count; i++) layouts.add(layoutNames[v.getUint32(64 + 32 * i + 4, true)] || 'unknown');
  const tier = tierNames[v.getUint32(8, true)] || 'f32';
  return { maxContext: v.getUint32(44, true), vocab: v.getUint32(28, true), layouts: [...layouts].filter((l) => l !== 'f32').sort(), tier };
}

/**
 * tr_model_prefix_bytes over the first bytes of a model: the length of header + directory (0 = bad).
 * @param {Runtime} rt
 * @param {Uint8Array} header
 */
export async function modelPrefixBytes(rt, header) {
  return withWindow(rt, Math.max(header.length, 1), async (ptr) => {
    rt.bytes(ptr, header.length).set(header);
    return rt.call('tr_model_prefix_bytes', ptr, header.length);
  });
}

/**
 * tr_preflight_header: { code, peakPrefill, steadyDecode } for a model of `size` bytes.
 * @param {Runtime} rt
 * @param {Uint8Array} prefix
 * @param {number} size
 * @param {number} context
 * @param {number} budget
 */
export async function preflightHeader(rt, prefix, size, context, budget) {
  return withWindow(rt, prefix.length + 16, async (ptr) => {
    rt.bytes(ptr, prefix.length).set(prefix);
    const code = await rt.call('tr_preflight_header', ptr, prefix.length, BigInt(size), context, BigInt(budget), ptr + prefix.length);
    const v = view(rt, ptr + prefix.length, 16);
    return { code, peakPrefill: Number(v.getBigUint64(0, true)), steadyDecode: Number(v.getBigUint64(8, true)) };
  });
}

/**
 * tr_model_load of `len` bytes at `ptr` (a window of len + 8): { code, handle }.
 * @param {Runtime} rt
 * @param {number} ptr
 * @param {number} len
 */
export async function modelLoadAt(rt, ptr, len) {
  const code = await rt.call('tr_model_load', ptr, len, ptr + len);
  return { code, handle: code === 0 ? view(rt, ptr + len, 8).getBigUint64(0, true) : 0n };
}

/**
 * tr_session_new with the config record of `cfg`: { code, session }.
 * @param {Runtime} rt
 * @param {bigint} model
 * @param {SessionRecord} cfg
 */
export async function sessionNew(rt, model, cfg) {
  return withWindow(rt, SESSION_CONFIG_BYTES + 8, async (ptr) => {
    const v = view(rt, ptr, SESSION_CONFIG_BYTES + 8);
    writeSessionConfig(v, cfg);
    const code = await rt.call('tr_session_new', model, ptr, SESSION_CONFIG_BYTES, ptr + SESSION_CONFIG_BYTES);
    // a fresh view: the session's allocation may have grown memory (detaching `v`'s buffer)
    return { code, session: code === 0 ? view(rt, ptr + SESSION_CONFIG_BYTES, 8).getBigUint64(0, true) : 0n };
  });
}

/**
 * Writes prompt tokens into a token window.
 * @param {Runtime} rt
 * @param {number} ptr
 * @param {number[]} tokens
 */
export function writeTokens(rt, ptr, tokens) {
  const v = view(rt, ptr, 4 * tokens.length);
  tokens.forEach((t, i) => v.setUint32(4 * i, t, true));
}

/** Size of the decode output record, and its { token, done }. */
export const DECODE_RECORD_BYTES = 24;
/**
 * @param {Runtime} rt
 * @param {number} ptr
 */
export function readDecodeRecord(rt, ptr) {
  const v = view(rt, ptr, DECODE_RECORD_BYTES);
  return { token: v.getUint32(0, true), done: v.getUint32(4, true) !== 0 };
}

/**
 * tr_self_test_detail: { code, overall, rows: [{ category (id), result, name }] } (each row 32
 * bytes: category u32, result i32, a 24-byte NUL-padded name).
 * @param {Runtime} rt
 */
export async function selfTestDetail(rt) {
  const len = await rt.call('tr_self_test_detail_bytes');
  return withWindow(rt, len, async (ptr) => {
    /** @type {{ category: number, result: number, name: string }[]} */
    const rows = [];
    const code = await rt.call('tr_self_test_detail', ptr, len);
    if (code !== 0) return { code, overall: code, rows };
    const v = view(rt, ptr, len);
    const n = v.getUint32(4, true);
    for (let i = 0; i < n; i++) {
      const at = 8 + 32 * i;
      const raw = new Uint8Array(rt.memory.buffer, ptr + at + 8, 24).slice();
      const end = raw.indexOf(0);
      rows.push({ category: v.getUint32(at, true), result: v.getInt32(at + 4, true), name: new TextDecoder().decode(raw.subarray(0, end < 0 ? 24 : end)) });
    }
    return { code, overall: v.getUint32(0, true), rows };
  });
}

/** The memory plan's parts in record order (crates/core/src/memory.rs PART_NAMES). */
export const PLAN_PARTS = Object.freeze(['weights', 'metadata', 'tokenizer', 'kv', 'activations', 'logits', 'decode_scratch', 'stacks_tls', 'transfer', 'load_copy', 'allocator']);

/**
 * tr_plan_header: the itemized memory plan of a model of `size` bytes from its header and
 * directory, on a lane with `workers` (0 = unthreaded), loaded in place when `inPlace`.
 * { code, parts, peakLoad, peakPrefill, steadyDecode, peak, largest } (bytes; largest = a part name).
 * @param {Runtime} rt
 * @param {Uint8Array} prefix
 * @param {number} size
 * @param {number} context
 * @param {number} workers
 * @param {boolean} inPlace
 */
export async function planHeader(rt, prefix, size, context, workers, inPlace) {
  const n = 8 * (PLAN_PARTS.length + 4);
  return withWindow(rt, prefix.length + n, async (ptr) => {
    rt.bytes(ptr, prefix.length).set(prefix);
    const code = await rt.call('tr_plan_header', ptr, prefix.length, BigInt(size), context, workers, inPlace ? 1 : 0, ptr + prefix.length);
    const v = view(rt, ptr + prefix.length, n);
    const at = (/** @type {number} */ i) => Number(v.getBigUint64(8 * i, true));
    /** @type {Record<string, number>} */
    const parts = {};
    PLAN_PARTS.forEach((name, i) => { parts[name] = at(i); });
    const k = PLAN_PARTS.length;
    const [peakLoad, peakPrefill, steadyDecode] = [at(k), at(k + 1), at(k + 2)];
    const largest = PLAN_PARTS[at(k + 3)] ?? 'weights';
    return { code, parts, peakLoad, peakPrefill, steadyDecode, peak: Math.max(peakLoad, peakPrefill, steadyDecode), largest };
  });
}

/**
 * The memory plan of `model` on the lane of `bytes`, asked of a planner instance (host.js
 * `planner`: the threads lane's plan is known before its shared memory exists). `model` is the
 * file or its first bytes (header + directory at least); `size` the file's length; `context`
 * 0 = the model's maximum; `workers` 0 = unthreaded; `inPlace`: loaded by tr_model_adopt, else
 * by tr_model_load (`loadModel`: a second copy while it loads). The planHeader record plus the
 * context planned; a refusal (a malformed header, a context over the model's) is a HostError.
 * @param {Uint8Array | ArrayBuffer} bytes
 * @param {Uint8Array} model
 * @param {{ size?: number, context?: number, workers?: number, inPlace?: boolean }} [options]
 */
export async function planFor(bytes, model, { size = model.length, context = 0, workers = 0, inPlace = true } = {}) {
  const p = await planner(bytes);
  const prefixLen = await modelPrefixBytes(p, model.subarray(0, MODEL_HEADER_BYTES));
  if (prefixLen === 0 || prefixLen > model.length) throw new HostError(`the model's header and directory are not in its first ${model.length} bytes`);
  const prefix = model.subarray(0, prefixLen);
  const planned = context || modelFacts(prefix, [], {}).maxContext;
  const plan = await planHeader(p, prefix, size, planned, workers, inPlace);
  if (plan.code !== 0) throw new HostError(`tr_plan_header returned ${plan.code}`, plan.code);
  return { ...plan, context: planned };
}

/** The parts of a memory plan that every session holds for itself (the rest is held once). */
export const SESSION_PARTS = Object.freeze(['kv', 'activations', 'logits', 'decode_scratch', 'transfer']);

/**
 * A lane instantiated for `model` (host.js `instantiate` options, and planFor's): the threads
 * lane's shared memory created at the plan's peak (initial == maximum), plus SESSION_PARTS once
 * more for each of `sessions` - 1 further sessions alive at once; a lane that owns its memory
 * grows it as it goes. Resolves to { rt, plan, planBytes }.
 * @param {Parameters<typeof instantiate>[0]} options
 * @param {Uint8Array} model
 * @param {{ size?: number, context?: number, inPlace?: boolean, sessions?: number }} [planOptions]
 */
export async function instantiateFor(options, model, { sessions = 1, ...planOptions } = {}) {
  const workers = memoryImport(options.bytes) === null ? 0 : (options.workers ?? 1);
  const plan = await planFor(options.bytes, model, { ...planOptions, workers });
  const perSession = SESSION_PARTS.reduce((sum, part) => sum + plan.parts[part], 0);
  const planBytes = plan.peak + (sessions - 1) * perSession;
  return { rt: await instantiate({ ...options, planBytes }), plan, planBytes };
}

/**
 * tr_model_adopt (load in place): the window `ptr` of exactly `len` bytes becomes the model's
 * bytes and is gone whatever the result; the handle is written to `out` (another window).
 * @param {Runtime} rt
 * @param {number} ptr
 * @param {number} len
 * @param {number} out
 */
export async function modelAdoptAt(rt, ptr, len, out) {
  const code = await rt.call('tr_model_adopt', ptr, len, out);
  return { code, handle: code === 0 ? view(rt, out, 8).getBigUint64(0, true) : 0n };
}

/** Bytes of the record tr_heap_stats writes (crates/wasm/src/memplan.rs HEAP_RECORD_BYTES). */
export const HEAP_RECORD_BYTES = 32;

/**
 * tr_heap_stats: the allocator's live bytes and high-water mark, the static base
 * (`__heap_base`: data, stacks) and the memory's size (its window is counted too).
 * @param {Runtime} rt
 */
export async function heapStats(rt) {
  return withWindow(rt, HEAP_RECORD_BYTES, (ptr) => heapStatsAt(rt, ptr));
}

/**
 * tr_heap_stats into a window the caller holds (>= HEAP_RECORD_BYTES): nothing allocated.
 * @param {Runtime} rt
 * @param {number} ptr
 */
export async function heapStatsAt(rt, ptr) {
  await check(rt, 'tr_heap_stats', ptr);
  const v = view(rt, ptr, HEAP_RECORD_BYTES);
  const at = (/** @type {number} */ i) => Number(v.getBigUint64(8 * i, true));
  return { live: at(0), peak: at(1), staticBase: at(2), memoryBytes: at(3) };
}
