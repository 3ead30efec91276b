// Runs one lane of a release on a list of sampler cases, in a browser page or in node, through
// the shipped js/loader.js: the only in-page code of the conformance matrix (main.mjs and
// node_main.mjs only feed it). The loader verifies the signed manifest, probes the engine,
// chooses lanes, self-tests and admits the model; a row's receipt is the loader's
// tinyrustlm.capability-receipt.v1, and a lane the loader refuses is reported with its
// LoaderError code, never hidden.
//
// `bundle` (both functions): { baseUrl, trustedKeys, allowDevKey, fetch? } — the bundle root
// as an absolute URL ending in '/' (manifest.json, manifest.sigstore.json, js/, artifacts/
// under it), the tinyrustlm.trusted-keys.v1 document, and how to fetch (node: files).
//
//   environment(bundle)
//     -> { cross_origin_isolated, shared_memory, probes: {id: validates}, chosen,
//          chosen_isolated, chosen_not_isolated, error }
//        chosen*: the lane the loader's choice puts first here / if isolated / if not;
//        error: null, or { code, message } when the signed manifest is refused.
//   runLane({ lane, lanes, bundle, model: { bytes, sha256 }, workers, cases })
//     -> { lane, status: 'ran' | 'refused' | 'failed', error, error_code, results, receipt }
//        `lanes` = every wasm lane id; all but `lane` are denied, so the loader runs `lane`
//        or refuses it. refused = correct not to run here (not isolated, disabled lanes).
import { load, verifySignedManifest, runProbes, chooseLanes } from '../js/loader.js';
import * as abi from '../js/abi.js';
import { isNode } from '../js/host.js';

const hex64 = (big) => `0x${big.toString(16).padStart(16, '0')}`;
const now = () => performance.now();
// Loader codes that mean "this lane must not run in this context" rather than "it broke".
const REFUSALS = new Set(['NotIsolated', 'LaneDisabled']);
/** choice.js's FeatureMissing detail when relaxed-simd alone is missing. */
const RELAXED_MISSING = 'probe(s) for relaxed-simd do not validate';

const loaderOptions = (bundle) => ({
  baseUrl: bundle.baseUrl,
  trustedKeys: bundle.trustedKeys,
  allowDevKey: bundle.allowDevKey === true,
  ...(bundle.fetch ? { fetch: bundle.fetch } : {}),
});

const errorOf = (e) => ({ code: (e && e.code) || 'Error', message: String((e && e.message) || e) });

export async function environment(bundle) {
  const env = {
    cross_origin_isolated: globalThis.crossOriginIsolated === true || isNode,
    shared_memory: typeof SharedArrayBuffer === 'function',
    probes: {},
    chosen: null,
    chosen_isolated: null,
    chosen_not_isolated: null,
    error: null,
  };
  try {
    // verifySignedManifest takes the loader's normalised options: an absolute base, a fetch
    const o = { fetch: (url) => globalThis.fetch(url), ...loaderOptions(bundle), now: Date.now() / 1000 };
    const signed = await verifySignedManifest(o);
    const probes = await runProbes();
    for (const [id, p] of Object.entries(probes)) env.probes[id] = p.validates;
    const first = (opts) => chooseLanes(signed.manifest, probes, opts).candidates.map((a) => a.id)[0] || null;
    env.chosen = first({});
    env.chosen_isolated = first({ isolation: true });
    env.chosen_not_isolated = first({ isolation: false });
  } catch (e) {
    env.error = errorOf(e);
  }
  return env;
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

/** The loader's refusal of `lane`: its own attempt when every lane was skipped or failed. */
function refusal(lane, e) {
  const attempts = (e && e.detail && e.detail.attempts) || [];
  const mine = attempts.find((a) => a.artifact_id === lane && a.outcome !== 'selected');
  const { code, message } = mine ? { code: mine.error_code, message: `${mine.error_code}: ${mine.detail}` } : errorOf(e);
  // an engine without relaxed SIMD (WebKit) refuses the relaxed lanes at the probe: correct,
  // the row says so; any other missing feature is a failure
  const refused = REFUSALS.has(code) || (code === 'FeatureMissing' && mine && mine.detail === RELAXED_MISSING);
  return { lane, status: refused ? 'refused' : 'failed', error: message, error_code: code, results: [], receipt: null };
}

export async function runLane({ lane, lanes, bundle, model, workers = 2, cases }) {
  let lm;
  try {
    lm = await load({ ...loaderOptions(bundle), denyLanes: lanes.filter((l) => l !== lane), model, workers });
  } catch (e) {
    return refusal(lane, e);
  }
  const results = [];
  try {
    if (lm.receipt.module.artifact_id !== lane) {
      // denyLanes leaves the loader one lane: anything else is a loader bug, not a pass
      return { lane, status: 'failed', error: `the loader ran ${lm.receipt.module.artifact_id}`, error_code: 'WrongLane', results, receipt: lm.receipt };
    }
    // One session per case on the loader's runtime and model. The loader's own session goes
    // first: memory is sized at activation, and a second session beside it would grow it.
    await lm.rt.call('tr_session_free', lm.session);
    for (const c of cases) {
      try {
        results.push(await runCase(lm.rt, lm.model, c));
      } catch (e) {
        results.push({ id: c.id, error: String(e.message || e) });
      }
    }
    lm.checkMemory(); // the loader's promise: memory fixed since activation (MemoryGrew)
    return { lane, status: 'ran', error: null, error_code: null, results, receipt: lm.receipt };
  } catch (e) {
    return { lane, status: 'failed', error: String(e.message || e), error_code: errorOf(e).code, results, receipt: lm.receipt };
  } finally {
    await lm.close();
  }
}
