// The itemized memory plan (tr_plan_header) beside what one real lane measures, in node: the
// model loaded in place (tr_model_adopt), a prompt that fills the context but DECODE tokens
// prefilled in one chunk, then DECODE tokens decoded; per phase the allocator's high-water mark
// (tr_heap_stats, reset between phases) over the static base (`__heap_base`: data and stacks)
// and the Wasm memory's size. `before`: the same model loaded by copy (tr_model_load, the load
// path before issue 33: the file twice while it loads) in a fresh instance, beside the plan
// with its load copy. Prints one JSON document { runs: [...] }, one run per context.
// Used by `nox -s bench` (pipeline/bench/lanes.py: the bench document's `memory`) and by
// tests/crates/lanes/test_memory_plan.py (which asserts plan >= measured, within 10%).
//
//   node memory.mjs LANE.wasm WORKERS MODEL CONTEXT[,CONTEXT...]
import { readFileSync } from 'node:fs';
import * as abi from '../../crates/wasm/js/abi.js';

const DECODE = 8;

/** The allocator's peak over the static base since the last reset, and the memory's size. */
async function phase(rt) {
  const s = await abi.heapStats(rt);
  return { heap: s.peak, staticBase: s.staticBase, measured: s.staticBase + s.peak, memoryBytes: rt.memory.buffer.byteLength };
}

/** The plan of `model` at `context` (in place, or with the load copy of tr_model_load). */
async function plan(rt, model, context, workers, inPlace) {
  const prefixLen = await abi.modelPrefixBytes(rt, model.subarray(0, abi.MODEL_HEADER_BYTES));
  const p = await abi.planHeader(rt, model.subarray(0, prefixLen), model.length, context, workers, inPlace);
  if (p.code !== 0) throw new Error(`tr_plan_header returned ${p.code}`);
  return p;
}

async function inPlace(bytes, workers, model, context) {
  // the threads lane's shared memory is created at the plan's peak (a planner asked first)
  const { rt } = await abi.instantiateFor({ bytes, workers }, model, { context, inPlace: true });
  try {
    const planned = await plan(rt, model, context, workers, true);
    // load in place: the window the model is written to becomes the model's bytes
    await rt.call('tr_heap_reset_peak');
    const ptr = await rt.call('tr_alloc', model.length);
    const out = await rt.call('tr_alloc', 8);
    rt.bytes(ptr, model.length).set(model);
    const adopted = await abi.modelAdoptAt(rt, ptr, model.length, out);
    if (adopted.code !== 0) throw new Error(`tr_model_adopt returned ${adopted.code}`);
    await rt.call('tr_free', out, 8);
    const load = await phase(rt);
    await rt.call('tr_heap_reset_peak');
    const session = await abi.newSession(rt, adopted.handle, { context });
    const prompt = [abi.BOS, ...Array.from({ length: context - DECODE - 1 }, (_, i) => 32 + (i % 90))];
    const code = await abi.prefill(rt, session, prompt); // one chunk: the whole prompt
    if (code !== 0) throw new Error(`tr_prefill returned ${code}`);
    const prefill = await phase(rt);
    await rt.call('tr_heap_reset_peak');
    for (let i = 0; i < DECODE; i++) {
      const d = await abi.decode(rt, session);
      if (d.code !== 0) throw new Error(`tr_decode returned ${d.code}`);
    }
    const decode = await phase(rt);
    return { plan: planned, load, prefill, decode };
  } finally {
    await rt.close?.();
  }
}

/** The load before issue 33: tr_model_load copies the file (twice its size while loading). */
async function byCopy(bytes, workers, model, context) {
  const { rt } = await abi.instantiateFor({ bytes, workers }, model, { context, inPlace: false });
  try {
    const planned = await plan(rt, model, context, workers, false);
    await rt.call('tr_heap_reset_peak');
    await abi.loadModel(rt, model);
    return { plan: planned, load: await phase(rt) };
  } finally {
    await rt.close?.();
  }
}

async function main() {
  const [lanePath, workersArg, modelPath, contextsArg] = process.argv.slice(2);
  const workers = Number(workersArg);
  const bytes = readFileSync(lanePath);
  const model = readFileSync(modelPath);
  const runs = [];
  for (const context of contextsArg.split(',').map(Number)) {
    const now = await inPlace(bytes, workers, model, context);
    runs.push({ context, workers, decodeTokens: DECODE, modelBytes: model.length, ...now, before: await byCopy(bytes, workers, model, context) });
  }
  return { runs };
}

main().then(
  (doc) => process.stdout.write(JSON.stringify(doc) + '\n', () => process.exit(0)),
  (e) => {
    console.error(e.stack || String(e));
    process.exit(1);
  },
);
