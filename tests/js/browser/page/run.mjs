// Test page: instantiate every lane of a release with the shipped JS host, run its startup
// self-test, and POST what happened to /result (the test server). The lanes and their
// expected SHA-256 come from the bundle's own manifest.json, as an integrator would use it.
import { instantiate } from './js/host.js';
import { pathCounters } from './js/abi.js';

async function runLane(artifact) {
  const started = performance.now();
  const bytes = new Uint8Array(await (await fetch(artifact.url)).arrayBuffer());
  const threaded = artifact.requires_cross_origin_isolation === true;
  let rt;
  try {
    rt = await instantiate({ bytes, sha256: artifact.sha256, workers: threaded ? 2 : 1 });
  } catch (e) {
    return { lane: artifact.id, instantiated: false, error: String(e.message || e) };
  }
  try {
    const code = await rt.call('tr_self_test');
    const counters = await pathCounters(rt);
    return {
      lane: artifact.id, instantiated: true, self_test: code, sha256: rt.sha256,
      scalar_calls: Number(counters.scalar), simd_calls: Number(counters.simd),
      workers: counters.workers, participating: counters.participating,
      ms: Math.round(performance.now() - started),
    };
  } finally {
    await rt.close();
  }
}

async function main() {
  const manifest = await (await fetch('./manifest.json')).json();
  const lanes = [];
  for (const artifact of manifest.artifacts) lanes.push(await runLane(artifact));
  return { cross_origin_isolated: globalThis.crossOriginIsolated === true, lanes };
}

main().then(
  (result) => fetch('/result', { method: 'POST', body: JSON.stringify(result) }),
  (e) => fetch('/result', { method: 'POST', body: JSON.stringify({ error: String(e.stack || e) }) }),
);
