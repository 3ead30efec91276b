// TinyRustLM loader, the session room: a lane started and self-tested (steps 4-6), the model
// admitted and streamed into Wasm memory (step 8), and `Loaded`, what an integrator uses (10).
import { instantiate, memoryImport, planner, sharedMemoryPages, fixedSharedMemory, HostError, TR_CANCELLED, TR_OUT_OF_MEMORY, TR_WORKER_FAILURE, sha256Hex } from './host.js';
import {
  encodePrompt, EOS, pathCounters, workerCounters, withWindow, modelFacts, modelFormatVersion, modelPrefixBytes, planHeader,
  modelAdoptAt, sessionNew, writeTokens, readDecodeRecord, selfTestDetail, heapStats, heapStatsAt, MODEL_HEADER_BYTES, DECODE_RECORD_BYTES, DIGEST_BYTES,
  HEAP_RECORD_BYTES,
} from './abi.js';
import {
  KERNEL_SETS, CATEGORIES, LAYOUTS, MODEL_MAGIC, MODEL_TIERS, REQUIRED_EXPORTS, THREADS_EXPORTS, KV_LAYOUT_VERSION, NORMALIZATION_VERSION, TOKENIZER_BYTES,
} from './constants.js';
import { LoaderError, LaneFailure, messageOf, recordLaneFailure, stats } from './errors.js';
import { isolated } from './choice.js';
import { drain, fetchSigned, modelCached, modelIntact, modelSource, openResumable, settleModelCache, streamingHashChecked } from './fetch.js';
import { Sha256, engineSubtle, isShared, sha256Whole } from './sha256.js';
import { TIER_SELECTION } from './receipt.js';

/** @typedef {import('./host.js').Runtime} Runtime */
/** @typedef {import('./loader.js').ResolvedOptions} ResolvedOptions */
/** @typedef {import('./trust.js').Artifact} Artifact */
/** @typedef {import('./fetch.js').Store} Store */
/** @typedef {import('./fetch.js').Source} Source */
/**
 * Step 6's result: `tr_self_test_detail` per category, the first failing test, the test ids.
 * @typedef {{ overall: number, categories: Record<string, import('./loader.js').TestOutcome>, failedTest: string | null, testIds: string[] }} SelfTest
 */
/**
 * A lane that started and passed its self-test (steps 4-6); the threads lane admitted the model
 * first (its memory is the plan's), the other lanes admit it after (`admitted` null).
 * @typedef {{ rt: Runtime, test: SelfTest, memoryMode: string, lane: number, sha256: string, fetched: import('./loader.js').FetchRecord, admitted: Admission | null }} StartedLane
 */
/**
 * A model admitted against its plan at the context (step 8's first half).
 * @typedef {{ facts: ReturnType<typeof modelFacts>, plan: import('./loader.js').Plan, context: number }} Admission
 */
/** What the threads lane's steps read of the options. */
/** @typedef {Pick<ResolvedOptions, 'workers' | 'startupMs' | 'livenessMs' | 'workerUrl' | 'selfTestMs' | 'context'>} ThreadsOptions */

/** Memory bound of every lane unless overridden (the threads lane's memory is created at the plan within it). */
export const DEFAULT_MEMORY_BUDGET = 1 << 30;
/** The budget no wasm32 lane can exceed, whatever the integrator sets: its 4 GiB address space. */
export const WASM32_BUDGET = 2 ** 32;
const PAGE = 65536;

/**
 * `promise`, or what `onTimeout()` makes (rejected with) after `ms`.
 * @template T
 * @param {Promise<T>} promise
 * @param {number} ms
 * @param {() => Error} onTimeout
 * @returns {Promise<T>}
 */
function withTimeout(promise, ms, onTimeout) {
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(onTimeout()), ms);
    }),
  ]);
}

/**
 * Runs an ABI call, turning a HostError (a non-Ok TrResult) into a RuntimeError.
 * @template T
 * @param {() => Promise<T>} fn
 * @returns {Promise<T>}
 */
async function abiCall(fn) {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof HostError) throw new LoaderError('RuntimeError', e.message, { code: e.code });
    throw e;
  }
}

/**
 * Path counters as numbers: { scalar, simd, workers, participating, relaxed }.
 * @param {Runtime} rt
 * @returns {Promise<import('./loader.js').PathCounters>}
 */
async function readCounters(rt) {
  const c = await abiCall(() => pathCounters(rt));
  return { scalar: Number(c.scalar), simd: Number(c.simd), workers: c.workers, participating: c.participating, relaxed: Number(c.relaxed) };
}

/**
 * Step 6: { overall, categories: {name: pass|fail}, failedTest, testIds } from tr_self_test_detail.
 * @param {Runtime} rt
 * @param {number} timeoutMs
 * @returns {Promise<SelfTest>}
 */
export async function selfTest(rt, timeoutMs) {
  const run = selfTestDetail(rt).then(({ code, overall, rows }) => {
    if (code !== 0) throw new LaneFailure('self-test', 'SelfTestFailed', `tr_self_test_detail returned ${code}`);
    /** @type {SelfTest['categories']} */
    const categories = {};
    /** @type {string[]} */
    const testIds = [];
    /** @type {string | null} */
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
 * Threads precondition `n` failed: the lane is skipped, the next one tried.
 * @param {number} n
 * @param {string} message
 */
const preconditionFailed = (n, message) => new LaneFailure(`threads precondition ${n}`, 'ThreadsPrecondition', message);

/**
 * Step 5, the spec's seven threads preconditions in order. `bytes` have passed the hash check.
 * The shared memory is created at the model's memory plan (precondition 4), so the model is
 * admitted first (`head`: its header and directory, planned by a `planner` instance of this
 * module, `module` compiled once); without a model it is the module's declared minimum.
 * Returns the runtime (pool kept), what was observed and the admission (null without a model).
 * @param {ThreadsOptions} o
 * @param {Artifact} artifact
 * @param {Uint8Array} bytes
 * @param {string} sha256
 * @param {ModelHead | null} [head]
 * @param {WebAssembly.Module | null} [module]
 */
export async function threadsPreconditions(o, artifact, bytes, sha256, head = null, module = null) {
  const mem = isolatedAndValid(artifact, bytes); // 1-3
  const admitted = head === null ? null : await admit(o, await plannerOf(bytes, module), head, o.workers);
  const memory = sharedMemory(mem, admitted === null ? null : admitted.plan.peak); // 4
  const rt = await startPool(o, bytes, sha256, memory); // 5
  try {
    const test = await poolSelfTest(o, rt); // 6-7
    return { rt, test, memoryMode: 'wasm32-shared-fixed', admitted };
  } catch (e) {
    await closeRuntime(rt);
    throw e;
  }
}

/**
 * The threads module instantiated on this thread over a memory of its declared minimum, only
 * to plan (host.js `planner`): a failure is precondition 4's (the lane is skipped).
 * @param {Uint8Array} bytes
 * @param {WebAssembly.Module | null} module
 */
async function plannerOf(bytes, module) {
  stats.instantiations++;
  try {
    return await planner(bytes, module);
  } catch (e) {
    throw preconditionFailed(4, `the module cannot be instantiated to plan its memory (${messageOf(e)})`);
  }
}

/**
 * Preconditions 1-3: isolation, SharedArrayBuffer, the artifact validates; and the memory it
 * imports is the contract's: shared, with a declared maximum, never grown. Returns the import.
 * @param {Artifact} artifact
 * @param {Uint8Array} bytes
 */
function isolatedAndValid(artifact, bytes) {
  // 1. isolation
  if (!isolated()) throw preconditionFailed(1, 'the context is not cross-origin isolated');
  // 2. SharedArrayBuffer construction
  try {
    new SharedArrayBuffer(16);
  } catch (e) {
    throw preconditionFailed(2, `SharedArrayBuffer cannot be constructed (${messageOf(e)})`);
  }
  // 3. the threaded artifact validates (BufferSource: downloaded bytes, never shared memory)
  if (!WebAssembly.validate(/** @type {BufferSource} */ (bytes))) throw preconditionFailed(3, 'the threads artifact does not validate in this engine');
  const mem = memoryImport(bytes);
  /** @type {{ shared?: boolean, growth?: boolean }} */
  const rules = artifact.memory || {};
  if (mem === null || !mem.shared || mem.maximum === null || rules.shared !== true || rules.growth !== false) {
    throw new LoaderError('ModuleContract', `${artifact.id}: the manifest promises a shared memory that never grows (memory ${JSON.stringify(rules)}) but the module imports ${JSON.stringify(mem)}`);
  }
  return mem;
}

/**
 * Precondition 4: the shared memory created at the memory plan's peak (`planBytes`; null: no
 * model), page-rounded and never below the module's declared minimum, with initial == maximum:
 * it never grows, and the runtime refuses a session its plan does not fit (OutOfMemory).
 * @param {import('./host.js').MemoryImport} mem
 * @param {number | null} planBytes
 */
function sharedMemory(mem, planBytes) {
  const pages = sharedMemoryPages(mem, planBytes); // the budget (<= 4 GiB) admitted the plan
  try {
    return fixedSharedMemory(pages);
  } catch (e) {
    throw preconditionFailed(4, `a shared memory of ${pages * PAGE} bytes (the memory plan) cannot be created (${messageOf(e)})`);
  }
}

/**
 * Precondition 5: every worker starts and acknowledges the module hash (bounded by startupMs).
 * @param {ThreadsOptions} o
 * @param {Uint8Array} bytes
 * @param {string} sha256
 * @param {WebAssembly.Memory} memory
 */
async function startPool(o, bytes, sha256, memory) {
  /** @type {Runtime} */
  let rt;
  stats.instantiations++;
  try {
    rt = await instantiate({ bytes, sha256, workers: o.workers, memory, startupMs: o.startupMs, livenessMs: o.livenessMs, workerUrl: o.workerUrl });
  } catch (e) {
    throw preconditionFailed(5, `workers did not all start and acknowledge the module: ${messageOf(e)}`);
  }
  stats.live++;
  return rt;
}

/**
 * Preconditions 6-7: atomics, then the barrier test (the self-test's forward pass runs on the
 * pool), and every worker ran the threaded kernels. Returns the self-test, its threads
 * categories passed.
 * @param {ThreadsOptions} o
 * @param {Runtime} rt
 */
async function poolSelfTest(o, rt) {
  // 6. atomics, then the barrier test: the self-test's forward pass runs on the pool
  const atomics = await withTimeout(rt.call('tr_atomics_self_test'), o.selfTestMs, () => preconditionFailed(6, 'the atomics self-test timed out'));
  if (atomics !== 0) throw preconditionFailed(6, `tr_atomics_self_test returned ${atomics}`);
  const before = await readCounters(rt);
  const barriersBefore = (await abiCall(() => workerCounters(rt))).barriers;
  const test = await selfTest(rt, o.selfTestMs).catch((e) => {
    throw e instanceof LaneFailure && e.code === 'SelfTestTimeout' ? preconditionFailed(6, 'the barrier self-test did not finish in time') : e;
  });
  const pool = await abiCall(() => workerCounters(rt));
  if (pool.state !== 1 || pool.barriers <= barriersBefore) throw preconditionFailed(6, `the barrier self-test did not complete (pool state ${pool.state}, barriers ${barriersBefore} -> ${pool.barriers})`);
  // 7. the threaded kernel ran a test vector and every worker updated the shared counters
  const after = await readCounters(rt);
  const all = [...Array(o.workers).keys()];
  if (after.simd <= before.simd || after.participating.join() !== all.join()) {
    throw preconditionFailed(7, `threaded kernels did not run on every worker (simd calls ${before.simd} -> ${after.simd}, participating [${after.participating}])`);
  }
  test.categories.atomics = 'pass';
  test.categories.thread_participation = 'pass';
  return test;
}

/** Runtimes the loader has closed (each is closed once, whoever asks first). */
const closedRuntimes = new WeakSet();

/** @param {Runtime | null | undefined} rt */
export async function closeRuntime(rt) {
  if (!rt || closedRuntimes.has(rt)) return;
  closedRuntimes.add(rt);
  stats.live--;
  await rt.close();
}

/**
 * Steps 4-6 for one artifact: { rt, test, memoryMode, lane, sha256, fetched, admitted } or a
 * LaneFailure / fatal LoaderError. The module is read bounded by its signed size (cache first,
 * re-hashed). The threads lane admits the model (`head`) before its memory exists, as its plan
 * sizes that memory (`admitted`); the other lanes admit it after (step 8; `admitted` null).
 * @param {Pick<ResolvedOptions, 'baseUrl' | 'fetch' | 'onProgress' | 'onCacheError' | 'context'> & ThreadsOptions} o
 * @param {Artifact} artifact
 * @param {{ manifest: Pick<import('./trust.js').Manifest, 'abi_version' | 'runtime_semantics'> }} signed
 * @param {Store | null} [store]
 * @param {ModelHead | null} [head]
 * @param {Map<string, CompiledModule> | null} [modules] modules already read, checked and compiled
 *   by artifact id (a load started again from the network reuses them); what this reads is added
 * @returns {Promise<StartedLane>}
 */
export async function startLane(o, artifact, signed, store = null, head = null, modules = null) {
  const compiled = modules?.get(artifact.id) ?? (await compiledModule(o, artifact, store)); // 4
  if (modules) modules.set(artifact.id, compiled);
  const { got, module } = compiled;
  const { bytes, sha256 } = got;
  const threads = artifact.requires_cross_origin_isolation === true;
  checkExports(artifact, module, threads);
  const { rt, test, memoryMode, admitted } = threads ? await threadsPreconditions(o, artifact, bytes, sha256, head, module) : await startLocal(artifact, bytes, sha256);
  try {
    const lane = await checkLane(rt, artifact, signed);
    const passed = test ?? (await laneSelfTest(o, rt, lane)); // 6 (threads: within step 5)
    if (passed.overall !== 0) {
      throw new LaneFailure('self-test', 'SelfTestFailed', `self-test ${passed.failedTest} failed (code ${passed.overall})`);
    }
    return { rt, test: passed, memoryMode, lane, sha256, fetched: got.record, admitted };
  } catch (e) {
    await closeRuntime(rt);
    throw e;
  }
}

/**
 * A module read, its SHA-256 checked, compiled: `got` what fetchSigned read (bytes, sha256, the
 * receipt's record of where they came from), `module` the compiled module.
 * @typedef {{ got: { bytes: Uint8Array, sha256: string, record: import('./loader.js').FetchRecord }, module: WebAssembly.Module }} CompiledModule
 */

/**
 * Step 4, the module: read bounded by its signed size, its SHA-256 checked before
 * compilation, always; then compiled (a failure here skips the lane).
 * @param {Pick<ResolvedOptions, 'baseUrl' | 'fetch' | 'onProgress' | 'onCacheError'>} o
 * @param {Artifact} artifact
 * @param {Store | null} store
 */
async function compiledModule(o, artifact, store) {
  const url = new URL(artifact.url, o.baseUrl);
  const got = await fetchSigned(o, store, { url, what: `module ${artifact.id}`, sha256: artifact.sha256, size: artifact.size, phase: 'module' });
  const { bytes, sha256 } = got;
  if (sha256 !== artifact.sha256 || bytes.length !== artifact.size) {
    throw new LoaderError('ModuleHashMismatch', `${artifact.url} hashes to ${sha256.slice(0, 16)}… (${bytes.length} bytes), not the signed ${artifact.sha256.slice(0, 16)}… (${artifact.size} bytes)`, { artifact_id: artifact.id, sha256 });
  }
  try {
    // BufferSource: downloaded bytes, never a view of shared memory
    return { got, module: await WebAssembly.compile(/** @type {BufferSource} */ (bytes)) };
  } catch (e) {
    throw new LaneFailure('compile', 'CompileFailed', `${artifact.id} does not compile here: ${messageOf(e)}`);
  }
}

/**
 * Every export this loader calls (a threads module imports its memory instead of exporting it).
 * @param {Artifact} artifact
 * @param {WebAssembly.Module} module
 * @param {boolean} threads
 */
function checkExports(artifact, module, threads) {
  const exported = new Set(WebAssembly.Module.exports(module).map((e) => e.name));
  const missing = [...REQUIRED_EXPORTS, ...(threads ? THREADS_EXPORTS : [])].filter((n) => !exported.has(n) && !(threads && n === 'memory'));
  if (missing.length > 0) throw new LoaderError('UnsupportedAbi', `${artifact.id} lacks export(s) ${missing.join(', ')} this loader needs`);
}

/**
 * A lane that owns its memory (no import), instantiated on this thread; its self-test is run
 * after the ABI check (`laneSelfTest`).
 * @param {Artifact} artifact
 * @param {Uint8Array} bytes
 * @param {string} sha256
 * @returns {Promise<{ rt: Runtime, test: SelfTest | null, memoryMode: string, admitted: null }>}
 */
async function startLocal(artifact, bytes, sha256) {
  if (memoryImport(bytes) !== null) throw new LoaderError('ModuleContract', `${artifact.id} imports a memory but the manifest does not mark it as the threads lane`);
  /** @type {Runtime} */
  let rt;
  stats.instantiations++;
  try {
    rt = await instantiate({ bytes, sha256 });
  } catch (e) {
    throw new LaneFailure('instantiate', 'InstantiateFailed', `${artifact.id}: ${messageOf(e)}`);
  }
  stats.live++;
  return { rt, test: null, memoryMode: 'wasm32-bounded-fixed-after-activation', admitted: null };
}

/**
 * The runtime's ABI version and semantics are the manifest's; resolves to its `tr_lane`.
 * @param {Runtime} rt
 * @param {Artifact} artifact
 * @param {{ manifest: Pick<import('./trust.js').Manifest, 'abi_version' | 'runtime_semantics'> }} signed
 */
async function checkLane(rt, artifact, signed) {
  const abi = await rt.call('tr_abi_version');
  const semantics = await rt.call('tr_runtime_semantics');
  if (abi !== signed.manifest.abi_version || semantics !== signed.manifest.runtime_semantics) {
    throw new LoaderError('UnsupportedAbi', `${artifact.id} reports ABI ${abi} / semantics ${semantics}, the manifest says ${signed.manifest.abi_version} / ${signed.manifest.runtime_semantics}`);
  }
  return rt.call('tr_lane');
}

/**
 * Step 6 on a lane that owns its memory: the self-test, and the lane's own kernels ran in it.
 * @param {Pick<ResolvedOptions, 'selfTestMs'>} o
 * @param {Runtime} rt
 * @param {number} lane
 */
async function laneSelfTest(o, rt, lane) {
  const before = await readCounters(rt);
  const test = await selfTest(rt, o.selfTestMs);
  const after = await readCounters(rt);
  const ran = lane === 0 ? after.scalar > before.scalar : after.simd > before.simd;
  if (!ran) throw new LaneFailure('self-test', 'PathNotExecuted', `the ${KERNEL_SETS[lane]} kernels did not run during the self-test`);
  return test;
}

// ---- 8. the model: checked, admitted, streamed in ---------------------------------------------

/**
 * The model before any lane starts (`modelSpec`): its bytes, hashed; or its URL, declared size
 * and whether an intact cached copy is there.
 * @typedef {{ bytes: Uint8Array, url?: undefined, size: number, sha256: string, record: import('./loader.js').FetchRecord, cached?: undefined } | StreamedModel} ModelSpec
 * @typedef {{ bytes: null, url: URL, size: number, sha256: string, record: import('./loader.js').FetchRecord, cached: boolean }} StreamedModel
 */

/**
 * The model's source before any lane starts: `model.bytes` hashed now (a wrong model never
 * reaches a runtime), or `model.url` with its declared `model.size` (the download's bound); a
 * cached copy is used when there is one (`cached`): not read here, it is hashed once, in place,
 * after it lands (`keepStreamed`); a poisoned one restarts the load from the network
 * (`cachedCopyPoisoned`, loader.js `load`).
 * @param {Pick<ResolvedOptions, 'model' | 'pageUrl' | 'onProgress'>} o
 * @param {Store | null} store
 * @returns {Promise<ModelSpec>}
 */
export async function modelSpec(o, store) {
  const spec = o.model;
  if (!spec || typeof spec.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(spec.sha256)) {
    throw new LoaderError('BadOptions', 'model.sha256 (64 lowercase hex digits) is required');
  }
  if (spec.bytes) {
    await streamingHashChecked();
    const bytes = spec.bytes instanceof Uint8Array ? spec.bytes : new Uint8Array(spec.bytes);
    const { hex: sha256 } = await sha256Whole(bytes); // contiguous: WebCrypto where there is one
    stats.modelBytesHashed += bytes.length;
    if (sha256 !== spec.sha256) throw new LoaderError('HashMismatch', `model SHA-256 ${sha256.slice(0, 16)}… is not the expected ${spec.sha256.slice(0, 16)}…`, { sha256 });
    return { bytes, size: bytes.length, sha256, record: { what: 'model', url: 'model.bytes', sha256, size: bytes.length, cache: 'off' } };
  }
  if (typeof spec.url !== 'string' && !(spec.url instanceof URL)) throw new LoaderError('BadOptions', 'model needs url (with size) or bytes');
  const size = spec.size;
  if (typeof size !== 'number' || !(Number.isSafeInteger(size) && size > 0)) {
    throw new LoaderError('BadOptions', 'model.size (the model file\'s byte length, the bound of its download) is required with model.url');
  }
  const url = new URL(spec.url, o.pageUrl);
  /** @type {import('./loader.js').FetchRecord} */
  const record = { what: 'model', url: String(url), sha256: spec.sha256, size, cache: store ? 'miss' : 'off' };
  // a cached copy: only whether there is one (of the declared size, when the store tells it)
  return { bytes: null, url, size, sha256: spec.sha256, record, cached: await modelCached(store, record) };
}

/**
 * Reads from `source` until `n` bytes are buffered (a small head; the rest stays in the source).
 * @param {Source} source
 * @param {number} n
 * @param {Uint8Array} head
 */
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
 * @param {Uint8Array} header
 */
export function checkModelTier(header) {
  const version = modelFormatVersion(header, MODEL_MAGIC);
  if (version !== null && !Object.hasOwn(MODEL_TIERS, version)) {
    const known = Object.entries(MODEL_TIERS).map(([v, t]) => `${v} = ${t}`).join(', ');
    throw new LoaderError('UnsupportedModelTier', `model format_version ${version} declares a kernel tier this loader does not know (known: ${known})`, { formatVersion: version });
  }
}

/**
 * Step 8's first half, read once per load: the model's header and directory (`prefix`), with
 * nothing of the model requested before `budget` admits its declared size, and from a server
 * that answers parts nothing but those bytes (bounded Range requests). Whichever lane asks first
 * reads them (`rt`, a runtime or a planner, answers the directory's length); a lane tried after
 * it gets the same bytes, no new request. A cached copy stays open for `rest`; a network source
 * is cancelled once the prefix is read, even from a server that ignores Range and sends the
 * whole file: a lane may start between admission and `rest` (the threads lane's pool and
 * self-test), and an engine that reads on without backpressure (WebKit) would take in that
 * whole body meanwhile, or an endless one without end. `rest` asks again from the prefix's end.
 */
export class ModelHead {
  /** @type {Promise<Uint8Array> | null} */
  #reading = null;
  /** @type {Source | null} */
  #source = null;
  /** @type {Uint8Array} the bytes read from the model's start (its header and directory once read) */
  #head = new Uint8Array(0);
  /** Whether the model was read (at least its header) from the store's copy. */
  fromCache = false;
  /** Whether the whole model landed and its hash is the expected one (`loadAdmitted`). */
  hashed = false;

  /**
   * @param {Pick<ResolvedOptions, 'fetch' | 'onProgress'>} o
   * @param {Store | null} store
   * @param {ModelSpec} model
   * @param {number} budget bytes, at most WASM32_BUDGET
   */
  constructor(o, store, model, budget) {
    this.o = o;
    this.store = store;
    this.model = model;
    this.budget = budget;
  }

  /**
   * The header and directory, read once: the kernel tier checked on the header first (nothing
   * has entered a runtime), then `tr_model_prefix_bytes` asked of `rt`.
   * @param {Runtime} rt
   * @returns {Promise<Uint8Array>}
   */
  prefix(rt) {
    this.#reading ??= this.#read(rt);
    return this.#reading;
  }

  /** @param {Runtime} rt */
  async #read(rt) {
    const { o, store, model } = this;
    // before any request: loaded in place, the model's bytes are its weights (>= size)
    if (model.size > this.budget) {
      throw new LoaderError('ModelTooLarge', `model of ${model.size} bytes needs at least ${model.size} bytes (its weights), over the budget of ${this.budget} bytes; the largest part is weights (at least ${model.size} bytes)`, { budget: this.budget, largest: 'weights', peak: model.size });
    }
    // bytes null: the streamed kind (a cast, as the lint's non-strict pass does not narrow on null).
    // From the network (or a file) only the header and directory are asked for before admission
    // (bounded Range requests); a cached copy is read from its start, as it is local
    const streamed = model.bytes === null ? /** @type {StreamedModel} */ (model) : null;
    if (streamed && streamed.cached) this.#source = await openModel(o, store, streamed);
    this.fromCache = streamed !== null && streamed.cached; // false: the copy was gone (modelSource)
    let ranged = false; // the server answers parts: the directory and the rest are asked for apart
    if (streamed && !this.#source) {
      if (o.onProgress) o.onProgress({ phase: 'model', loaded: 0, total: model.size, url: String(model.url) });
      this.#source = await openResumable(o, streamed.url, 'model', model.size, undefined, { from: 0, to: Math.min(MODEL_HEADER_BYTES, model.size) });
      overDeclared(this.#source, streamed);
      ranged = this.#source.ranged === true; // else the whole model is coming: read as far as the prefix
    }
    let head = model.bytes ? model.bytes : await readHead(/** @type {Source} */ (this.#source), Math.min(MODEL_HEADER_BYTES, model.size), new Uint8Array(0));
    if (ranged) this.cancel();
    this.#head = head;
    if (head.length > model.size) throw new LoaderError('BoundExceeded', `model ${model.url} is larger than its declared size of ${model.size} bytes; the download was stopped there`, { url: String(model.url), limit: model.size });
    const header = head.subarray(0, Math.min(MODEL_HEADER_BYTES, head.length));
    checkModelTier(header); // first: an unknown tier is refused before the runtime sees a byte
    const prefixLen = await modelPrefixBytes(rt, header);
    if (streamed && prefixLen > head.length && prefixLen <= model.size) {
      head = this.#source ? await readHead(this.#source, prefixLen, head) : concat(head, await readPart(o, streamed, head.length, prefixLen));
      this.#head = head;
    }
    if (streamed && !streamed.cached) this.cancel(); // the network's rest is asked for after admission
    if (prefixLen === 0 || prefixLen > model.size || prefixLen > head.length) throw new LoaderError('ModelInvalid', 'the model header is truncated or malformed');
    return head.subarray(0, prefixLen);
  }

  /**
   * After admission: the bytes read so far (from the model's start) and the source of the rest
   * (taken: the caller drains it): a cached copy's, open still; from the network, the rest from
   * the head's end, one request.
   * @returns {Promise<{ first: Uint8Array, source: Source }>}
   */
  async rest() {
    const first = this.#head.subarray(0, Math.min(this.#head.length, this.model.size));
    const source = this.#source ?? (await openRest(this.o, /** @type {StreamedModel} */ (this.model), first.length));
    this.#source = null;
    return { first, source };
  }

  /** Cancels what is left of the source (a refusal, a failure, or after the rest was taken). */
  cancel() {
    if (this.#source) this.#source.cancel();
    this.#source = null;
  }
}

/**
 * Step 8's first half on one lane: the model's header and directory (`head`) planned by `rt` (the
 * lane's runtime, or the threads lane's planner) for `workers` at the options' context, against
 * the head's budget: { facts, plan, context }, or the refusal (too large, unsupported tier,
 * invalid) before the rest of the model is requested.
 * @param {Pick<ResolvedOptions, 'context'>} o
 * @param {Runtime} rt
 * @param {ModelHead} head
 * @param {number | null} [workers] 0 = an unthreaded lane; null: `rt`'s own (asked only once the
 *   header's tier is known: an unknown one is refused before the runtime is touched)
 * @returns {Promise<Admission>}
 */
export async function admit(o, rt, head, workers = null) {
  const prefix = await head.prefix(rt);
  return preflight(o, rt, head.model, prefix, head.budget, workers ?? (rt.workers || 0));
}

/**
 * Step 8's second half, once admitted: the model streamed into its final window of Wasm memory
 * (exactly its size; hashed while it arrives or where it landed, bounded by its declared size; no
 * whole JS copy), then tr_model_adopt makes that window the model's bytes (no copy) — only when
 * the hash is the expected one (else it is freed). Resolves to the model handle.
 * @param {Pick<ResolvedOptions, 'fetch' | 'onProgress' | 'onCacheError'>} o
 * @param {Runtime} rt
 * @param {Store | null} store
 * @param {ModelHead} head
 */
export async function loadAdmitted(o, rt, store, head) {
  const model = head.model;
  // the window they stream into (exactly the file's size) becomes the model's bytes
  // (tr_model_adopt), the handle comes back in another window; a model whose hash is not the
  // expected one is freed
  return withWindow(rt, 8, (out) => withModelWindow(rt, model.size, async (window) => {
    const ptr = window.ptr;
    if (model.bytes) {
      rt.bytes(ptr, model.size).set(model.bytes); // the integrator's bytes, copied once
    } else {
      // admitted: the rest of the model, from the prefix's end (a cached copy: already open)
      const { first, source } = await head.rest();
      const rest = await drainInto(o, rt, ptr, source, model, first).catch((e) => {
        source.cancel(); // taken from the head: its own to stop
        throw e;
      });
      await keepStreamed(o, rt, store, model, ptr, rest);
      head.hashed = true;
    }
    return adoptAt(rt, window, out);
  }));
}

/**
 * Step 8 on one lane: the kernel tier checked on the header (nothing has entered the runtime; a
 * streamed model is not downloaded further), preflight from the header and directory against
 * `budgetFor()` (at most 4 GiB), then the model streamed in and adopted (`admit`, then
 * `loadAdmitted`). Returns { handle, facts, plan, context }.
 * @param {Pick<ResolvedOptions, 'fetch' | 'onProgress' | 'onCacheError' | 'context'>} o
 * @param {Runtime} rt
 * @param {Store | null} store
 * @param {ModelSpec} model
 * @param {() => number} budgetFor
 */
export async function admitAndLoad(o, rt, store, model, budgetFor) {
  const head = new ModelHead(o, store, model, Math.min(budgetFor(), WASM32_BUDGET));
  try {
    const admitted = await admit(o, rt, head);
    return { handle: await loadAdmitted(o, rt, store, head), ...admitted };
  } finally {
    head.cancel();
  }
}

/**
 * A streamed model's Source: a Content-Length over the declared size is refused before any
 * byte is read; progress starts at 0.
 * @param {Pick<ResolvedOptions, 'fetch' | 'onProgress'>} o
 * @param {Store | null} store
 * @param {StreamedModel} model
 */
async function openModel(o, store, model) {
  const source = await modelSource(o, store, model);
  if (source.length !== null && source.length > model.size) {
    source.cancel(); // a Content-Length over the declared size: nothing is downloaded
    throw new LoaderError('BoundExceeded', `model ${model.url} is ${source.length} bytes, over its declared size of ${model.size}`, { url: String(model.url), limit: model.size });
  }
  if (o.onProgress) o.onProgress({ phase: 'model', loaded: 0, total: model.size, url: String(model.url) });
  return source;
}

/**
 * `a` then `b`, one array.
 * @param {Uint8Array} a
 * @param {Uint8Array} b
 */
function concat(a, b) {
  const joined = new Uint8Array(a.length + b.length);
  joined.set(a);
  joined.set(b, a.length);
  return joined;
}

/**
 * The model's bytes [from, to) from a server that answers parts, before it is admitted: a
 * bounded Range request (an answer of the whole is read to `to` and cancelled). Its whole length
 * over the declared size is refused before a byte is read.
 * @param {Pick<ResolvedOptions, 'fetch'>} o
 * @param {StreamedModel} model
 * @param {number} from
 * @param {number} to
 */
async function readPart(o, model, from, to) {
  const source = await openResumable(o, model.url, 'model', model.size, undefined, { from, to });
  try {
    overDeclared(source, model);
    const got = await readHead(source, to - from, new Uint8Array(0));
    return got.subarray(0, Math.min(got.length, to - from));
  } finally {
    source.cancel();
  }
}

/**
 * The admitted model's bytes from `from` (the prefix's end) to its end, one request (Range;
 * from a server that ignores it the prefix is read again and skipped).
 * @param {Pick<ResolvedOptions, 'fetch'>} o
 * @param {StreamedModel} model
 * @param {number} from
 */
async function openRest(o, model, from) {
  const source = await openResumable(o, model.url, 'model', model.size, undefined, { from });
  overDeclared(source, model);
  return source;
}

/**
 * A body whose Content-Length (or Content-Range total) is over the model's declared size is
 * refused (and cancelled) before any byte of it is read.
 * @param {Source} source
 * @param {StreamedModel} model
 */
function overDeclared(source, model) {
  const total = source.total ?? null;
  if (total !== null && total > model.size) {
    source.cancel();
    throw new LoaderError('BoundExceeded', `model ${model.url} is ${total} bytes, over its declared size of ${model.size}`, { url: String(model.url), limit: model.size });
  }
}

/**
 * The preflight of the model's header and directory (`prefix`) at the options' context against
 * the budget: its facts and memory plan, or the refusal (too large, unsupported tier, invalid).
 * @param {Pick<ResolvedOptions, 'context'>} o
 * @param {Runtime} rt
 * @param {ModelSpec} model
 * @param {Uint8Array} prefix
 * @param {number} budget at most WASM32_BUDGET: no wasm32 lane addresses more
 * @param {number} workers
 * @returns {Promise<Admission>}
 */
async function preflight(o, rt, model, prefix, budget, workers) {
  const facts = modelFacts(prefix, LAYOUTS, MODEL_TIERS);
  const context = o.context || facts.maxContext;
  const p = await planHeader(rt, prefix, model.size, context, workers, true); // loaded in place: no load copy
  if (p.code === 3) throw new LoaderError('UnsupportedModelTier', 'this runtime module refuses the model\'s format/tier (TrResult UnsupportedFeature): it predates the model\'s kernel tier or flags', { code: p.code });
  if (p.code !== 0) throw new LoaderError('ModelInvalid', `tr_plan_header refused the model (TrResult ${p.code})`, { code: p.code });
  /** @type {import('./loader.js').Plan} parts and largest: PLAN_PARTS' names (abi.js), loader.d.ts' PlanPart */
  const plan = { peakPrefill: p.peakPrefill, steadyDecode: p.steadyDecode, peakLoad: p.peakLoad, peak: p.peak, parts: /** @type {import('./loader.js').Plan['parts']} */ (p.parts), largest: /** @type {import('./loader.js').PlanPart} */ (p.largest), workers, budget };
  if (p.peak > budget) {
    const largest = `${p.largest} (${p.parts[p.largest]} bytes)`;
    throw new LoaderError('ModelTooLarge', `model + context ${context} need ${p.peak} bytes at their peak (load ${p.peakLoad}, prefill ${p.peakPrefill}, decode ${p.steadyDecode}), over the budget of ${budget} bytes; the largest part is ${largest}`, { ...plan });
  }
  return { facts, plan, context };
}

/**
 * The model's cached copy failed its hash (or its size) once it had landed: dropped, and the
 * load is started again from the network (loader.js `load`, once). A HashMismatch to any other
 * caller.
 */
export class CachePoisoned extends LoaderError {
  /**
   * @param {string} message
   * @param {Record<string, unknown>} detail
   */
  constructor(message, detail) {
    super('HashMismatch', message, detail);
  }
}

/**
 * Whether `error`, which ended a load whose model is `model` (read through `head`), came of a
 * poisoned cached copy: a CachePoisoned (its hash, once landed); or any refusal after the head
 * was read from the copy and before its hash was checked (admission may have been decided on a
 * poisoned header), when the copy, read and hashed again now (the failure path only), is not
 * intact. A poisoned copy is dropped (record.cache 'poisoned'); the caller loads again from the
 * network.
 * @param {Store | null} store
 * @param {ModelSpec} model
 * @param {ModelHead} head
 * @param {unknown} error
 */
export async function cachedCopyPoisoned(store, model, head, error) {
  if (error instanceof CachePoisoned) return true;
  if (!(error instanceof LoaderError) || !head.fromCache || head.hashed || model.bytes) return false;
  return !(await modelIntact(store, model.record)) && model.record.cache === 'poisoned';
}

/**
 * A streamed model, all in Wasm memory: its hash must be the expected one (a cached copy that
 * is not is dropped: CachePoisoned); a downloaded one is then stored.
 * @param {Pick<ResolvedOptions, 'onCacheError'>} o
 * @param {Runtime} rt
 * @param {Store | null} store
 * @param {ModelSpec} model
 * @param {number} ptr
 * @param {{ sha256: string | null, length: number }} rest
 */
async function keepStreamed(o, rt, store, model, ptr, rest) {
  // not hashed while it streamed (drainInto): the whole model, where it landed, before any use
  const whole = rest.sha256 === null && rest.length === model.size;
  const sha256 = whole ? (await sha256Whole(rt.bytes(ptr, model.size))).hex : rest.sha256;
  stats.modelBytesHashed += whole ? model.size : rest.sha256 === null ? 0 : rest.length;
  const intact = sha256 === model.sha256 && rest.length === model.size;
  await settleModelCache(o, store, model, intact, rt.memory, ptr); // a bad cached copy dropped, a good download stored
  if (!intact) {
    const got = sha256 === null ? 'not hashed' : `${sha256.slice(0, 16)}…`;
    const message = `model SHA-256 ${got} (${rest.length} bytes) is not the expected ${model.sha256.slice(0, 16)}… (${model.size} bytes)`;
    if (model.cached) {
      model.record.cache = 'poisoned'; // dropped: the load starts again from the network
      throw new CachePoisoned(`the cached copy's ${message}`, { sha256 });
    }
    throw new LoaderError('HashMismatch', message, { sha256 });
  }
}

/**
 * The model's final window, exactly `size` bytes: `fn(window)` fills it and adopts it (from
 * tr_model_adopt on the window is the runtime's, whatever its result); freed here otherwise.
 * @template T
 * @param {Runtime} rt
 * @param {number} size
 * @param {(window: ModelWindow) => Promise<T>} fn
 * @returns {Promise<T>}
 */
async function withModelWindow(rt, size, fn) {
  const ptr = await rt.call('tr_alloc', size);
  if (ptr === 0) throw new LoaderError('RuntimeError', `tr_alloc(${size}) failed: the model's window does not fit the runtime's ${rt.memory.buffer.byteLength}-byte memory (OutOfMemory)`, { code: TR_OUT_OF_MEMORY });
  /** @type {ModelWindow} */
  const window = { ptr, size, owned: true };
  try {
    return await fn(window);
  } finally {
    if (window.owned) await rt.call('tr_free', ptr, size);
  }
}

/** @typedef {{ ptr: number, size: number, owned: boolean }} ModelWindow */

/**
 * tr_model_adopt of the model's window (the handle written to `out`, another window): the model
 * handle, or ModelInvalid. The window is the runtime's from here on.
 * @param {Runtime} rt
 * @param {ModelWindow} window
 * @param {number} out
 */
async function adoptAt(rt, window, out) {
  stats.modelLoads++;
  window.owned = false;
  const adopted = await modelAdoptAt(rt, window.ptr, window.size, out);
  if (adopted.code !== 0) throw new LoaderError('ModelInvalid', `tr_model_adopt refused the model (TrResult ${adopted.code})`, { code: adopted.code });
  return adopted.handle;
}

/**
 * The head already read, then the rest of `source`, into Wasm memory at `ptr`, bounded. With
 * crypto.subtle and unshared memory nothing is hashed here (sha256 null): keepStreamed hashes
 * the whole model in Wasm memory with WebCrypto, ~5-10x the fastest streaming hash measured
 * (sha256.js); without it, or in shared memory, `Sha256` hashes every chunk as it arrives. Either way the streaming hash is first checked
 * against WebCrypto (HashSelfCheck, before a byte is read): a lying digest is refused.
 * @param {Pick<ResolvedOptions, 'onProgress'>} o
 * @param {Runtime} rt
 * @param {number} ptr
 * @param {Source} source
 * @param {ModelSpec} model
 * @param {Uint8Array} first
 */
async function drainInto(o, rt, ptr, source, model, first) {
  try {
    await streamingHashChecked();
  } catch (e) {
    source.cancel();
    throw e;
  }
  // shared memory (the threads lane) is hashed while it streams: WebCrypto would need a copy of
  // the whole model (+1x its size, and ~200 MB/s in Chromium, measured), which the plan forbids
  const hash = engineSubtle() && !isShared(rt.memory.buffer) ? null : new Sha256();
  if (hash) hash.update(first);
  rt.bytes(ptr, first.length).set(first);
  return drain(o, source, {
    what: 'model',
    url: String(model.url),
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

// ---- memory beside the plan (CONTRACT.md §5) ---------------------------------------------------

/** @typedef {import('./loader.js').MemoryMeasured} MemoryMeasured */

/**
 * The memory of the phase that ends now, and a new phase begins: the allocator's high-water
 * mark since the previous mark (tr_heap_reset_peak) over the static base (`__heap_base`: data,
 * stacks, the threads lane's worker regions) and the Wasm memory's size. `window` (>= 32
 * bytes) holds the record; without one a window is allocated for it (before activation).
 * @param {Runtime} rt
 * @param {number | null} [window]
 * @returns {Promise<MemoryMeasured>}
 */
export async function phaseMemory(rt, window = null) {
  const s = window === null ? await heapStats(rt) : await heapStatsAt(rt, window);
  await rt.call('tr_heap_reset_peak');
  return { heapPeak: s.peak, staticBase: s.staticBase, highWater: s.staticBase + s.peak, memoryBytes: rt.memory.buffer.byteLength };
}

// ---- KV prefix reuse (CONTRACT.md §11) ----------------------------------------------------------

/** @typedef {import('./loader.js').CacheIdentity} CacheIdentity */
/** The cache identity's fields, in the order a mismatch is reported (crates/core/src/session/reuse.rs). */
export const IDENTITY_FIELDS = Object.freeze(/** @type {const} */ (['model_sha256', 'tokenizer_sha256', 'normalization_version', 'chat_template_sha256', 'numerical_mode', 'kv_layout_version', 'lane']));

/**
 * The identity a session's K/V is computed under: the model's SHA-256, tokenizer v1 (the SHA-256
 * of its defining bytes, its normalization version), no chat template, the tier's numerical mode,
 * the K/V layout version and the lane (artifact id).
 * @param {{ modelSha256: string, tier: string | null, lane: string }} parts
 * @returns {Promise<CacheIdentity>}
 */
export async function cacheIdentity({ modelSha256, tier, lane }) {
  const mode = TIER_SELECTION[tier || 'f32'];
  if (mode === undefined) throw new LoaderError('UnsupportedModelTier', `no numerical mode for model tier ${tier}`);
  return {
    model_sha256: modelSha256,
    tokenizer_sha256: await sha256Hex(new TextEncoder().encode(TOKENIZER_BYTES)),
    normalization_version: NORMALIZATION_VERSION,
    chat_template_sha256: null,
    numerical_mode: mode.numericalMode,
    kv_layout_version: KV_LAYOUT_VERSION,
    lane,
  };
}

/**
 * The first identity field where `cached` and `current` differ (null: equal field for field).
 * @param {CacheIdentity | null} cached
 * @param {CacheIdentity | null} current
 * @returns {string | null}
 */
export function identityMismatch(cached, current) {
  if (cached === null || current === null) return 'identity';
  return IDENTITY_FIELDS.find((f) => cached[f] !== current[f]) ?? null;
}

/**
 * The exact-prefix rule: with keep = min(committed, prompt - 1), the first `keep` committed ids
 * must equal the prompt's first `keep` ids, id for id; then `keep`, else 0.
 * @param {readonly number[]} committed
 * @param {readonly number[]} prompt
 */
export function reusablePrefix(committed, prompt) {
  const keep = Math.min(committed.length, Math.max(prompt.length - 1, 0));
  for (let i = 0; i < keep; i++) if (committed[i] !== prompt[i]) return 0;
  return keep;
}

// ---- 10. use ----------------------------------------------------------------------------------------

/**
 * What an activated runtime is made of (`Loaded.activate`).
 * @typedef {{ rt: Runtime, lane: string, threads: boolean, context: number, prefillChunk: number, model: bigint, session: bigint, tokenWindow: number, decodeWindow: number, digestWindow: number, memoryBytes: number, budget: number }} Activation
 */

/** A runtime with one model and one session, memory fixed since activation. */
export class Loaded {
  /** @type {import('./loader.js').Receipt | undefined} set by load() once the runtime is active */
  receipt;
  /** @type {import('./loader.js').Plan | undefined} set by load() with the receipt */
  plan;
  /** @type {Runtime} */
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
  digestWindow = 0;
  memoryBytes = 0;
  budget = 0;
  /** @type {CacheIdentity | null} what K/V computed now is computed under (set by load()) */
  identity = null;
  /** @type {string | null} the lane's artifact id (set by load()): a worker failure records it */
  artifactId = null;
  /** @type {MemoryMeasured | null} what loading the model in place measured (set by load()) */
  loadMemory = null;
  /** @type {{ tokens: number[], pending: boolean, known: boolean, under: CacheIdentity | null }} the runtime's tokens: fed, plus the sampled-not-fed one */
  cache = { tokens: [], pending: false, known: true, under: null };

  /** @param {Activation} a */
  constructor(a) {
    this.rt = a.rt;
    this.lane = a.lane;
    this.threads = a.threads;
    this.context = a.context;
    this.cancelEpoch = 0;
    this.closed = false;
    this.prefillChunk = a.prefillChunk;
    this.decoder = new TextDecoder('utf-8');
    this.model = a.model;
    this.session = a.session;
    this.tokenWindow = a.tokenWindow;
    this.decodeWindow = a.decodeWindow;
    this.digestWindow = a.digestWindow;
    this.memoryBytes = a.memoryBytes;
    this.budget = a.budget;
  }

  /**
   * Activation: one session on the loaded model, and every window later calls use.
   * @param {Runtime} rt
   * @param {bigint} handle
   * @param {number} context
   * @param {Pick<ResolvedOptions, 'prefillChunk' | 'session'>} o
   * @param {number} lane
   * @param {number} budget
   */
  static async activate(rt, handle, context, o, lane, budget) {
    const threads = rt.workers > 0;
    const prefillChunk = o.prefillChunk || (threads ? 1 : 16);
    const made = await sessionNew(rt, handle, { ...o.session, context });
    if (made.code === TR_OUT_OF_MEMORY) {
      // the threads lane's memory never grows: a session whose plan does not fit it is refused
      throw new LoaderError('RuntimeError', `tr_session_new returned ${made.code} (OutOfMemory): a session of ${context || 'the model\'s'} tokens does not fit the runtime's ${rt.memory.buffer.byteLength}-byte memory`, { code: made.code, memoryBytes: rt.memory.buffer.byteLength });
    }
    if (made.code !== 0) throw new LoaderError('RuntimeError', `tr_session_new returned ${made.code}`, { code: made.code });
    // The windows every later call uses, allocated now so nothing allocates after activation.
    const tokenWindow = await rt.call('tr_alloc', 4 * Math.max(prefillChunk, 1));
    const decodeWindow = await rt.call('tr_alloc', DECODE_RECORD_BYTES);
    const digestWindow = await rt.call('tr_alloc', Math.max(DIGEST_BYTES, HEAP_RECORD_BYTES)); // and memorySince()'s record
    if (tokenWindow === 0 || decodeWindow === 0 || digestWindow === 0) throw new LoaderError('RuntimeError', 'tr_alloc failed during activation');
    const memoryBytes = rt.memory.buffer.byteLength; // never changes from here on
    if (memoryBytes > budget && !threads) throw new LoaderError('MemoryBudget', `memory is ${memoryBytes} bytes after activation, over the budget of ${budget}`);
    return new Loaded({ rt, lane: KERNEL_SETS[lane], threads, context, prefillChunk, model: handle, session: made.session, tokenWindow, decodeWindow, digestWindow, memoryBytes, budget });
  }

  checkMemory() {
    const now = this.rt.memory.buffer.byteLength;
    if (now !== this.memoryBytes) throw new LoaderError('MemoryGrew', `linear memory grew from ${this.memoryBytes} to ${now} bytes after activation`);
  }

  /**
   * @param {string} name
   * @param {...import('./host.js').WasmArg} args
   */
  async call(name, ...args) {
    if (this.closed) throw new LoaderError('Closed', 'the runtime was closed');
    let r;
    try {
      r = await this.rt.call(name, ...args);
    } catch (e) {
      // the leader died (or a worker, seen by the host): never a hang, a typed error
      if (e instanceof HostError && e.code === TR_WORKER_FAILURE) throw this.workerFailure(`${name}: ${e.message}`);
      throw e;
    }
    this.checkMemory();
    // a worker died or fell silent: the pool has failed, and every later operation would too
    if (this.threads && r === TR_WORKER_FAILURE) throw this.workerFailure(`${name} returned ${r} (WorkerFailure: a worker of the pool died or fell silent)`);
    return r;
  }

  /**
   * A worker failure: the session's state is unknown from here on, and the lane is recorded as
   * failed, so the next load() in this page falls back to the next lane (`LaneFailed`).
   * @param {string} message
   */
  workerFailure(message) {
    this.cache.known = false;
    if (this.artifactId !== null) recordLaneFailure(this.artifactId, 'WorkerFailure', message);
    return new LoaderError('WorkerFailure', message, { code: TR_WORKER_FAILURE, lane: this.artifactId });
  }

  /** The session's committed position (tr_session_digest, into the window of activation). */
  async position() {
    const code = await this.call('tr_session_digest', this.session, this.digestWindow);
    if (code !== 0) throw new LoaderError('RuntimeError', `tr_session_digest returned ${code}`, { code });
    return Number(new DataView(this.rt.memory.buffer, this.digestWindow, 8).getBigUint64(0, true));
  }

  /**
   * Feeds a prompt (text: BOS + UTF-8 bytes; or token ids) in chunks. Resolves to
   * { committed, cancelled }: after a cancel the session stands at its last committed token
   * (`committed` tokens of this call), so the rest can be fed again later.
   * @param {string | number[]} prompt
   * @param {{ onProgress?: ((committed: number, total: number) => void) | null }} [options]
   */
  async prefill(prompt, { onProgress = null } = {}) {
    const tokens = typeof prompt === 'string' ? encodePrompt(prompt) : [...prompt];
    const epoch = this.cancelEpoch;
    const cache = this.cache;
    if (cache.tokens.length === 0) cache.under = this.identity === null ? null : { ...this.identity };
    let committed = 0;
    // threads lane: a cancel lands inside a call, after any whole tile; the position says which
    let base = this.threads ? await this.position() : 0;
    while (committed < tokens.length) {
      if (this.cancelEpoch !== epoch) return { committed, cancelled: true };
      const chunk = tokens.slice(committed, committed + this.prefillChunk);
      const pending = cache.pending; // fed first, then the chunk
      writeTokens(this.rt, this.tokenWindow, chunk);
      const code = await this.call('tr_prefill', this.session, this.tokenWindow, chunk.length).catch((e) => {
        if (e instanceof LoaderError) e.detail.committed = committed; // tokens of this call committed before the failing one
        throw e;
      });
      // cancelled or failed: the next turn recomputes (the cache is not trusted after either)
      if (code !== 0) cache.known = false;
      if (code === TR_CANCELLED) return { committed: committed + (await this.committedOnCancel(chunk, pending, base)), cancelled: true };
      if (code !== 0) throw new LoaderError('RuntimeError', `tr_prefill returned ${code}`, { code, committed });
      cache.tokens.push(...chunk);
      cache.pending = false;
      committed += chunk.length;
      base += chunk.length + (pending ? 1 : 0);
      if (onProgress) onProgress(committed, tokens.length);
      if (!this.threads) await new Promise((r) => setTimeout(r, 0)); // let a cancel() in
    }
    return { committed, cancelled: false };
  }

  /**
   * After a cancelled tr_prefill of `chunk` at position `base` (the pending token first when
   * `pending`): the tiles it committed before the cancel (a chunk may span several), read from
   * the session's position, are added to the cache; resolves to how many tokens of `chunk`.
   * @param {number[]} chunk
   * @param {boolean} pending
   * @param {number} base
   */
  async committedOnCancel(chunk, pending, base) {
    if (!this.threads) return 0; // a call runs whole on this thread: the cancel came between calls
    let fed = (await this.position()) - base;
    if (pending && fed > 0) {
      this.cache.pending = false;
      fed -= 1;
    }
    if (fed < 0 || fed > chunk.length) throw new LoaderError('RuntimeError', `the session's position moved by ${fed} in a cancelled prefill of ${chunk.length}`, { committed: fed });
    this.cache.tokens.push(...chunk.slice(0, fed));
    return fed;
  }

  /**
   * Streams sampled tokens: { token, text, done } until EOS, maxTokens, or cancel().
   * @param {{ maxTokens?: number }} [options]
   */
  async *decode({ maxTokens = 64 } = {}) {
    const epoch = this.cancelEpoch;
    for (let n = 0; n < maxTokens; n++) {
      if (this.cancelEpoch !== epoch) return;
      const code = await this.call('tr_decode', this.session, this.decodeWindow);
      if (code === TR_CANCELLED) return; // nothing committed for this step
      if (code !== 0) {
        this.cache.known = false;
        throw new LoaderError('RuntimeError', `tr_decode returned ${code}`, { code });
      }
      const { token, done } = readDecodeRecord(this.rt, this.decodeWindow);
      this.cache.tokens.push(token); // sampled, not fed: pending until the next prefill
      this.cache.pending = true;
      const text = token < 256 ? this.decoder.decode(new Uint8Array([token]), { stream: true }) : '';
      yield { token, text, done };
      if (done || token === EOS) return;
      if (!this.threads) await new Promise((r) => setTimeout(r, 0));
    }
  }

  /** The committed tokens: those whose K/V rows the session holds (not the pending sampled one). */
  committedTokens() {
    const { tokens, pending } = this.cache;
    return tokens.slice(0, tokens.length - (pending ? 1 : 0));
  }

  /**
   * One turn with KV prefix reuse (CONTRACT.md §11): the session keeps the committed tokens the
   * exact-prefix rule allows when the identity they were computed under equals `identity` field
   * for field (else it recomputes from scratch), restarts the sampler, and prefills the rest.
   * What `decode()` then yields equals a fresh session's bit for bit. Resolves to { reused,
   * recomputed, refused (the identity field that differed, or null), committed, cancelled }.
   * @param {string | number[]} prompt
   * @param {{ onProgress?: ((committed: number, total: number) => void) | null }} [options]
   * @returns {Promise<import('./loader.js').TurnResult>}
   */
  async turn(prompt, options = {}) {
    const tokens = typeof prompt === 'string' ? encodePrompt(prompt) : [...prompt];
    if (tokens.length === 0 || !tokens.every((t) => Number.isInteger(t) && t >= 0 && t <= 0xffffffff)) {
      throw new LoaderError('BadOptions', 'turn() takes a non-empty prompt of token ids (u32)');
    }
    const cache = this.cache;
    const committed = this.committedTokens();
    const refused = committed.length === 0 ? null : !cache.known ? 'unknown' : identityMismatch(cache.under, this.identity);
    const keep = refused === null ? reusablePrefix(committed, tokens) : 0;
    const code = await this.call('tr_session_rewind', this.session, keep);
    if (code !== 0) throw new LoaderError('RuntimeError', `tr_session_rewind returned ${code}`, { code });
    this.cache = { tokens: tokens.slice(0, keep), pending: false, known: true, under: this.identity === null ? null : { ...this.identity } };
    const fed = await this.prefill(tokens.slice(keep), options);
    return { reused: keep, recomputed: tokens.length - keep, refused, ...fed };
  }

  /** Stops the prefill or decode in flight (threads lane: inside the operation; else between calls). */
  cancel() {
    this.cancelEpoch++;
    if (this.threads) this.rt.cancel();
  }

  /**
   * The memory of the phase since the previous call (the first call: since the model loaded,
   * i.e. the session's activation), beside `plan` (CONTRACT.md §5); a new phase begins.
   * Nothing is allocated (the record goes to a window of activation).
   * @returns {Promise<MemoryMeasured>}
   */
  async memorySince() {
    if (this.closed) throw new LoaderError('Closed', 'the runtime was closed');
    const m = await phaseMemory(this.rt, this.digestWindow);
    this.checkMemory();
    return m;
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
