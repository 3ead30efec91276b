// TinyRustLM loader: verify, probe, choose, self-test, fall back, and account for what ran.
// ES module, no dependencies beyond its siblings; the same files run in browsers and node >= 20.
// No dependencies on purpose: the bundle's js/ is signed file by file and served as signed (no
// bundler or npm install between the signature and the page), so what `verify` checked runs.
// Types of the whole public API: loader.d.ts (the npm package's `types`).
//
//   import { load } from './js/loader.js';
//   const lm = await load({ trustedKeys, model: { url: 'small.trlm', size, sha256 } });
//   await lm.prefill('Once upon a time');
//   for await (const t of lm.decode({ maxTokens: 32 })) out.textContent += t.text;
//
// The sequence (runtime-architecture.md, "The loader should perform this sequence"), one named
// function per step, every failure a LoaderError with a stable `code`. The rooms:
//   trust.js    1  verifySignedManifest  DSSE Ed25519 over PAE(payloadType, payload) with WebCrypto
//                                        against the trusted keys; then the version floor (Rollback)
//   choice.js   2  runProbes             tiny feature modules, each hash-checked, then validate
//               2b runSemanticProbes     the relaxed dot on out-of-range operands: which semantics
//               3  chooseLanes           best lane first: isolation + probes, minus denied/disabled
//   fetch.js       every download bounded, progress-reported, content-addressed cache
//   session.js  4  startLane             module SHA-256 before compile, ABI exports, bounded memory
//               5  threadsPreconditions  the spec's seven, in order (threads lane only)
//               6  selfTest              per-category result and the failing test id
//               7  (load)                a failure in 4-6 is recorded and the next lane is tried
//               8  admit, loadAdmitted   tr_plan_header (in place; the threads lane's before its
//                                        memory exists, created at the plan), then the model streamed
//                                        into its final window (hashed, bounded), tr_model_adopt only if intact;
//                                        what it peaked at beside the plan (lm.loadMemory)
//   receipt.js  9  buildReceipt          tinyrustlm.capability-receipt.v2 from observations only
//   session.js 10  Loaded                prefill, streaming decode, turn (KV prefix reuse), cancel, close,
//                                        memorySince (each phase's peak beside the plan)
//   abi.js         the one place that knows the ABI's records
import { HostError, isNode } from './host.js';
import { LoaderError, LaneFailure, loaderStats, laneFailureRecord, forgetLaneFailures, stats } from './errors.js';
import { verifySignedManifest, checkVersionFloor, compareVersions, trustRootId, pae, SUPPORTED, MANIFEST_PAYLOAD_TYPE } from './trust.js';
import { runProbes, runSemanticProbes, chooseLanes } from './choice.js';
import { defaultFetch, openStore, MANIFEST_CAP, SIGNATURE_CAP, CACHE_NAME } from './fetch.js';
import {
  startLane, selfTest, threadsPreconditions, modelSpec, ModelHead, admit, loadAdmitted, readCounters, closeRuntime, Loaded, DEFAULT_MEMORY_BUDGET, WASM32_BUDGET, cacheIdentity, identityMismatch, reusablePrefix, IDENTITY_FIELDS,
  phaseMemory, cachedCopyPoisoned,
} from './session.js';
import { buildReceipt, RECEIPT_SCHEMA } from './receipt.js';

/**
 * The bundle root in node when `baseUrl` is not given: the folder above js/ (a file: URL,
 * read from disk). In a browser the same default is the URL the loader was served from.
 */
const DEFAULT_BASE = new URL('../', import.meta.url);

/**
 * node:url's pathToFileURL without importing it in browsers (percent-encodes what it must).
 * @param {string} path
 */
function pathToFileURL(path) {
  const url = new URL('file://');
  url.pathname = path.replace(/\\/g, '/');
  return url;
}

/**
 * `opts` without the options given as `undefined` (so the default stands for them).
 * @template {object} T
 * @param {T} opts
 * @returns {Partial<T>}
 */
function defined(opts) {
  return /** @type {Partial<T>} */ (Object.fromEntries(Object.entries(opts).filter(([, v]) => v !== undefined)));
}

/**
 * @param {import('./loader.js').LoadOptions} opts
 * @returns {import('./loader.js').ResolvedOptions}
 */
function normalise(opts) {
  if (!opts || typeof opts !== 'object') throw new LoaderError('BadOptions', 'load() takes an options object');
  const o = {
    baseUrl: DEFAULT_BASE,
    allowDevKey: false,
    allowDowngrade: false,
    minVersion: null,
    versionFile: null,
    rememberVersion: true,
    cache: 'auto',
    cacheDir: null,
    onProgress: null,
    onCacheError: null,
    denyLanes: [],
    relaxedSimd: 'auto',
    retryFailedLanes: false,
    workers: 2,
    memoryBudget: null,
    context: 0,
    session: {},
    startupMs: 10000,
    livenessMs: 5000,
    selfTestMs: 20000,
    workerUrl: undefined,
    fetch: defaultFetch,
    now: Date.now() / 1000,
    ...defined(opts), // an option given as undefined is the default, never `undefined`
  };
  // relative URLs resolve against the page; in node against the working directory, so a bundle
  // or model path (relative or absolute) is a file: URL that node reads from disk
  const here = globalThis.location ? globalThis.location.href : isNode ? pathToFileURL(`${globalThis.process.cwd()}/`).href : DEFAULT_BASE.href;
  o.pageUrl = opts.pageUrl || here;
  o.baseUrl = new URL(o.baseUrl, o.pageUrl);
  if (!o.baseUrl.href.endsWith('/')) o.baseUrl = new URL(`${o.baseUrl.href}/`);
  if (typeof o.workerUrl === 'string') o.workerUrl = new URL(o.workerUrl, o.pageUrl);
  if (!(Number.isInteger(o.workers) && o.workers >= 1 && o.workers <= 8)) throw new LoaderError('BadOptions', 'workers must be an integer in 1..8');
  if (o.cache !== 'auto' && o.cache !== 'none') throw new LoaderError('BadOptions', "cache must be 'auto' or 'none'");
  if (o.relaxedSimd !== 'auto' && o.relaxedSimd !== 'off') throw new LoaderError('BadOptions', "relaxedSimd must be 'auto' or 'off'");
  if (o.minVersion !== null) compareVersions(o.minVersion, o.minVersion); // a malformed floor is BadOptions
  return o;
}

/**
 * Verify, probe, choose, start (with fallback), admit the model and activate a session.
 * Options: loader.d.ts `LoadOptions`. A model whose cached copy turns out poisoned (its hash once
 * landed, or a refusal it may have caused) is dropped from the store, and the load starts again
 * from the lane choice with the model from the network: once (`loaderStats().cacheRestarts`).
 * @param {import('./loader.js').LoadOptions} opts
 * @returns {Promise<Loaded>}
 */
export async function load(opts) {
  const o = normalise(opts);
  const signed = await verifySignedManifest(o); // 1
  await checkVersionFloor(o, signed.manifest); // 1b: no older release than accepted before
  const probes = await runProbes(undefined, o.onProgress); // 2
  const semantics = o.relaxedSimd === 'off' ? [] : await runSemanticProbes(probes); // 2b
  const choose = () => chooseLanes(signed.manifest, probes, { denyLanes: o.denyLanes, relaxedSimd: o.relaxedSimd, failed: o.retryFailedLanes ? {} : laneFailureRecord() }); // 3
  const lanes = choose();
  const store = await openStore(o);
  const model = await modelSpec(o, store); // bytes: hashed now; url: size bound, whether cached
  /** @type {Map<string, import('./session.js').CompiledModule>} the modules read, checked and compiled: a restart reuses them */
  const modules = new Map();
  const run = { o, signed, probes, semantics, store, modules };
  const head = modelHead(o, store, model);
  try {
    return await loadOn(run, lanes, model, head);
  } catch (e) {
    if (!(await cachedCopyPoisoned(store, model, head, e))) throw e;
  }
  // the cached copy was poisoned (and is dropped): every decision taken on it is taken again
  stats.cacheRestarts++;
  const fromNetwork = { ...model, cached: false };
  return loadOn(run, choose(), fromNetwork, modelHead(o, store, fromNetwork));
}

/**
 * 8's first half is read once, by whichever lane asks first: the threads lane plans its memory
 * from it before that memory exists; the budget is every lane's (no wasm32 lane addresses more).
 * @param {import('./loader.js').ResolvedOptions} o
 * @param {import('./fetch.js').Store | null} store
 * @param {import('./session.js').ModelSpec} model
 */
function modelHead(o, store, model) {
  return new ModelHead(o, store, model, Math.min(o.memoryBudget ?? DEFAULT_MEMORY_BUDGET, WASM32_BUDGET));
}

/**
 * Steps 4-9 from the lanes chosen (`lanes`): the first lane that starts and passes its self-test
 * loads `model` (read through `head`) and is activated; every runtime started and not returned
 * is closed, what is left of the model's source cancelled.
 * @param {{ o: import('./loader.js').ResolvedOptions, signed: Awaited<ReturnType<typeof verifySignedManifest>>, probes: Awaited<ReturnType<typeof runProbes>>, semantics: Awaited<ReturnType<typeof runSemanticProbes>>, store: import('./fetch.js').Store | null, modules: Map<string, import('./session.js').CompiledModule> }} run
 * @param {ReturnType<typeof chooseLanes>} lanes
 * @param {import('./session.js').ModelSpec} model
 * @param {ModelHead} head
 * @returns {Promise<Loaded>}
 */
async function loadOn({ o, signed, probes, semantics, store, modules }, { candidates, attempts }, model, head) {
  try {
    const fetched = [];
    let started = null;
    let artifact = null;
    for (const candidate of candidates) {
      try {
        started = await startLane(o, candidate, signed, store, head, modules); // 4-6 (threads: 8's admission)
        artifact = candidate;
        break;
      } catch (e) {
        if (!(e instanceof LaneFailure)) throw e; // integrity and contract errors are fatal
        attempts.push({ artifact_id: candidate.id, outcome: 'failed', step: e.step, error_code: e.code, detail: e.message }); // 7
      }
    }
    if (started === null) {
      throw new LoaderError('NoLaneLeft', `no lane could run: ${attempts.map((a) => `${a.artifact_id} ${a.outcome} at ${a.step} (${a.error_code}: ${a.detail})`).join('; ')}`, { attempts });
    }
    attempts.push({ artifact_id: artifact.id, outcome: 'selected', step: 'self-test', detail: '' });
    fetched.push(started.fetched);
    const { rt, test, memoryMode, lane } = started;
    try {
      const fixed = memoryMode === 'wasm32-shared-fixed';
      await phaseMemory(rt); // the load's own high-water mark starts here (lm.loadMemory)
      const { facts, plan, context } = started.admitted ?? (await admit(o, rt, head, 0)); // 8
      const handle = await loadAdmitted(o, rt, store, head);
      const loadMemory = await phaseMemory(rt);
      fetched.push(model.record);
      const loaded = await Loaded.activate(rt, handle, context, o, lane, plan.budget);
      const counters = await readCounters(rt);
      const observed = {
        workers_requested: fixed ? o.workers : 0,
        workers_started: fixed ? rt.workers : 0,
        memory_mode: memoryMode,
        memory_bytes: rt.memory.buffer.byteLength,
      };
      loaded.receipt = await buildReceipt({ signed, artifact, probes, lane, observed, test, counters, attempts, model: facts, fetched, semantics }); // 9
      loaded.plan = plan;
      loaded.loadMemory = loadMemory;
      loaded.artifactId = artifact.id; // a worker failure records this lane (the next load skips it)
      loaded.identity = await cacheIdentity({ modelSha256: model.sha256, tier: facts.tier, lane: artifact.id }); // KV reuse (CONTRACT.md §11)
      return loaded;
    } catch (e) {
      await closeRuntime(rt);
      throw e;
    }
  } finally {
    head.cancel(); // a refusal, a failure: what is left of the model's source is stopped
  }
}

export {
  LoaderError, HostError, loaderStats, laneFailureRecord, forgetLaneFailures, Loaded, DEFAULT_MEMORY_BUDGET, SUPPORTED, MANIFEST_PAYLOAD_TYPE, RECEIPT_SCHEMA,
  MANIFEST_CAP, SIGNATURE_CAP, CACHE_NAME, pae, verifySignedManifest, checkVersionFloor, compareVersions, trustRootId,
  runProbes, runSemanticProbes, chooseLanes, startLane, selfTest, threadsPreconditions, buildReceipt, cacheIdentity, identityMismatch, reusablePrefix, IDENTITY_FIELDS,
};
