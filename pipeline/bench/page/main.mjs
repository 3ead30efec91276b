// The bench's browser page (pipeline/bench/browser.py): ONE repetition of the browser run, as a
// user's page does it. js/loader.js verifies the bundle's signed manifest, probes the engine,
// picks a lane, self-tests it and fetches the model (from the network, or from its own cache
// when this profile loaded it before); then one prefill of the prompt and a streamed decode.
//
// ./plan.json: { base, trusted_keys, allow_dev_key, model: { url, size, sha256 }, workers,
//                now (the time the manifest is checked at), prompt_tokens: [u32...], warmup, tokens }
// POSTs ./start { user_agent, cross_origin_isolated }, then ./lane (the run below), then ./done.
// Every number is wall time in this page; decode_ms is the median step after `warmup` steps
// (step 0 only samples from the prefill's logits: it has no forward pass). `memory`: the
// loader's plan beside what each phase peaked at (lm.loadMemory, then lm.memorySince() after
// the prefill and after the decode; read outside the timed parts).
import { load } from '../js/loader.js';

const post = (path, doc) => fetch(path, { method: 'POST', body: JSON.stringify(doc) });
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function run(plan) {
  const t0 = performance.now();
  const lm = await load({
    baseUrl: new URL(plan.base, location.href).href,
    trustedKeys: plan.trusted_keys,
    allowDevKey: plan.allow_dev_key,
    model: { ...plan.model, url: new URL(plan.model.url, location.href).href },
    workers: plan.workers,
    now: plan.now,
  });
  const loadMs = performance.now() - t0;
  try {
    const lane = await lm.rt.call('tr_lane');
    await lm.memorySince(); // the session's activation: the prefill's phase starts here
    const t1 = performance.now();
    await lm.prefill(plan.prompt_tokens);
    const prefillMs = performance.now() - t1;
    const prefillMemory = await lm.memorySince();
    const steps = [];
    let t = performance.now();
    for await (const token of lm.decode({ maxTokens: plan.warmup + plan.tokens })) {
      const n = performance.now();
      steps.push(n - t);
      t = n;
      if (token.done) break;
    }
    const decodeMemory = await lm.memorySince();
    const measured = steps.slice(1 + plan.warmup);
    if (measured.length === 0) throw new Error(`decode stopped after ${steps.length} step(s): nothing measured`);
    return {
      chosen_lane: lm.receipt.module.artifact_id,
      lane,
      workers: lm.receipt.observed.workers_started,
      module_sha256: lm.receipt.module.sha256,
      context: lm.context,
      fetched: lm.receipt.fetched.map(({ what, cache }) => ({ what, cache })),
      load_ms: loadMs,
      prefill_ms: prefillMs,
      ttft_ms: prefillMs + steps[0],
      decode_ms: median(measured),
      decode_steps: measured.length,
      memory: {
        plan: lm.plan, load: lm.loadMemory, prefill: prefillMemory, decode: decodeMemory,
        prompt_tokens: plan.prompt_tokens.length, decode_tokens: steps.length,
      },
    };
  } finally {
    await lm.close();
  }
}

async function main() {
  const plan = await (await fetch('./plan.json')).json();
  await post('./start', { user_agent: navigator.userAgent, cross_origin_isolated: globalThis.crossOriginIsolated === true });
  await post('./lane', await run(plan));
}

main().then(
  () => post('./done', {}),
  (e) => post('./done', { error: String((e && e.code ? `${e.code}: ` : '') + ((e && e.stack) || e)) }),
);
