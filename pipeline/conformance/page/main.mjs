// The conformance page: reads ./plan.json (lanes, cases, model), runs every lane through
// lanerun.mjs and POSTs each lane's outcome to ./lane as it finishes, then ./done.
import { environment, chooseLane, runLane } from './lanerun.mjs';

const post = (path, doc) => fetch(path, { method: 'POST', body: JSON.stringify(doc) });
const bytesOf = async (url) => {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
};

async function main() {
  const plan = await (await fetch('./plan.json')).json();
  const env = environment();
  await post('./start', { env, chosen: chooseLane(plan.lanes, env), user_agent: navigator.userAgent });
  const modelBytes = await bytesOf(plan.model_url);
  for (const lane of plan.lanes) {
    const bytes = await bytesOf(lane.url);
    await post('./lane', await runLane({ ...lane, bytes, modelBytes, cases: plan.cases, workers: plan.workers }));
  }
}

main().then(
  () => post('./done', {}),
  (e) => post('./done', { error: String(e.stack || e) }),
);
