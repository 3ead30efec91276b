// The conformance page: reads ./plan.json (lanes, cases, model, trust), runs every lane
// through lanerun.mjs (js/loader.js on the bundle served at plan.base) and POSTs each
// lane's outcome to ./lane as it finishes, then ./done.
import { environment, runLane } from './lanerun.mjs';

const post = (path, doc) => fetch(path, { method: 'POST', body: JSON.stringify(doc) });
const bytesOf = async (url) => {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
};

async function main() {
  const plan = await (await fetch('./plan.json')).json();
  const bundle = {
    baseUrl: new URL(plan.base, location.href).href,
    trustedKeys: plan.trusted_keys,
    allowDevKey: plan.allow_dev_key,
  };
  const env = await environment(bundle);
  await post('./start', { env, chosen: env.chosen, user_agent: navigator.userAgent });
  const model = { bytes: await bytesOf(plan.model_url), sha256: plan.model_sha256 };
  const lanes = plan.lanes.map((l) => l.lane);
  for (const lane of plan.run || lanes) { // plan.run: the lanes asked for; the rest stay denied
    await post('./lane', await runLane({ lane, lanes, bundle, model, cases: plan.cases, workers: plan.workers }));
  }
}

main().then(
  () => post('./done', {}),
  (e) => post('./done', { error: String(e.stack || e) }),
);
