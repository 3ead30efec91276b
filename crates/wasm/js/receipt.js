// TinyRustLM loader, the receipt room: tinyrustlm.capability-receipt.v2 from observations only.
import { isNode, sha256Hex } from './host.js';
import { KERNEL_SETS, KERNEL_SETS_INT8, CATEGORIES } from './constants.js';

export const RECEIPT_SCHEMA = 'tinyrustlm.capability-receipt.v2';
/** @typedef {import('./loader.js').Receipt} Receipt */
/**
 * What a load observed, for its receipt: the signed manifest, the lane's artifact, probe and
 * self-test results, `tr_lane`, the path counters, lane attempts, the model's facts, downloads,
 * and what the semantic probes showed.
 * @typedef {{ signed: { manifest: import('./trust.js').Manifest, sha256: string }, artifact: import('./trust.js').Artifact, probes: import('./choice.js').ProbeResults, lane: number, observed: Pick<Receipt['observed'], 'workers_requested' | 'workers_started' | 'memory_mode' | 'memory_bytes'>, test: import('./session.js').SelfTest, counters: import('./loader.js').PathCounters, attempts: import('./loader.js').LaneAttempt[], model: ReturnType<typeof import('./abi.js').modelFacts>, fetched?: import('./loader.js').FetchRecord[], semantics?: import('./choice.js').RelaxedSemantics[] }} ReceiptParts
 */

/**
 * Per model tier (SUPPORTED.modelTiers): the receipt's numerical mode (CONTRACT.md §10) and kernel set per lane.
 * @type {Readonly<Record<string, Readonly<{ numericalMode: string, kernelSets: readonly string[] }>>>}
 */
export const TIER_SELECTION = Object.freeze({
  f32: Object.freeze({ numericalMode: 'strict-f32-v1', kernelSets: KERNEL_SETS }),
  int8: Object.freeze({ numericalMode: 'int8-exact-v1', kernelSets: KERNEL_SETS_INT8 }),
});
const utf8 = new TextEncoder();

/** Coarse, already-exposed values only (no high-entropy hints, no core counts). */
function hostReported() {
  if (isNode) return { browser_brand: 'node', browser_version: process.versions.node.split('.')[0], os_family: process.platform, architecture: 'unknown' };
  // User-Agent Client Hints: not in the lint's DOM types yet
  const navigator = /** @type {{ userAgent?: string, userAgentData?: { brands?: { brand: string, version: string }[], platform?: string } } | undefined} */ (globalThis.navigator);
  const ua = navigator && navigator.userAgentData;
  const brand = ua && ua.brands ? ua.brands.find((b) => !/not.?a.?brand/i.test(b.brand)) : null;
  // Engines without userAgentData (Firefox, Safari/WebKit): brand and major version from the
  // user-agent string they already send (conformance rows are checked against the brand).
  const text = (navigator && navigator.userAgent) || '';
  const firefox = /Firefox\/(\d+)/.exec(text);
  const safari = /Version\/(\d+)[^ ]* .*Safari\//.exec(text) ? /Version\/(\d+)/.exec(text) : null;
  const fallback = firefox ? ['Firefox', firefox[1]] : safari ? ['Safari', safari[1]] : null;
  return {
    browser_brand: brand ? brand.brand : fallback ? fallback[0] : 'unknown',
    browser_version: brand ? brand.version : fallback ? fallback[1] : 'unknown',
    os_family: ua && ua.platform ? ua.platform : 'unknown',
    architecture: 'unknown',
  };
}

/**
 * The receipt of a load: observations only (README, "The loader"; types: loader.d.ts `Receipt`).
 * @param {ReceiptParts} parts
 * @returns {Promise<Receipt>}
 */
export async function buildReceipt({ signed, artifact, probes, lane, observed, test, counters, attempts, model, fetched = [], semantics = [] }) {
  /** @type {Receipt['observed']['feature_probes']} */
  const probesOut = {};
  for (const [id, p] of Object.entries(probes)) probesOut[id] = { validates: p.validates, probe_sha256: p.sha256 };
  /** @type {Record<string, string>} */
  const selfTestOut = { vector_set_sha256: await sha256Hex(utf8.encode(test.testIds.join('\n'))) };
  for (const c of CATEGORIES) selfTestOut[c] = test.categories[c] || 'not-run';
  if (test.failedTest) selfTestOut.failed_test = test.failedTest;
  const compiler = signed.manifest.compiler || {};
  const tier = TIER_SELECTION[model.tier || 'f32'];
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
    selection: { numerical_mode: tier.numericalMode, kernel_set: tier.kernelSets[lane], quant_layouts: model.layouts, kv_format: 'f32' },
    self_test: /** @type {Receipt['self_test']} */ (selfTestOut), // every category filled in above
    executed_path_evidence: { scalar_kernel_calls: counters.scalar, simd_kernel_calls: counters.simd, worker_ids_participating: counters.participating },
    attempts,
    fetched,
    relaxed_simd: relaxedSimd(artifact, counters, semantics),
  };
}

/**
 * The relaxed instructions the module admits (its signed manifest entry's list), those the lane
 * executed (the calls of kernels that run them, tr_path_counters' relaxed counter: the lanes
 * execute one relaxed instruction, so its count is that one's), and the semantic probes' findings.
 * @param {import('./trust.js').Artifact} artifact
 * @param {import('./loader.js').PathCounters} counters
 * @param {import('./choice.js').RelaxedSemantics[]} semantics
 * @returns {Receipt['relaxed_simd']}
 */
function relaxedSimd(artifact, counters, semantics) {
  const admitted = Object.keys(artifact.relaxed_instructions || {}).sort();
  /** @type {Record<string, number>} */
  const executed = {};
  if (counters.relaxed > 0) for (const name of admitted) executed[name] = counters.relaxed;
  return { admitted, executed, observed_semantics: semantics };
}
