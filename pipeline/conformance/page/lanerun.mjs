// Runs one lane of a release on a list of sampler cases, in a browser page or in node: the
// only in-page code of the conformance matrix (main.mjs and node_main.mjs only feed it).
//
//   environment()                    -> { cross_origin_isolated, shared_memory, probes }
//   chooseLane(lanes, env)           -> the lane id this engine should use
//   runLane({ lane, bytes, sha256, simd, threads, workers, modelBytes, cases })
//     -> { lane, status: 'ran' | 'refused' | 'failed', error, results, receipt }
//
// Today it drives the shipped js/host.js and js/abi.js directly and makes a provisional
// receipt; js/loader.js (signed manifest, probes, lane choice, capability receipt) replaces
// the bodies of environment, chooseLane and instantiateLane without changing this interface.
import { instantiate, isNode } from '../js/host.js';
import * as abi from '../js/abi.js';
import { PROBES } from './probes.mjs';

const hex64 = (big) => `0x${big.toString(16).padStart(16, '0')}`;
const now = () => performance.now();

export function environment() {
  const probes = {};
  for (const [name, bytes] of Object.entries(PROBES)) {
    try {
      probes[name] = WebAssembly.validate(bytes);
    } catch {
      probes[name] = false;
    }
  }
  return {
    cross_origin_isolated: globalThis.crossOriginIsolated === true || isNode,
    shared_memory: typeof SharedArrayBuffer === 'function',
    probes,
  };
}

/** Why `lane` cannot run here: null, or { status: 'refused' | 'failed', error }. */
function obstacle(lane, env) {
  if (lane.threads && !env.cross_origin_isolated) {
    return { status: 'refused', error: 'the threads lane needs a cross-origin isolated page' };
  }
  if (lane.threads && !env.shared_memory) {
    return { status: 'refused', error: 'the page is isolated but has no SharedArrayBuffer' };
  }
  if (lane.simd && !env.probes.simd128) return { status: 'failed', error: 'probe simd128 did not validate' };
  if (lane.threads && !env.probes.threads) return { status: 'failed', error: 'probe threads did not validate' };
  return null;
}

/** The best lane this engine can run: threads, else SIMD, else scalar (manifest order). */
export function chooseLane(lanes, env) {
  const rank = (l) => (l.threads ? 2 : l.simd ? 1 : 0);
  const usable = lanes.filter((l) => obstacle(l, env) === null).sort((a, b) => rank(b) - rank(a));
  return usable.length ? usable[0].lane : null;
}

async function instantiateLane({ bytes, sha256, threads, workers }) {
  return instantiate({ bytes, sha256, workers: threads ? workers : 1 });
}

async function runCase(rt, model, c) {
  const t0 = now();
  const session = await abi.newSession(rt, model, {
    seed: BigInt(c.seed), stream: BigInt(c.stream), temperature: c.temperature, topK: c.top_k,
    topP: c.top_p, repetitionPenalty: c.repetition_penalty,
  });
  try {
    let code = await abi.prefill(rt, session, abi.encodePrompt(c.prompt));
    const tokens = [];
    const decodeMs = [];
    let ttft = 0;
    let rng = 0n;
    let eos = false;
    while (code === 0 && tokens.length < c.max_tokens) {
      const t = now();
      const step = await abi.decode(rt, session);
      code = step.code;
      if (code !== 0) break;
      if (tokens.length === 0) ttft = now() - t0;
      else decodeMs.push(now() - t);
      tokens.push(step.token);
      rng = step.rngState;
      if (step.done) {
        eos = true;
        break;
      }
    }
    return { id: c.id, code, tokens, rng_state: hex64(rng), eos, ttft_ms: ttft, decode_ms: decodeMs };
  } finally {
    await rt.call('tr_session_free', session);
  }
}

export async function runLane({ lane, bytes, sha256, simd = false, threads = false, workers = 2, modelBytes, cases }) {
  const env = environment();
  const blocked = obstacle({ lane, simd, threads }, env);
  if (blocked) return { lane, ...blocked, results: [], receipt: null };
  let rt;
  try {
    rt = await instantiateLane({ bytes, sha256, threads, workers });
  } catch (e) {
    return { lane, status: 'failed', error: `instantiate: ${e.message || e}`, results: [], receipt: null };
  }
  const results = [];
  try {
    const model = await abi.loadModel(rt, modelBytes);
    for (const c of cases) {
      try {
        results.push(await runCase(rt, model, c));
      } catch (e) {
        results.push({ id: c.id, error: String(e.message || e) });
      }
    }
    const counters = await abi.pathCounters(rt);
    const receipt = {
      kind: 'provisional lane-run receipt (host.js; js/loader.js will give the capability receipt)',
      lane,
      module_sha256: rt.sha256,
      cross_origin_isolated: env.cross_origin_isolated,
      probes: env.probes,
      workers_requested: threads ? workers : 0,
      workers_started: rt.workers,
      executed_path_evidence: {
        scalar_kernel_calls: Number(counters.scalar),
        simd_kernel_calls: Number(counters.simd),
        worker_ids_participating: counters.participating,
      },
    };
    return { lane, status: 'ran', error: null, results, receipt };
  } catch (e) {
    return { lane, status: 'failed', error: String(e.message || e), results, receipt: null };
  } finally {
    await rt.close();
  }
}
