// The conformance matrix's node runner: `node node_main.mjs PLAN.json` runs every lane of the
// plan through lanerun.mjs (files by path instead of URL) and prints one JSON document.
import { readFileSync } from 'node:fs';
import { environment, chooseLane, runLane } from './lanerun.mjs';

async function main(planPath) {
  const plan = JSON.parse(readFileSync(planPath, 'utf8'));
  const env = environment();
  const modelBytes = readFileSync(plan.model_path);
  const lanes = [];
  for (const lane of plan.lanes) {
    lanes.push(await runLane({ ...lane, bytes: readFileSync(lane.path), modelBytes, cases: plan.cases, workers: plan.workers }));
  }
  return { env, chosen: chooseLane(plan.lanes, env), version: process.version, lanes };
}

main(process.argv[2]).then(
  (doc) => process.stdout.write(`${JSON.stringify(doc)}\n`, () => process.exit(0)),
  (e) => {
    console.error(e.stack || String(e));
    process.exit(1);
  },
);
