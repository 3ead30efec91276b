// TinyRustLM loader: verify, probe, choose, self-test, fall back, and account for what ran.
// ES module, no dependencies beyond its siblings; the same file runs in browsers and node >= 20.
//
//   import { load } from './js/loader.js';
//   const lm = await load({ trustedKeys, model: { url: 'small.trlm', sha256 } });
//   await lm.prefill('Once upon a time');
//   for await (const t of lm.decode({ maxTokens: 32 })) out.textContent += t.text;
//
// The sequence (runtime-architecture.md, "The loader should perform this sequence"), one named
// function per step, every failure a LoaderError with a stable `code`:
//   1 verifySignedManifest  DSSE Ed25519 over PAE(payloadType, payload) with WebCrypto against
//                           the integrator's trusted keys; payload == manifest.json byte for byte
//   2 runProbes             tiny feature modules, each hash-checked, then WebAssembly.validate
//   3 chooseLanes           best lane first: isolation + probes, minus denied/disabled lanes
//   8a fetchModel           stream-hashed while it downloads, before any module runs
//   4 startLane             module SHA-256 before compile, ABI exports, bounded memory
//   5 threadsPreconditions  the spec's seven, in order (threads lane only)
//   6 selfTest              per-category result and the failing test id
//   7 (load)                a failure in 4-6 is recorded and the next lane is tried
//   8b admitModel           tr_preflight_header before the model is copied in, then load
//   9 buildReceipt          tinyrustlm.capability-receipt.v1 from observations only
//  10 Loaded               prefill, streaming decode, cancel, close
import { instantiate, isNode, memoryImport, sha256Hex, HostError, TR_CANCELLED } from './host.js';
import { PROBES } from './probes.js';
import { Sha256 } from './sha256.js';
import { encodePrompt, writeSessionConfig, EOS } from './abi.js';

/** What this loader understands of a manifest. */
export const SUPPORTED = Object.freeze({
  schema: 'tinyrustlm.module-manifest.v1',
  runtimeSemantics: Object.freeze([1]),
  abiVersions: Object.freeze([1]),
  // model format_version -> kernel tier (crates/core/CONTRACT.md §1, §10); any other is refused
  modelTiers: Object.freeze({ 1: 'f32', 2: 'int8' }),
});
export const MANIFEST_PAYLOAD_TYPE = 'application/vnd.tinyrustlm.module-manifest.v1+json';
export const RECEIPT_SCHEMA = 'tinyrustlm.capability-receipt.v1';
const TRUSTED_KEYS_SCHEMA = 'tinyrustlm.trusted-keys.v1';
const SIGSTORE_MEDIA_TYPE = 'application/vnd.dev.sigstore.bundle.v0.3+json';

/** Manifest feature name -> the probe that must validate for it (null: part of Wasm 1.0). */
const FEATURE_PROBES = Object.freeze({
  'mutable-globals': null,
  simd128: 'simd128',
  atomics: 'threads',
  'bulk-memory': 'bulk-memory',
  'relaxed-simd': 'relaxed-simd',
  memory64: 'memory64',
  'exception-handling': 'exceptions',
});
/** `tr_lane()` -> kernel set (crates/core/src/kernels/mod.rs KERNEL_SET). */
const KERNEL_SETS = Object.freeze(['scalar-v1', 'simd128-v1', 'simd128-threads-v1']);
/** Per model tier (SUPPORTED.modelTiers): the receipt's numerical mode and kernel set per lane. */
const TIER_SELECTION = Object.freeze({
  f32: { numericalMode: 'strict-f32-v1', kernelSets: KERNEL_SETS },
  int8: { numericalMode: 'int8-exact-v1', kernelSets: Object.freeze(['scalar-int8-v1', 'simd128-int8-v1', 'simd128-threads-int8-v1']) },
});
/** Self-test category ids of `tr_self_test_detail` (crates/core/src/selftest/categories.rs). */
const CATEGORIES = Object.freeze(['scalar', 'simd128', 'atomics', 'thread_participation', 'tokenizer', 'prng']);
/** Model format v1 layout ids (CONTRACT.md §1) -> receipt names. */
const LAYOUTS = Object.freeze(['f32', 'q8-block-v1', 'q4-block-v1']);
/** Exports every lane must have for this loader (ABI 1 plus the loader exports, CONTRACT.md §9). */
const REQUIRED_EXPORTS = Object.freeze([
  'memory', 'tr_abi_version', 'tr_runtime_semantics', 'tr_lane', 'tr_alloc', 'tr_free',
  'tr_model_load', 'tr_model_prefix_bytes', 'tr_preflight_header', 'tr_session_new',
  'tr_prefill', 'tr_decode', 'tr_session_free', 'tr_model_free', 'tr_self_test_detail',
  'tr_self_test_detail_bytes', 'tr_path_counters',
]);
const THREADS_EXPORTS = Object.freeze(['tr_atomics_self_test', 'tr_worker_counters', 'tr_pool_start']);
/** Memory bound of a lane whose module owns its memory (scalar, simd128), unless overridden. */
export const DEFAULT_MEMORY_BUDGET = 1 << 30;
const PAGE = 65536;

/** A refusal or failure; `code` is stable (README, "The loader"), `detail` names the evidence. */
export class LoaderError extends Error {
  constructor(code, message, detail = {}) {
    super(`${code}: ${message}`);
    this.name = 'LoaderError';
    this.code = code;
    this.detail = detail;
  }
}

// What this module has done so far (tests assert that a refusal instantiated nothing).
const stats = { instantiations: 0, live: 0, modelLoads: 0 };
/** A copy of the loader's counters: module instantiations started, runtimes alive, models loaded. */
export function loaderStats() {
  return { ...stats };
}

const hex = (buf) => Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, '0')).join('');
const utf8 = new TextEncoder();

function base64Bytes(text, where) {
  if (typeof text !== 'string') throw new LoaderError('MalformedSignature', `${where} is not a base64 string`);
  let binary;
  try {
    binary = atob(text);
  } catch {
    throw new LoaderError('MalformedSignature', `${where} is not valid base64`);
  }
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

function sameBytes(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

async function fetchBytes(o, url, what) {
  let response;
  try {
    response = await o.fetch(url);
  } catch (e) {
    throw new LoaderError('FetchFailed', `${what} ${url}: ${e.message || e}`, { url: String(url) });
  }
  if (!response.ok) throw new LoaderError('FetchFailed', `${what} ${url}: HTTP ${response.status}`, { url: String(url), status: response.status });
  return new Uint8Array(await response.arrayBuffer());
}

// ---- 1. the signed manifest ---------------------------------------------------------------

/** DSSE v1 pre-authentication encoding: the exact bytes that were signed. */
export function pae(payloadType, payload) {
  const type = utf8.encode(payloadType);
  const head = utf8.encode(`DSSEv1 ${type.length} `);
  const mid = utf8.encode(` ${payload.length} `);
  const out = new Uint8Array(head.length + type.length + mid.length + payload.length);
  out.set(head, 0);
  out.set(type, head.length);
  out.set(mid, head.length + type.length);
  out.set(payload, head.length + type.length + mid.length);
  return out;
}

function pemToDer(pem, where) {
  const m = /-----BEGIN PUBLIC KEY-----([A-Za-z0-9+/=\s]+)-----END PUBLIC KEY-----/.exec(pem || '');
  if (!m) throw new LoaderError('TrustedKeysInvalid', `${where}: public_key_pem is not a PEM public key`);
  return base64Bytes(m[1].replace(/\s+/g, ''), where);
}

/** keyid -> { key (CryptoKey), role, notAfter (epoch s) }; a keyid must be SHA-256(SPKI DER). */
async function importTrustedKeys(doc) {
  if (!doc || doc.schema !== TRUSTED_KEYS_SCHEMA || !Array.isArray(doc.keys) || doc.keys.length === 0) {
    throw new LoaderError('TrustedKeysInvalid', `trusted keys must be a ${TRUSTED_KEYS_SCHEMA} document with at least one key`);
  }
  const keys = new Map();
  for (const [i, entry] of doc.keys.entries()) {
    const where = `trustedKeys.keys[${i}]`;
    const der = pemToDer(entry.public_key_pem, where);
    if ((await sha256Hex(der)) !== entry.keyid) throw new LoaderError('TrustedKeysInvalid', `${where}.keyid is not the SHA-256 of the key's SPKI DER`);
    if (entry.role !== 'release' && entry.role !== 'development') throw new LoaderError('TrustedKeysInvalid', `${where}.role must be release or development`);
    const notAfter = Date.parse(entry.not_after) / 1000;
    if (!Number.isFinite(notAfter)) throw new LoaderError('TrustedKeysInvalid', `${where}.not_after is not a date`);
    let key;
    try {
      key = await globalThis.crypto.subtle.importKey('spki', der, { name: 'Ed25519' }, false, ['verify']);
    } catch (e) {
      // An engine without Ed25519 in WebCrypto cannot check a signature at all: say so.
      if (e && e.name === 'NotSupportedError') throw new LoaderError('CryptoUnsupported', `this engine's WebCrypto has no Ed25519 (${e.message || e})`);
      throw new LoaderError('TrustedKeysInvalid', `${where}: not an Ed25519 public key (${e.message || e})`);
    }
    keys.set(entry.keyid, { key, role: entry.role, notAfter });
  }
  return keys;
}

function parseSigstoreBundle(bytes) {
  let doc;
  try {
    doc = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (e) {
    throw new LoaderError('MalformedSignature', `manifest.sigstore.json is not JSON (${e.message})`);
  }
  const env = doc && doc.dsseEnvelope;
  const hint = doc && doc.verificationMaterial && doc.verificationMaterial.publicKey && doc.verificationMaterial.publicKey.hint;
  if (!doc || doc.mediaType !== SIGSTORE_MEDIA_TYPE || !env || typeof hint !== 'string') {
    throw new LoaderError('MalformedSignature', `manifest.sigstore.json is not a ${SIGSTORE_MEDIA_TYPE} DSSE bundle with a key hint`);
  }
  if (typeof env.payloadType !== 'string' || !Array.isArray(env.signatures) || env.signatures.length !== 1) {
    throw new LoaderError('MalformedSignature', 'the DSSE envelope must carry a payloadType and exactly one signature');
  }
  const sig = env.signatures[0];
  if (typeof sig.keyid !== 'string') throw new LoaderError('MalformedSignature', 'dsseEnvelope.signatures[0].keyid must be a string');
  return {
    hint,
    payloadType: env.payloadType,
    payload: base64Bytes(env.payload, 'dsseEnvelope.payload'),
    keyid: sig.keyid,
    sig: base64Bytes(sig.sig, 'dsseEnvelope.signatures[0].sig'),
  };
}

/**
 * Step 1. Returns { manifest, bytes, sha256, keyid, keyClass }. Order of refusals: the bundle's
 * shape, payload type, trusted key, key validity, development key, signature, payload equals
 * manifest.json, schema/semantics/ABI, key class, expiry.
 */
export async function verifySignedManifest(o) {
  const [manifestBytes, signatureBytes] = await Promise.all([
    fetchBytes(o, new URL('manifest.json', o.baseUrl), 'manifest'),
    fetchBytes(o, new URL('manifest.sigstore.json', o.baseUrl), 'manifest signature'),
  ]);
  const trusted = await importTrustedKeys(o.trustedKeys);
  const signed = parseSigstoreBundle(signatureBytes);
  if (signed.payloadType !== MANIFEST_PAYLOAD_TYPE) {
    throw new LoaderError('WrongPayloadType', `the signed payload is ${JSON.stringify(signed.payloadType)}, not ${MANIFEST_PAYLOAD_TYPE} (swapped signature files?)`);
  }
  const key = trusted.get(signed.keyid);
  if (key === undefined) throw new LoaderError('UntrustedKey', `signed by key ${signed.keyid.slice(0, 16)}…, which is not in the trusted keys`, { keyid: signed.keyid });
  if (signed.hint !== signed.keyid) throw new LoaderError('KeyHintMismatch', `publicKey.hint ${signed.hint.slice(0, 16)}… is not the signing key`);
  if (o.now >= key.notAfter) throw new LoaderError('KeyExpired', `trusted key ${signed.keyid.slice(0, 16)}… expired`, { keyid: signed.keyid });
  if (key.role === 'development' && !o.allowDevKey) {
    throw new LoaderError('DevelopmentKey', 'the manifest is signed by a development key (pass allowDevKey: true to accept it)', { keyid: signed.keyid });
  }
  const ok = await globalThis.crypto.subtle.verify({ name: 'Ed25519' }, key.key, signed.sig, pae(signed.payloadType, signed.payload));
  if (!ok) throw new LoaderError('SignatureInvalid', 'the Ed25519 signature does not verify over PAE(payloadType, payload)');
  if (!sameBytes(signed.payload, manifestBytes)) {
    throw new LoaderError('PayloadMismatch', 'manifest.json is not byte-identical to the signed payload');
  }
  let manifest;
  try {
    manifest = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(signed.payload));
  } catch (e) {
    throw new LoaderError('BadManifest', `the signed manifest is not JSON (${e.message})`);
  }
  if (manifest.schema !== SUPPORTED.schema) throw new LoaderError('UnsupportedAbi', `manifest schema ${JSON.stringify(manifest.schema)} is not ${SUPPORTED.schema}`);
  if (!SUPPORTED.runtimeSemantics.includes(manifest.runtime_semantics) || !SUPPORTED.abiVersions.includes(manifest.abi_version)) {
    throw new LoaderError('UnsupportedAbi', `runtime_semantics ${manifest.runtime_semantics} / abi_version ${manifest.abi_version} are not supported by this loader (${SUPPORTED.runtimeSemantics} / ${SUPPORTED.abiVersions})`);
  }
  if (manifest.key_class !== key.role) throw new LoaderError('KeyClassMismatch', `manifest key_class ${manifest.key_class} but the key's role is ${key.role}`);
  if (!(typeof manifest.expires_epoch === 'number') || o.now >= manifest.expires_epoch) {
    throw new LoaderError('ManifestExpired', `the manifest expired at ${new Date(manifest.expires_epoch * 1000).toISOString()}`, { expires_epoch: manifest.expires_epoch });
  }
  if (!Array.isArray(manifest.artifacts)) throw new LoaderError('BadManifest', 'the manifest lists no wasm artifacts');
  return { manifest, bytes: manifestBytes, sha256: await sha256Hex(manifestBytes), keyid: signed.keyid, keyClass: key.role };
}

// ---- 2. probes ------------------------------------------------------------------------------

/** Step 2: { id: { version, sha256, validates } } for every embedded probe. */
export async function runProbes(probes = PROBES) {
  const out = {};
  for (const p of probes) {
    const bytes = Uint8Array.from(p.bytes);
    const sha256 = await sha256Hex(bytes);
    if (sha256 !== p.sha256) {
      // a changed probe would silently change the classification: refuse instead
      throw new LoaderError('ProbeTampered', `probe ${p.id} v${p.version} hashes to ${sha256.slice(0, 16)}…, not its recorded ${p.sha256.slice(0, 16)}…`);
    }
    out[p.id] = { version: p.version, sha256, validates: WebAssembly.validate(bytes) };
  }
  return out;
}

// ---- 3. lane choice ---------------------------------------------------------------------------

/** Cross-origin isolation as the page sees it; node has no cross-origin boundary. */
function isolated() {
  return isNode || globalThis.crossOriginIsolated === true;
}

/**
 * Step 3: { candidates: [artifact...] best first, attempts: [skipped...] }. A lane is a
 * candidate when every required feature's probe validates, it is not denied by the integrator
 * or disabled by the signed manifest, and it has isolation if it requires it. "Best" = needs
 * the most features.
 */
export function chooseLanes(manifest, probes, { denyLanes = [], isolation = isolated() } = {}) {
  const disabled = manifest.disabled_lanes || [];
  const ranked = [...manifest.artifacts].sort((a, b) => b.required_features.length - a.required_features.length);
  const candidates = [];
  const attempts = [];
  const skip = (a, code, detail) => attempts.push({ artifact_id: a.id, outcome: 'skipped', step: 'choice', error_code: code, detail });
  for (const a of ranked) {
    const missing = a.required_features.filter((f) => !(f in FEATURE_PROBES) || (FEATURE_PROBES[f] !== null && !(probes[FEATURE_PROBES[f]] || {}).validates));
    if (disabled.includes(a.id)) skip(a, 'LaneDisabled', 'disabled by the signed manifest (disabled_lanes)');
    else if (denyLanes.includes(a.id)) skip(a, 'LaneDenied', 'denied by the integrator (denyLanes)');
    else if (missing.length > 0) skip(a, 'FeatureMissing', `probe(s) for ${missing.join(', ')} do not validate`);
    else if (a.requires_cross_origin_isolation && !isolation) skip(a, 'NotIsolated', 'the context is not cross-origin isolated');
    else candidates.push(a);
  }
  return { candidates, attempts };
}

// ---- 8a. the model, stream-hashed -------------------------------------------------------------

/** Fetches (or takes) the model and checks its SHA-256 while the bytes arrive. */
export async function fetchModel(o) {
  const spec = o.model;
  if (!spec || typeof spec.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(spec.sha256)) {
    throw new LoaderError('BadOptions', 'model.sha256 (64 lowercase hex digits) is required');
  }
  const hash = new Sha256();
  let bytes;
  if (spec.bytes) {
    bytes = spec.bytes instanceof Uint8Array ? spec.bytes : new Uint8Array(spec.bytes);
    hash.update(bytes);
  } else {
    const url = new URL(spec.url, o.pageUrl);
    let response;
    try {
      response = await o.fetch(url);
    } catch (e) {
      throw new LoaderError('FetchFailed', `model ${url}: ${e.message || e}`);
    }
    if (!response.ok) throw new LoaderError('FetchFailed', `model ${url}: HTTP ${response.status}`, { status: response.status });
    const chunks = [];
    let total = 0;
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      hash.update(value);
      chunks.push(value);
      total += value.length;
    }
    bytes = new Uint8Array(total);
    let at = 0;
    for (const c of chunks) {
      bytes.set(c, at);
      at += c.length;
    }
  }
  const sha256 = hash.hex();
  if (sha256 !== spec.sha256) throw new LoaderError('HashMismatch', `model SHA-256 ${sha256.slice(0, 16)}… is not the expected ${spec.sha256.slice(0, 16)}…`, { sha256 });
  return { bytes, sha256 };
}

// ---- 4-6. one lane ------------------------------------------------------------------------------

/** A failure that makes the loader try the next lane (steps 4-6 after the integrity checks). */
class LaneFailure extends Error {
  constructor(step, code, message) {
    super(message);
    this.step = step;
    this.code = code;
  }
}

function withTimeout(promise, ms, onTimeout) {
  let timer;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(onTimeout()), ms);
    }),
  ]);
}

/** Reads one little-endian record out of the runtime through a transfer window. */
async function withWindow(rt, len, fn) {
  const ptr = await rt.call('tr_alloc', len);
  if (ptr === 0) throw new LoaderError('RuntimeError', `tr_alloc(${len}) failed`);
  try {
    return await fn(ptr);
  } finally {
    await rt.call('tr_free', ptr, len);
  }
}

const dataView = (rt, ptr, len) => new DataView(rt.memory.buffer, ptr, len);

async function readCounters(rt) {
  return withWindow(rt, 24, async (ptr) => {
    const code = await rt.call('tr_path_counters', ptr);
    if (code !== 0) throw new LoaderError('RuntimeError', `tr_path_counters returned ${code}`);
    const v = dataView(rt, ptr, 24);
    const mask = v.getUint32(20, true);
    const ids = [];
    for (let id = 0; id < 32; id++) if (mask & (1 << id)) ids.push(id);
    return { scalar: Number(v.getBigUint64(0, true)), simd: Number(v.getBigUint64(8, true)), workers: v.getUint32(16, true), participating: ids };
  });
}

async function readWorkerCounters(rt) {
  return withWindow(rt, 16, async (ptr) => {
    const code = await rt.call('tr_worker_counters', ptr);
    if (code !== 0) throw new LoaderError('RuntimeError', `tr_worker_counters returned ${code}`);
    const v = dataView(rt, ptr, 16);
    return { workers: v.getUint32(0, true), participated: v.getUint32(4, true), barriers: v.getUint32(8, true), state: v.getUint32(12, true) };
  });
}

/** Step 6: { overall, categories: {name: pass|fail}, failedTest, testIds } from tr_self_test_detail. */
export async function selfTest(rt, timeoutMs) {
  const len = await rt.call('tr_self_test_detail_bytes');
  const run = withWindow(rt, len, async (ptr) => {
    const code = await rt.call('tr_self_test_detail', ptr, len);
    if (code !== 0) throw new LaneFailure('self-test', 'SelfTestFailed', `tr_self_test_detail returned ${code}`);
    const v = dataView(rt, ptr, len);
    const overall = v.getUint32(0, true);
    const n = v.getUint32(4, true);
    const categories = {};
    const testIds = [];
    let failedTest = null;
    for (let i = 0; i < n; i++) {
      const at = 8 + 32 * i;
      const category = CATEGORIES[v.getUint32(at, true)];
      const result = v.getInt32(at + 4, true);
      const raw = new Uint8Array(rt.memory.buffer, ptr + at + 8, 24).slice();
      const name = new TextDecoder().decode(raw.subarray(0, raw.indexOf(0) < 0 ? 24 : raw.indexOf(0)));
      if (category === undefined) throw new LaneFailure('self-test', 'SelfTestFailed', `self-test ${name} has an unknown category`);
      testIds.push(name); // the vector set, whatever category a lane files it under
      if (result !== 0 && failedTest === null) failedTest = name;
      categories[category] = result !== 0 || categories[category] === 'fail' ? 'fail' : 'pass';
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
    const barriersBefore = (await readWorkerCounters(rt)).barriers;
    const test = await selfTest(rt, o.selfTestMs).catch((e) => {
      throw e instanceof LaneFailure && e.code === 'SelfTestTimeout' ? fail(6, 'the barrier self-test did not finish in time') : e;
    });
    const pool = await readWorkerCounters(rt);
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

async function closeRuntime(rt) {
  if (!rt || rt.closed) return;
  rt.closed = true;
  stats.live--;
  await rt.close();
}

/** Steps 4-6 for one artifact: { rt, test, memoryMode } or a LaneFailure / fatal LoaderError. */
export async function startLane(o, artifact, signed) {
  // 4. the module: SHA-256 before compilation, always
  const bytes = await fetchBytes(o, new URL(artifact.url, o.baseUrl), `module ${artifact.id}`);
  const sha256 = await sha256Hex(bytes);
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
    return { rt, test, memoryMode, lane, sha256 };
  } catch (e) {
    await closeRuntime(rt);
    throw e;
  }
}

// ---- 8b. admission, load, activation -----------------------------------------------------------

/** Preflight from the header and directory, before the model is copied into the runtime. */
export async function admitModel(rt, model, context, budget) {
  const header = model.bytes.subarray(0, Math.min(64, model.bytes.length));
  // the kernel tier first: an unknown one is refused before anything enters the runtime
  if (header.length >= 12) {
    const version = new DataView(header.buffer, header.byteOffset, header.byteLength).getUint32(8, true);
    if (!Object.hasOwn(SUPPORTED.modelTiers, version)) {
      throw new LoaderError('UnsupportedModelTier', `model format_version ${version} declares a kernel tier this loader does not know (known: ${Object.entries(SUPPORTED.modelTiers).map(([v, t]) => `${v} = ${t}`).join(', ')})`, { formatVersion: version });
    }
  }
  const prefixLen = await withWindow(rt, Math.max(header.length, 1), async (ptr) => {
    rt.bytes(ptr, header.length).set(header);
    return rt.call('tr_model_prefix_bytes', ptr, header.length);
  });
  if (prefixLen === 0 || prefixLen > model.bytes.length) throw new LoaderError('ModelInvalid', 'the model header is truncated or malformed');
  const prefix = model.bytes.subarray(0, prefixLen);
  return withWindow(rt, prefixLen + 16, async (ptr) => {
    rt.bytes(ptr, prefixLen).set(prefix);
    const code = await rt.call('tr_preflight_header', ptr, prefixLen, BigInt(model.bytes.length), context, BigInt(budget), ptr + prefixLen);
    const v = dataView(rt, ptr + prefixLen, 16);
    const plan = { peakPrefill: Number(v.getBigUint64(0, true)), steadyDecode: Number(v.getBigUint64(8, true)), budget };
    if (code === 9) throw new LoaderError('ModelTooLarge', `model + context ${context} need ${plan.peakPrefill} bytes (prefill) / ${plan.steadyDecode} (decode), over the budget of ${budget}`, plan);
    if (code === 3) throw new LoaderError('UnsupportedModelTier', `this runtime module refuses the model's format/tier (TrResult UnsupportedFeature): it predates the model's kernel tier or flags`, { code });
    if (code !== 0) throw new LoaderError('ModelInvalid', `tr_preflight_header refused the model (TrResult ${code})`, { code });
    return plan;
  });
}

function modelFacts(bytes) {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const count = v.getUint32(52, true);
  const layouts = new Set();
  for (let i = 0; i < count; i++) layouts.add(LAYOUTS[v.getUint32(64 + 32 * i + 4, true)] || 'unknown');
  const tier = SUPPORTED.modelTiers[v.getUint32(8, true)] || 'f32'; // an unknown tier is refused by admitModel
  return { maxContext: v.getUint32(44, true), vocab: v.getUint32(28, true), layouts: [...layouts].filter((l) => l !== 'f32').sort(), tier };
}

// ---- 9. the receipt -----------------------------------------------------------------------------

/** Coarse, already-exposed values only (no high-entropy hints, no core counts). */
function hostReported() {
  if (isNode) return { browser_brand: 'node', browser_version: process.versions.node.split('.')[0], os_family: process.platform, architecture: 'unknown' };
  const ua = globalThis.navigator && globalThis.navigator.userAgentData;
  const brand = ua && ua.brands ? ua.brands.find((b) => !/not.?a.?brand/i.test(b.brand)) : null;
  // Engines without userAgentData (Firefox, Safari/WebKit): brand and major version from the
  // user-agent string they already send (conformance rows are checked against the brand).
  const text = (globalThis.navigator && globalThis.navigator.userAgent) || '';
  const fallback = /Firefox\/(\d+)/.exec(text) ? ['Firefox', /Firefox\/(\d+)/.exec(text)[1]]
    : /Version\/(\d+)[^ ]* .*Safari\//.exec(text) ? ['Safari', /Version\/(\d+)/.exec(text)[1]]
      : null;
  return {
    browser_brand: brand ? brand.brand : fallback ? fallback[0] : 'unknown',
    browser_version: brand ? brand.version : fallback ? fallback[1] : 'unknown',
    os_family: ua && ua.platform ? ua.platform : 'unknown',
    architecture: 'unknown',
  };
}

export async function buildReceipt({ signed, artifact, probes, lane, observed, test, counters, attempts, model }) {
  const probesOut = {};
  for (const [id, p] of Object.entries(probes)) probesOut[id] = { validates: p.validates, probe_sha256: p.sha256 };
  const selfTestOut = { vector_set_sha256: await sha256Hex(utf8.encode(test.testIds.join('\n'))) };
  for (const c of CATEGORIES) selfTestOut[c] = test.categories[c] || 'not-run';
  if (test.failedTest) selfTestOut.failed_test = test.failedTest;
  const compiler = signed.manifest.compiler || {};
  return {
    schema: RECEIPT_SCHEMA,
    created_utc: new Date().toISOString(),
    runtime_semantics: signed.manifest.runtime_semantics,
    abi_version: signed.manifest.abi_version,
    host_reported: hostReported(),
    module: {
      artifact_id: artifact.id,
      sha256: artifact.sha256,
      build_manifest_sha256: signed.sha256,
      rustc: compiler.rustc || 'unknown',
      llvm: compiler.llvm || 'unknown',
      compile_features: [...artifact.required_features],
    },
    observed: { cross_origin_isolated: globalThis.crossOriginIsolated === true || isNode, feature_probes: probesOut, ...observed },
    selection: { numerical_mode: TIER_SELECTION[model.tier || 'f32'].numericalMode, kernel_set: TIER_SELECTION[model.tier || 'f32'].kernelSets[lane], quant_layouts: model.layouts, kv_format: 'f32' },
    self_test: selfTestOut,
    executed_path_evidence: { scalar_kernel_calls: counters.scalar, simd_kernel_calls: counters.simd, worker_ids_participating: counters.participating },
    attempts,
  };
}

// ---- the whole sequence ---------------------------------------------------------------------------

function normalise(opts) {
  const o = {
    baseUrl: new URL('../', import.meta.url),
    allowDevKey: false,
    denyLanes: [],
    workers: 2,
    memoryBudget: null,
    context: 0,
    session: {},
    startupMs: 10000,
    livenessMs: 5000,
    selfTestMs: 20000,
    workerUrl: undefined,
    fetch: (url) => globalThis.fetch(url),
    now: Date.now() / 1000,
    ...opts,
  };
  o.pageUrl = opts.pageUrl || (globalThis.location ? globalThis.location.href : o.baseUrl);
  o.baseUrl = new URL(o.baseUrl, o.pageUrl);
  if (!o.baseUrl.href.endsWith('/')) o.baseUrl = new URL(`${o.baseUrl.href}/`);
  if (typeof o.workerUrl === 'string') o.workerUrl = new URL(o.workerUrl, o.pageUrl);
  if (!(Number.isInteger(o.workers) && o.workers >= 1 && o.workers <= 8)) throw new LoaderError('BadOptions', 'workers must be an integer in 1..8');
  return o;
}

/**
 * Verify, probe, choose, start (with fallback), admit the model and activate a session.
 * Options: trustedKeys (tinyrustlm.trusted-keys.v1 object), model {url|bytes, sha256},
 * baseUrl (bundle root; default: the folder above js/), allowDevKey, denyLanes, workers,
 * memoryBudget (bytes), context (tokens; 0 = the model's maximum), session (sampler config
 * as abi.js newSession), startupMs / selfTestMs (bounds), fetch, now (epoch seconds).
 */
export async function load(opts) {
  const o = normalise(opts);
  const signed = await verifySignedManifest(o); // 1
  const probes = await runProbes(); // 2
  const { candidates, attempts } = chooseLanes(signed.manifest, probes, { denyLanes: o.denyLanes }); // 3
  const model = await fetchModel(o); // 8a: a wrong model never reaches a runtime
  let started = null;
  let artifact = null;
  for (const candidate of candidates) {
    try {
      started = await startLane(o, candidate, signed); // 4-6
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
  const { rt, test, memoryMode, lane } = started;
  try {
    const facts = modelFacts(model.bytes);
    const context = o.context || facts.maxContext;
    const fixed = memoryMode === 'wasm32-shared-fixed';
    const budget = o.memoryBudget ?? (fixed ? rt.memory.buffer.byteLength : DEFAULT_MEMORY_BUDGET);
    const plan = await admitModel(rt, model, context, budget); // 8b, before any model byte is copied in
    const loaded = await Loaded.activate(rt, model, facts, context, o, lane, budget);
    const counters = await readCounters(rt);
    const observed = {
      workers_requested: fixed ? o.workers : 0,
      workers_started: fixed ? rt.workers : 0,
      memory_mode: memoryMode,
      memory_bytes: rt.memory.buffer.byteLength,
    };
    loaded.receipt = await buildReceipt({ signed, artifact, probes, lane, observed, test, counters, attempts, model: facts });
    loaded.plan = plan;
    return loaded;
  } catch (e) {
    await closeRuntime(rt);
    throw e;
  }
}

// ---- 10. use --------------------------------------------------------------------------------------

/** A runtime with one model and one session, memory fixed since activation. */
export class Loaded {
  static async activate(rt, model, facts, context, o, lane, budget) {
    const self = new Loaded();
    self.rt = rt;
    self.lane = KERNEL_SETS[lane];
    self.threads = rt.workers > 0;
    self.context = context;
    self.cancelEpoch = 0;
    self.prefillChunk = o.prefillChunk || (self.threads ? 1 : 16);
    self.decoder = new TextDecoder('utf-8');
    // load: copy in, validate (tr_model_load), then one session
    self.model = await withWindow(rt, model.bytes.length + 8, async (ptr) => {
      rt.bytes(ptr, model.bytes.length).set(model.bytes);
      stats.modelLoads++;
      const code = await rt.call('tr_model_load', ptr, model.bytes.length, ptr + model.bytes.length);
      if (code !== 0) throw new LoaderError('ModelInvalid', `tr_model_load refused the model (TrResult ${code})`, { code });
      return dataView(rt, ptr + model.bytes.length, 8).getBigUint64(0, true);
    });
    self.session = await withWindow(rt, 48, async (ptr) => {
      const v = dataView(rt, ptr, 48);
      writeSessionConfig(v, { ...o.session, context });
      const code = await rt.call('tr_session_new', self.model, ptr, 40, ptr + 40);
      if (code !== 0) throw new LoaderError('RuntimeError', `tr_session_new returned ${code}`, { code });
      return v.getBigUint64(40, true);
    });
    // The windows every later call uses, allocated now so nothing allocates after activation.
    self.tokenWindow = await rt.call('tr_alloc', 4 * Math.max(self.prefillChunk, 1));
    self.decodeWindow = await rt.call('tr_alloc', 24);
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
      const v = dataView(this.rt, this.tokenWindow, 4 * chunk.length);
      chunk.forEach((t, i) => v.setUint32(4 * i, t, true));
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
      const v = dataView(this.rt, this.decodeWindow, 24);
      const token = v.getUint32(0, true);
      const done = v.getUint32(4, true) !== 0;
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

export { HostError };
