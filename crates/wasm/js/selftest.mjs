// node selftest.mjs ARTIFACT.wasm [--workers N]
// Instantiates a lane through host.js (the threads lane with N workers, each acknowledging
// the module hash, in a shared memory of the module's declared minimum: no model, so the plan
// is what the module itself needs), runs tr_self_test and, for the threads lane, checks that
// every worker served a command. Prints one line; exit 0 on pass, 1 on failure.
import { readFileSync } from 'node:fs';
import { instantiate } from './host.js';
import { pathCounters } from './abi.js';

const [artifact, ...rest] = process.argv.slice(2);
const at = rest.indexOf('--workers');
const workers = at >= 0 ? Number(rest[at + 1]) : 2;

async function main() {
  const rt = await instantiate({ bytes: readFileSync(artifact), workers, livenessMs: 10000 });
  try {
    const code = await rt.call('tr_self_test');
    const counters = await pathCounters(rt);
    let detail = `tr_self_test() == ${code}; lane ${await rt.call('tr_lane')}; scalar calls ${counters.scalar}, simd calls ${counters.simd}`;
    let ok = code === 0;
    if (rt.workers > 0) {
      const ids = counters.participating;
      detail += `; workers ${counters.workers}, participated [${ids.join(',')}], sha256 ${rt.sha256.slice(0, 16)} acknowledged`;
      ok = ok && counters.workers === rt.workers && ids.length === rt.workers;
    }
    console.log(detail);
    return ok ? 0 : 1;
  } finally {
    await rt.close();
  }
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.log(`self-test failed: ${e.message}`);
    process.exit(1);
  },
);
