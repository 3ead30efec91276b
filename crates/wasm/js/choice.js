// TinyRustLM loader, the choice room: feature probes (step 2) and lane choice (step 3).
import { isNode, sha256Hex } from './host.js';
import { LoaderError, laneFailureRecord } from './errors.js';
import { PROBES, SEMANTIC_PROBES } from './probes.js';
// Manifest feature name -> the probe that must validate for it (null: the lowest lane's),
// generated from verify's feature table and lane policy.
import { FEATURE_PROBES } from './constants.js';

// ---- 2. probes ------------------------------------------------------------------------------

/** @typedef {import('./trust.js').Artifact} Artifact */
/** @typedef {import('./loader.js').LaneAttempt} LaneAttempt */
/** @typedef {{ readonly id: string, readonly version: number, readonly sha256: string, readonly bytes: readonly number[] }} Probe */
/** @typedef {Record<string, { version: number, sha256: string, validates: boolean }>} ProbeResults */

/**
 * Step 2: { id: { version, sha256, validates } } for every embedded probe.
 * @param {readonly Probe[]} [probes]
 * @param {((progress: import('./loader.js').Progress) => void) | null} [onProgress]
 * @returns {Promise<ProbeResults>}
 */
export async function runProbes(probes = PROBES, onProgress = null) {
  /** @type {ProbeResults} */
  const out = {};
  let done = 0;
  if (onProgress) onProgress({ phase: 'probes', loaded: 0, total: probes.length });
  for (const p of probes) {
    const bytes = await checkedBytes(p);
    out[p.id] = { version: p.version, sha256: p.sha256, validates: WebAssembly.validate(bytes) };
    if (onProgress) onProgress({ phase: 'probes', loaded: ++done, total: probes.length });
  }
  return out;
}

/**
 * A probe's bytes, refused (ProbeTampered) unless they hash to the recorded SHA-256.
 * @param {Probe} p
 */
async function checkedBytes(p) {
  const bytes = Uint8Array.from(p.bytes);
  const sha256 = await sha256Hex(bytes);
  if (sha256 !== p.sha256) {
    // a changed probe would silently change the classification: refuse instead
    throw new LoaderError('ProbeTampered', `probe ${p.id} v${p.version} hashes to ${sha256.slice(0, 16)}…, not its recorded ${p.sha256.slice(0, 16)}…`);
  }
  return bytes;
}

/** @typedef {Probe & { readonly instruction: string, readonly variants: Readonly<Record<string, readonly number[]>> }} SemanticProbe */
/** @typedef {{ instruction: string, probe_id: string, probe_version: number, probe_sha256: string, semantics: string, result: number[] }} RelaxedSemantics */

/**
 * Step 2b: run each semantic probe (hash-checked like the others) where the relaxed-simd probe
 * validates, and name the allowed semantics its out-of-range result matches ('unrecognized'
 * when none does: the receipt says so, the lanes still run, their operands are in range).
 * @param {ProbeResults} probes
 * @param {readonly SemanticProbe[]} [semantic]
 * @returns {Promise<RelaxedSemantics[]>}
 */
export async function runSemanticProbes(probes, semantic = SEMANTIC_PROBES) {
  /** @type {RelaxedSemantics[]} */
  const out = [];
  for (const p of semantic) {
    const bytes = await checkedBytes(p);
    if (!(probes['relaxed-simd'] || {}).validates) continue;
    const { instance } = await WebAssembly.instantiate(bytes);
    const exports = /** @type {{ run: () => void, memory: WebAssembly.Memory }} */ (/** @type {unknown} */ (instance.exports));
    exports.run();
    const result = [...new Int32Array(exports.memory.buffer, 0, 4)];
    const match = Object.entries(p.variants).find(([, lanes]) => lanes.join() === result.join());
    out.push({ instruction: p.instruction, probe_id: p.id, probe_version: p.version, probe_sha256: p.sha256, semantics: match ? match[0] : 'unrecognized', result });
  }
  return out;
}

// ---- 3. lane choice ---------------------------------------------------------------------------

/** Cross-origin isolation as the page sees it; node has no cross-origin boundary. */
export function isolated() {
  return isNode || globalThis.crossOriginIsolated === true;
}

/**
 * The choice order: threads lanes (cross-origin isolated) first, then the rest; within each,
 * relaxed SIMD first, then the lane needing the most features. So with isolation
 * relaxed+threads, threads, relaxed, simd128, scalar; without it the threads lanes are skipped.
 * @param {Artifact} a
 * @returns {[number, number, number]}
 */
function rank(a) {
  return [a.requires_cross_origin_isolation ? 1 : 0, a.required_features.includes(RELAXED) ? 1 : 0, a.required_features.length];
}
const RELAXED = 'relaxed-simd';

/**
 * Step 3: { candidates: [artifact...] best first, attempts: [skipped...] }. A lane is a
 * candidate when every required feature's probe validates, it is not denied by the integrator
 * or disabled by the signed manifest, it has isolation if it requires it, and it has not failed
 * while running in this page (`failed`: the lane failure record, errors.js). "Best": `rank`.
 * `relaxedSimd: 'off'` skips every lane that requires relaxed SIMD (RelaxedSimdOff).
 * @param {Pick<import('./trust.js').Manifest, 'artifacts' | 'disabled_lanes'>} manifest
 * @param {Record<string, { validates: boolean }>} probes
 * @param {{ denyLanes?: string[], relaxedSimd?: 'auto' | 'off', isolation?: boolean, failed?: Record<string, { code: string, detail: string }> }} [options]
 * @returns {{ candidates: Artifact[], attempts: LaneAttempt[] }}
 */
export function chooseLanes(manifest, probes, { denyLanes = [], relaxedSimd = 'auto', isolation = isolated(), failed = laneFailureRecord() } = {}) {
  const disabled = manifest.disabled_lanes || [];
  const ranked = [...manifest.artifacts].sort((a, b) => {
    const [x, y] = [rank(a), rank(b)];
    return y[0] - x[0] || y[1] - x[1] || y[2] - x[2];
  });
  /** @type {Artifact[]} */
  const candidates = [];
  /** @type {LaneAttempt[]} */
  const attempts = [];
  /** @type {(a: Artifact, code: import('./loader.js').LoaderErrorCode, detail: string) => void} */
  const skip = (a, code, detail) => {
    attempts.push({ artifact_id: a.id, outcome: 'skipped', step: 'choice', error_code: code, detail });
  };
  /** @type {Readonly<Record<string, string | null>>} */
  const featureProbes = FEATURE_PROBES;
  for (const a of ranked) {
    const missing = a.required_features.filter((f) => !(f in featureProbes) || (featureProbes[f] !== null && !(probes[featureProbes[f]] || {}).validates));
    if (disabled.includes(a.id)) skip(a, 'LaneDisabled', 'disabled by the signed manifest (disabled_lanes)');
    else if (denyLanes.includes(a.id)) skip(a, 'LaneDenied', 'denied by the integrator (denyLanes)');
    else if (relaxedSimd === 'off' && a.required_features.includes(RELAXED)) skip(a, 'RelaxedSimdOff', "relaxed SIMD turned off by the integrator (relaxedSimd: 'off')");
    else if (missing.length > 0) skip(a, 'FeatureMissing', `probe(s) for ${missing.join(', ')} do not validate`);
    else if (a.requires_cross_origin_isolation && !isolation) skip(a, 'NotIsolated', 'the context is not cross-origin isolated');
    else if (Object.hasOwn(failed, a.id)) skip(a, 'LaneFailed', `failed while running in this page (${failed[a.id].code}: ${failed[a.id].detail})`);
    else candidates.push(a);
  }
  return { candidates, attempts };
}
