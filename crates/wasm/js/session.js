// TinyRustLM loader, the session room: a lane started and self-tested (steps 4-6), the model
// admitted and streamed into Wasm memory (step 8), and `Loaded`, what an integrator uses (10).
import { instantiate, memoryImport, HostError, TR_CANCELLED } from './host.js';
import {
  encodePrompt, EOS, pathCounters, workerCounters, withWindow, modelFacts, modelFormatVersion, modelPrefixBytes, preflightHeader,
  modelLoadAt, sessionNew, writeTokens, readDecodeRecord, selfTestDetail, MODEL_HEADER_BYTES, DECODE_RECORD_BYTES,
} from './abi.js';
import { KERNEL_SETS, CATEGORIES, LAYOUTS, MODEL_MAGIC, MODEL_TIERS, REQUIRED_EXPORTS, THREADS_EXPORTS } from './constants.js';
import { LoaderError, LaneFailure, stats } from './errors.js';
import { isolated } from './choice.js';
import { drain, fetchSigned, fromStore, memoryStream, openResumable, storeQuietly, streamingHashChecked } from './fetch.js';
import { Sha256 } from './sha256.js';

/** Memory bound of a lane whose module owns its memory (scalar, simd128), unless overridden. */
export const DEFAULT_MEMORY_BUDGET = 1 << 30;
const PAGE = 65536;

function withTimeout(promise, ms, onTimeout) {
  let timer;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(onTimeout()), ms);
    }),
  ]);
}

/** Runs an ABI call, turning a HostError (a non-Ok TrResult) into a RuntimeError. */
async function abiCall(fn) {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof HostError) throw new LoaderError('RuntimeError', e.message, { code: e.code });
    throw e;
  }
}

/** Path counters as numbers: { scalar, simd, workers, participating }. */
async function readCounters(rt) {
  const c = await abiCall(() => pathCounters(rt));
  return { scalar: Number(c.scalar), simd: Number(c.simd), workers: c.workers, participating: c.participating };
}

/** Step 6: { overall, categories: {name: pass|fail}, failedTest, testIds } from tr_self_test_detail. */
export async function selfTest(rt, timeoutMs) {
  const run = selfTestDetail(rt).then(({ code, overall, rows }) => {
    if (code !== 0) throw new LaneFailure('self-test', 'SelfTestFailed', `tr_self_test_detail returned ${code}`);
    const categories = {};
    const testIds = [];
    let failedTest = null;
    for (const row of rows) {
      const category = CATEGORIES[row.category];
      if (category === undefined) throw new LaneFailure('self-test', 'SelfTestFailed', `self-test ${row.name} has an unknown category`);
      testIds.push(row.name); // the vector set, whatever category a lane files it under
      if (row.result !== 0 && failedTest === null) failedTest = row.name;
      categories[category] = row.result !== 0 || categories[category] === 'fail' ? 'fail' : 'pass';
    }
    return { overall, categories, failedTest, testIds };
  });
  return withTimeout(run, timeoutMs, () => new LaneFailure('self-test', 'SelfTestTimeout', `the self-test did not finish within ${timeoutMs} ms`));
}

/**
 * Step 5, the spec's seven threads preconditions in order. `bytes` have passed the hash check.
 * Returns the runtime (pool kept) and what was observed.
 */
export async function threadsPreconditions(o, artifact, bytes, sha256) {
  const fail = (n, message) => new LaneFailure(`threads precondition ${n}`, 'ThreadsPrecondition', message);
  // 1. isolation
  if (!isolated()) throw fail(1, 'the context is not cross-origin isolated');
  // 2. SharedArrayBuffer construction
  try {
    new SharedArrayBuffer(16);
  } catch (e) {
    throw fail(2, `SharedArrayBuffer cannot be constructed (${e.message || e})`);
  }
  // 3. the threaded artifact validates
  if (!WebAssembly.validate(bytes)) throw fail(3, 'the threads artifact does not validate in this engine');
  // 4. imported shared memory at the fixed (preflight) size
  const mem = memoryImport(bytes);
  const rules = artifact.memory || {};
  if (mem === null || !mem.shared || mem.maximum !== mem.initial || rules.shared !== true || rules.growth !== false) {
    throw new LoaderError('ModuleContract', `${artifact.id}: the manifest promises a fixed shared memory (memory ${JSON.stringify(rules)}) but the module imports ${JSON.stringify(mem)}`);
  }
  let memory;
  try {
    memory = new WebAssembly.Memory({ initial: mem.initial, maximum: mem.maximum, shared: true });
  } catch (e) {
    throw fail(4, `a shared memory of ${mem.initial * PAGE} bytes cannot be created (${e.message || e})`);
  }
  // 5. every worker starts and acknowledges the module hash (bounded by startupMs)
  let rt;
  stats.instantiations++;
  try {
    rt = await instantiate({ bytes, sha256, workers: o.workers, memory, startupMs: o.startupMs, livenessMs: o.livenessMs, workerUrl: o.workerUrl });
  } catch (e) {
    throw fail(5, `workers did not all start and acknowledge the module: ${e.message || e}`);
  }
  stats.live++;
  try {
    // 6. atomics, then the barrier test: the self-test's forward pass runs on the pool
    const atomics = await withTimeout(rt.call('tr_atomics_self_test'), o.selfTestMs, () => fail(6, 'the atomics self-test timed out'));
    if (atomics !== 0) throw fail(6, `tr_atomics_self_test returned ${atomics}`);
    const before = await readCounters(rt);
    const barriersBefore = (await abiCall(() => workerCounters(rt))).barriers;
    const test = await selfTest(rt, o.selfTestMs).catch((e) => {
      throw e instanceof LaneFailure && e.code === 'SelfTestTimeout' ? fail(6, 'the barrier self-test did not finish in time') : e;
    });
    const pool = await abiCall(() => workerCounters(rt));
    if (pool.state !== 1 || pool.barriers <= barriersBefore) throw fail(6, `the barrier self-test did not complete (pool state ${pool.state}, barriers ${barriersBefore} -> ${pool.barriers})`);
    // 7. the threaded kernel ran a test vector and every worker updated the shared counters
    const after = await readCounters(rt);
    const all = [...Array(o.workers).keys()];
    if (after.simd <= before.simd || after.participating.join() !== all.join()) {
      throw fail(7, `threaded kernels did not run on every worker (simd calls ${before.simd} -> ${after.simd}, participating [${after.participating}])`);
    }
    test.categories.atomics = 'pass';
    test.categories.thread_participation = 'pass';
    return { rt, test, memoryMode: 'wasm32-shared-fixed' };
  } catch (e) {
    await closeRuntime(rt);
    throw e;
  }
}

export async function closeRuntime(rt) {
  if (!rt || rt.closed) return;
  rt.closed = true;
  stats.live--;
  await rt.close();
}

/**
 * Steps 4-6 for one artifact: { rt, test, memoryMode, lane, sha256, fetched } or a LaneFailure /
 * fatal LoaderError. The module is read bounded by its signed size (cache first, re-hashed).
 */
export async function startLane(o, artifact, signed, store = null) {
  // 4. the module: SHA-256 before compilation, always
  const url = new URL(artifact.url, o.baseUrl);
  const got = await fetchSigned(o, store, { url, what: `module ${artifact.id}`, sha256: artifact.sha256, size: artifact.size, phase: 'module' });
  const { bytes, sha256 } = got;
  if (sha256 !== artifact.sha256 || bytes.length !== artifact.size) {
    throw new LoaderError('ModuleHashMismatch', `${artifact.url} hashes to ${sha256.slice(0, 16)}… (${bytes.length} bytes), not the signed ${artifact.sha256.slice(0, 16)}… (${artifact.size} bytes)`, { artifact_id: artifact.id, sha256 });
  }
  let module;
  try {
    module = await WebAssembly.compile(bytes);
  } catch (e) {
    throw new LaneFailure('compile', 'CompileFailed', `${artifact.id} does not compile here: ${e.message || e}`);
  }
  const threads = artifact.requires_cross_origin_isolation === true;
  const exported = new Set(WebAssembly.Module.exports(module).map((e) => e.name));
  const missing = [...REQUIRED_EXPORTS, ...(threads ? THREADS_EXPORTS : [])].filter((n) => !exported.has(n) && !(threads && n === 'memory'));
  if (missing.length > 0) throw new LoaderError('UnsupportedAbi', `${artifact.id} lacks export(s) ${missing.join(', ')} this loader needs`);
  let rt;
  let test;
  let memoryMode;
  if (threads) {
    ({ rt, test, memoryMode } = await threadsPreconditions(o, artifact, bytes, sha256));
  } else {
    if (memoryImport(bytes) !== null) throw new LoaderError('ModuleContract', `${artifact.id} imports a memory but the manifest does not mark it as the threads lane`);
    stats.instantiations++;
    try {
      rt = await instantiate({ bytes, sha256 });
    } catch (e) {
      throw new LaneFailure('instantiate', 'InstantiateFailed', `${artifact.id}: ${e.message || e}`);
    }
    stats.live++;
    memoryMode = 'wasm32-bounded-fixed-after-activation';
  }
  try {
    const abi = await rt.call('tr_abi_version');
    const semantics = await rt.call('tr_runtime_semantics');
    if (abi !== signed.manifest.abi_version || semantics !== signed.manifest.runtime_semantics) {
      throw new LoaderError('UnsupportedAbi', `${artifact.id} reports ABI ${abi} / semantics ${semantics}, the manifest says ${signed.manifest.abi_version} / ${signed.manifest.runtime_semantics}`);
    }
    const lane = await rt.call('tr_lane');
    if (!threads) {
      const before = await readCounters(rt);
      test = await selfTest(rt, o.selfTestMs);
      const after = await readCounters(rt);
      const ran = lane === 0 ? after.scalar > before.scalar : after.simd > before.simd;
      if (!ran) throw new LaneFailure('self-test', 'PathNotExecuted', `the ${KERNEL_SETS[lane]} kernels did not run during the self-test`);
    }
    if (test.overall !== 0) {
      throw new LaneFailure('self-test', 'SelfTestFailed', `self-test ${test.failedTest} failed (code ${test.overall})`);
    }
    return { rt, test, memoryMode, lane, sha256, fetched: got.record };
  } catch (e) {
    await closeRuntime(rt);
    throw e;
  }
}

// ---- 8. the model: checked, admitted, streamed in ---------------------------------------------

/**
 * The model's source before any lane starts: `model.bytes` hashed now (a wrong model never
 * reaches a runtime), or `model.url` with its declared `model.size` (the download's bound); an
 * intact cached copy is used when there is one (re-hashed as it is read).
 */
export async function modelSpec(o, store) {
  const spec = o.model;
  if (!spec || typeof spec.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(spec.sha256)) {
    throw new LoaderError('BadOptions', 'model.sha256 (64 lowercase hex digits) is required');
  }
  if (spec.bytes) {
    await streamingHashChecked();
    const bytes = spec.bytes instanceof Uint8Array ? spec.bytes : new Uint8Array(spec.bytes);
    const hash = new Sha256();
    hash.update(bytes);
    const sha256 = hash.hex();
    if (sha256 !== spec.sha256) throw new LoaderError('HashMismatch', `model SHA-256 ${sha256.slice(0, 16)}… is not the expected ${spec.sha256.slice(0, 16)}…`, { sha256 });
    return { bytes, size: bytes.length, sha256, record: { what: 'model', url: 'model.bytes', sha256, size: bytes.length, cache: 'off' } };
  }
  if (typeof spec.url !== 'string' && !(spec.url instanceof URL)) throw new LoaderError('BadOptions', 'model needs url (with size) or bytes');
  if (!(Number.isSafeInteger(spec.size) && spec.size > 0)) {
    throw new LoaderError('BadOptions', 'model.size (the model file\'s byte length, the bound of its download) is required with model.url');
  }
  const url = new URL(spec.url, o.pageUrl);
  const record = { what: 'model', url: String(url), sha256: spec.sha256, size: spec.size, cache: store ? 'miss' : 'off' };
  // a cached copy is checked whole before any lane starts: only an intact one is used
  const intact = store ? await fromStore(o, store, record, { limit: spec.size, phase: null, sink: () => {} }) : null;
  return { bytes: null, url, size: spec.size, sha256: spec.sha256, record, cached: intact === true };
}

/** Opens the model's bytes as a Source (the cache's copy, else the network). */
async function modelSource(o, store, model) {
  if (model.cached) {
    const source = await store.get(model.sha256).catch(() => null);
    if (source) return source;
    model.record.cache = 'miss';
  }
  return openResumable(o, model.url, 'model', model.size);
}

/** Reads from `source` until `n` bytes are buffered (a small head; the rest stays in the source). */
async function readHead(source, n, head) {
  while (head.length < n) {
    const step = await source.read();
    if (step.done) break;
    const joined = new Uint8Array(head.length + step.value.length);
    joined.set(head);
    joined.set(step.value, head.length);
    head = joined;
  }
  return head;
}

/**
 * The model's kernel tier from its header, before anything enters the runtime: a format_version
 * this loader does not know (MODEL_TIERS, from crates/core/src/model.rs) is UnsupportedModelTier.
 * A header too short to hold one, or without the model magic, is left to the runtime's own check
 * (ModelInvalid): it is no model of any tier.
 */
export function checkModelTier(header) {
  const version = modelFormatVersion(header, MODEL_MAGIC);
  if (version !== null && !Object.hasOwn(MODEL_TIERS, version)) {
    const known = Object.entries(MODEL_TIERS).map(([v, t]) => `${v} = ${t}`).join(', ');
    throw new LoaderError('UnsupportedModelTier', `model format_version ${version} declares a kernel tier this loader does not know (known: ${known})`, { formatVersion: version });
  }
}

/**
 * Step 8: the kernel tier checked on the header (nothing has entered the runtime; a streamed
 * model is not downloaded further), preflight from the header and directory against `budget`, then the model streamed
 * into a window of Wasm memory (hashed while it arrives, bounded by its declared size; no whole
 * JS copy), then tr_model_load — only when the hash is the expected one. Returns { handle, facts,
 * plan, context }.
 */
export async function admitAndLoad(o, rt, store, model, budgetFor) {
  let source = model.bytes ? null : await modelSource(o, store, model);
  if (source && source.length !== null && source.length > model.size) {
    source.cancel(); // a Content-Length over the declared size: nothing is downloaded
    throw new LoaderError('BoundExceeded', `model ${model.url} is ${source.length} bytes, over its declared size of ${model.size}`, { url: String(model.url), limit: model.size });
  }
  if (source && o.onProgress) o.onProgress({ phase: 'model', loaded: 0, total: model.size, url: String(model.url) });
  let head = model.bytes ? model.bytes : await readHead(source, MODEL_HEADER_BYTES, new Uint8Array(0));
  try {
    if (head.length > model.size) throw new LoaderError('BoundExceeded', `model ${model.url} is larger than its declared size of ${model.size} bytes; the download was stopped there`, { url: String(model.url), limit: model.size });
    const header = head.subarray(0, Math.min(MODEL_HEADER_BYTES, head.length));
    checkModelTier(header); // first: an unknown tier is refused before the runtime sees a byte
    const prefixLen = await modelPrefixBytes(rt, header);
    if (!model.bytes && prefixLen > head.length && prefixLen <= model.size) head = await readHead(source, prefixLen, head);
    if (prefixLen === 0 || prefixLen > model.size || prefixLen > head.length) throw new LoaderError('ModelInvalid', 'the model header is truncated or malformed');
    const prefix = head.subarray(0, prefixLen);
    const facts = modelFacts(prefix, LAYOUTS, MODEL_TIERS);
    const context = o.context || facts.maxContext;
    const budget = budgetFor();
    const p = await preflightHeader(rt, prefix, model.size, context, budget);
    const plan = { peakPrefill: p.peakPrefill, steadyDecode: p.steadyDecode, budget };
    if (p.code === 9) throw new LoaderError('ModelTooLarge', `model + context ${context} need ${plan.peakPrefill} bytes (prefill) / ${plan.steadyDecode} (decode), over the budget of ${budget}`, plan);
    if (p.code === 3) throw new LoaderError('UnsupportedModelTier', 'this runtime module refuses the model\'s format/tier (TrResult UnsupportedFeature): it predates the model\'s kernel tier or flags', { code: p.code });
    if (p.code !== 0) throw new LoaderError('ModelInvalid', `tr_preflight_header refused the model (TrResult ${p.code})`, { code: p.code });
    // admitted: now, and only now, the model's bytes enter the runtime
    const handle = await withWindow(rt, model.size + 8, async (ptr) => {
      if (model.bytes) {
        rt.bytes(ptr, model.size).set(model.bytes);
      } else {
        const first = head.subarray(0, Math.min(head.length, model.size));
        const rest = await drainInto(o, rt, ptr, source, model, first);
        source = null;
        if (rest.sha256 !== model.sha256 || rest.length !== model.size) {
          if (model.cached) await store.drop(model.sha256).catch(() => {});
          throw new LoaderError('HashMismatch', `model SHA-256 ${rest.sha256.slice(0, 16)}… (${rest.length} bytes) is not the expected ${model.sha256.slice(0, 16)}… (${model.size} bytes)`, { sha256: rest.sha256 });
        }
        if (store && !model.cached) await storeQuietly(o, store, model.record, memoryStream(rt.memory, ptr, model.size));
      }
      stats.modelLoads++;
      const loaded = await modelLoadAt(rt, ptr, model.size);
      if (loaded.code !== 0) throw new LoaderError('ModelInvalid', `tr_model_load refused the model (TrResult ${loaded.code})`, { code: loaded.code });
      return loaded.handle;
    });
    return { handle, facts, plan, context };
  } finally {
    if (source) source.cancel();
  }
}

/** The head already read, then the rest of `source`, into Wasm memory at `ptr`, hashed and bounded. */
async function drainInto(o, rt, ptr, source, model, first) {
  const hash = new Sha256();
  hash.update(first);
  rt.bytes(ptr, first.length).set(first);
  return drain(o, source, {
    what: 'model',
    url: model.url,
    limit: model.size,
    phase: 'model',
    total: model.size,
    start: first.length,
    hash,
    sink: (chunk, at) => {
      rt.bytes(ptr + at, chunk.length).set(chunk);
    },
  });
}

// ---- 10. use ----------------------------------------------------------------------------------------

/** A runtime with one model and one session, memory fixed since activation. */
export class Loaded {
  /** @type {import('./loader.js').Receipt} */
  receipt;
  /** @type {import('./loader.js').Plan} */
  plan;
  /** @type {any} the host.js runtime */
  rt;
  /** @type {string} */
  lane;
  threads = false;
  context = 0;
  cancelEpoch = 0;
  closed = false;
  prefillChunk = 16;
  /** @type {TextDecoder} */
  decoder;
  /** @type {bigint} */
  model;
  /** @type {bigint} */
  session;
  tokenWindow = 0;
  decodeWindow = 0;
  memoryBytes = 0;
  budget = 0;

  /** Activation: one session on the loaded model, and every window later calls use. */
  static async activate(rt, handle, context, o, lane, budget) {
    const self = new Loaded();
    self.rt = rt;
    self.lane = KERNEL_SETS[lane];
    self.threads = rt.workers > 0;
    self.context = context;
    self.cancelEpoch = 0;
    self.closed = false;
    self.prefillChunk = o.prefillChunk || (self.threads ? 1 : 16);
    self.decoder = new TextDecoder('utf-8');
    self.model = handle;
    const made = await sessionNew(rt, handle, { ...o.session, context });
    if (made.code !== 0) throw new LoaderError('RuntimeError', `tr_session_new returned ${made.code}`, { code: made.code });
    self.session = made.session;
    // The windows every later call uses, allocated now so nothing allocates after activation.
    self.tokenWindow = await rt.call('tr_alloc', 4 * Math.max(self.prefillChunk, 1));
    self.decodeWindow = await rt.call('tr_alloc', DECODE_RECORD_BYTES);
    if (self.tokenWindow === 0 || self.decodeWindow === 0) throw new LoaderError('RuntimeError', 'tr_alloc failed during activation');
    self.memoryBytes = rt.memory.buffer.byteLength; // never changes from here on
    self.budget = budget;
    if (self.memoryBytes > budget && !self.threads) throw new LoaderError('MemoryBudget', `memory is ${self.memoryBytes} bytes after activation, over the budget of ${budget}`);
    return self;
  }

  checkMemory() {
    const now = this.rt.memory.buffer.byteLength;
    if (now !== this.memoryBytes) throw new LoaderError('MemoryGrew', `linear memory grew from ${this.memoryBytes} to ${now} bytes after activation`);
  }

  async call(name, ...args) {
    if (this.closed) throw new LoaderError('Closed', 'the runtime was closed');
    const r = await this.rt.call(name, ...args);
    this.checkMemory();
    return r;
  }

  /**
   * Feeds a prompt (text: BOS + UTF-8 bytes; or token ids) in chunks. Resolves to
   * { committed, cancelled }: after a cancel the session stands at its last committed token
   * (`committed` tokens of this call), so the rest can be fed again later.
   */
  async prefill(prompt, { onProgress = null } = {}) {
    const tokens = typeof prompt === 'string' ? encodePrompt(prompt) : [...prompt];
    const epoch = this.cancelEpoch;
    let committed = 0;
    while (committed < tokens.length) {
      if (this.cancelEpoch !== epoch) return { committed, cancelled: true };
      const chunk = tokens.slice(committed, committed + this.prefillChunk);
      writeTokens(this.rt, this.tokenWindow, chunk);
      const code = await this.call('tr_prefill', this.session, this.tokenWindow, chunk.length);
      if (code === TR_CANCELLED) return { committed, cancelled: true }; // nothing of this chunk committed
      if (code !== 0) throw new LoaderError('RuntimeError', `tr_prefill returned ${code}`, { code, committed });
      committed += chunk.length;
      if (onProgress) onProgress(committed, tokens.length);
      if (!this.threads) await new Promise((r) => setTimeout(r, 0)); // let a cancel() in
    }
    return { committed, cancelled: false };
  }

  /** Streams sampled tokens: { token, text, done } until EOS, maxTokens, or cancel(). */
  async *decode({ maxTokens = 64 } = {}) {
    const epoch = this.cancelEpoch;
    for (let n = 0; n < maxTokens; n++) {
      if (this.cancelEpoch !== epoch) return;
      const code = await this.call('tr_decode', this.session, this.decodeWindow);
      if (code === TR_CANCELLED) return; // nothing committed for this step
      if (code !== 0) throw new LoaderError('RuntimeError', `tr_decode returned ${code}`, { code });
      const { token, done } = readDecodeRecord(this.rt, this.decodeWindow);
      const text = token < 256 ? this.decoder.decode(new Uint8Array([token]), { stream: true }) : '';
      yield { token, text, done };
      if (done || token === EOS) return;
      if (!this.threads) await new Promise((r) => setTimeout(r, 0));
    }
  }

  /** Stops the prefill or decode in flight (threads lane: inside the operation; else between calls). */
  cancel() {
    this.cancelEpoch++;
    if (this.threads) this.rt.cancel();
  }

  /** Executed-path evidence now (kernel calls, participating workers). */
  pathCounters() {
    return readCounters(this.rt);
  }

  async close() {
    if (this.closed) return;
    this.closed = true;
    await closeRuntime(this.rt);
  }
}

export { readCounters };
