// The conformance matrix's node runner: `node node_main.mjs PLAN.json` runs every lane of the
// plan through lanerun.mjs and prints one JSON document. The bundle is a folder (plan.base):
// node's fetch has no file: URLs, so the loader gets a fetch that reads files.
import { readFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { environment, runLane } from './lanerun.mjs';

/** fetch for file: URLs (what the loader asks of it: ok, status, arrayBuffer, body). */
async function fileFetch(url) {
  const u = new URL(url);
  if (u.protocol !== 'file:') throw new TypeError(`only file: URLs here, not ${u.href}`);
  try {
    return new Response(await readFile(fileURLToPath(u)), { status: 200 });
  } catch (e) {
    if (e.code === 'ENOENT') return new Response(null, { status: 404 });
    throw e;
  }
}

async function main(planPath) {
  const plan = JSON.parse(readFileSync(planPath, 'utf8'));
  const bundle = {
    baseUrl: pathToFileURL(`${plan.base}/`).href,
    trustedKeys: plan.trusted_keys,
    allowDevKey: plan.allow_dev_key,
    fetch: fileFetch,
  };
  const env = await environment(bundle);
  const model = { bytes: new Uint8Array(readFileSync(plan.model_path)), sha256: plan.model_sha256 };
  const lanes = plan.lanes.map((l) => l.lane);
  const docs = [];
  for (const lane of plan.run || lanes) { // plan.run: the lanes asked for; the rest stay denied
    docs.push(await runLane({ lane, lanes, bundle, model, cases: plan.cases, workers: plan.workers }));
  }
  return { env, chosen: env.chosen, version: process.version, lanes: docs };
}

main(process.argv[2]).then(
  (doc) => process.stdout.write(`${JSON.stringify(doc)}\n`, () => process.exit(0)),
  (e) => {
    console.error(e.stack || String(e));
    process.exit(1);
  },
);
