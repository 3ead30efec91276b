// TinyRustLM loader, the choice room: feature probes (step 2) and lane choice (step 3).
import { isNode, sha256Hex } from './host.js';
import { LoaderError } from './errors.js';
import { PROBES } from './probes.js';
// Manifest feature name -> the probe that must validate for it (null: the lowest lane's),
// generated from verify's feature table and lane policy.
import { FEATURE_PROBES } from './constants.js';

// ---- 2. probes ------------------------------------------------------------------------------

/** Step 2: { id: { version, sha256, validates } } for every embedded probe. */
export async function runProbes(probes = PROBES, onProgress = null) {
  const out = {};
  let done = 0;
  if (onProgress) onProgress({ phase: 'probes', loaded: 0, total: probes.length });
  for (const p of probes) {
    const bytes = Uint8Array.from(p.bytes);
    const sha256 = await sha256Hex(bytes);
    if (sha256 !== p.sha256) {
      // a changed probe would silently change the classification: refuse instead
      throw new LoaderError('ProbeTampered', `probe ${p.id} v${p.version} hashes to ${sha256.slice(0, 16)}…, not its recorded ${p.sha256.slice(0, 16)}…`);
    }
    out[p.id] = { version: p.version, sha256, validates: WebAssembly.validate(bytes) };
    if (onProgress) onProgress({ phase: 'probes', loaded: ++done, total: probes.length });
  }
  return out;
}

// ---- 3. lane choice ---------------------------------------------------------------------------

/** Cross-origin isolation as the page sees it; node has no cross-origin boundary. */
export function isolated() {
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
