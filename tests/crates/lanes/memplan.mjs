// Node driver for tests/crates/lanes/test_memory_plan.py: the itemized memory plan
// (tr_plan_header) beside what one real lane measures while the model loads in place
// (tr_model_adopt), a prompt is prefilled in one chunk and tokens are decoded: the allocator's
// high-water mark per phase (tr_heap_stats, reset between phases) over the static base
// (`__heap_base`: data and stacks), and the Wasm memory's size (the threads lane's: created at
// the plan's peak, so the prefill at the largest context runs in exactly the planned memory).
// Prints one JSON document.
//
//   node memplan.mjs LANE.wasm WORKERS MODEL CONTEXT[,CONTEXT...]
import { readFileSync } from 'node:fs';
import * as abi from '../../../crates/wasm/js/abi.js';

const [lanePath, workersArg, modelPath, contextsArg] = process.argv.slice(2);
const workers = Number(workersArg);
const DECODE = 8;

/** The allocator's peak over the static base since the last reset, and the memory's size. */
async function phase(rt) {
  const s = await abi.heapStats(rt);
  return { heap: s.peak, staticBase: s.staticBase, measured: s.staticBase + s.peak, memoryBytes: rt.memory.buffer.byteLength };
}

async function measure(context) {
  const model = readFileSync(modelPath);
  // the threads lane's shared memory is created at the plan's peak (a planner asked first)
  const { rt, plan } = await abi.instantiateFor({ bytes: readFileSync(lanePath), workers }, model, { context, inPlace: true });
  try {
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
    const prompt = [256, ...Array.from({ length: context - DECODE - 1 }, (_, i) => 32 + (i % 90))];
    const code = await abi.prefill(rt, session, prompt); // one chunk: the whole prompt
    if (code !== 0) throw new Error(`tr_prefill returned ${code}`);
    const prefill = await phase(rt);
    await rt.call('tr_heap_reset_peak');
    for (let i = 0; i < DECODE; i++) {
      const d = await abi.decode(rt, session);
      if (d.code !== 0) throw new Error(`tr_decode returned ${d.code}`);
    }
    const decode = await phase(rt);
    return { context, workers, plan, load, prefill, decode };
  } finally {
    await rt.close?.();
  }
}

const runs = [];
for (const c of contextsArg.split(',').map(Number)) runs.push(await measure(c));
process.stdout.write(JSON.stringify({ runs }));
