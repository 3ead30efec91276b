// Node driver for tests/crates/lanes/test_threads_memory.py: the threads lane's shared memory
// sized from the memory plan (issue 33 item 3). Prints one JSON document; Python asserts.
//
//   node sized.mjs loader LANE.wasm WORKERS MODEL
//     the loader's own steps: the model's header and directory admitted by a planner instance
//     (ModelHead, threadsPreconditions), the shared memory created at the plan, the pool started
//     and self-tested in it, the model loaded in place (loadAdmitted), a session at the model's
//     largest context (Loaded.activate), a prompt filling it but the decoded tokens prefilled in
//     one call, and those tokens decoded: every code, the memory's size beside the plan, and the
//     allocator's high-water mark over the static base.
//   node sized.mjs short LANE.wasm WORKERS MODEL PAGES_LESS
//     the same model in a shared memory PAGES_LESS pages under the plan's (host.js planBytes):
//     what load and activation give (a typed error, never a trap: the runtime still answers).
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { PAGE, instantiate, planner } from '../../../crates/wasm/js/host.js';
import * as abi from '../../../crates/wasm/js/abi.js';
import { Loaded, ModelHead, admitAndLoad, loadAdmitted, modelSpec, threadsPreconditions, closeRuntime } from '../../../crates/wasm/js/session.js';
import { defaultFetch } from '../../../crates/wasm/js/fetch.js';

const [mode, lanePath, workersArg, modelPath, lessArg] = process.argv.slice(2);
const workers = Number(workersArg);
const DECODE = 8;
const bytes = readFileSync(lanePath);
const file = readFileSync(modelPath);
const model = { bytes: file, sha256: createHash('sha256').update(file).digest('hex') };
const options = { model, pageUrl: 'http://127.0.0.1/', fetch: defaultFetch, onProgress: null, onCacheError: null, context: 0, workers, startupMs: 30000, livenessMs: 5000, selfTestMs: 60000, workerUrl: undefined, prefillChunk: 0, session: {} };
const artifact = /** @type {any} */ ({ id: 'simd128-threads-wasm32', memory: { shared: true, growth: false } });

/** @param {unknown} e */
const errorOf = (e) => {
  const err = /** @type {any} */ (e);
  return { name: err.name, code: err.code ?? null, message: String(err.message), detail: err.detail ?? null };
};

/** A prompt of `n` tokens: BOS, then printable bytes. */
const promptOf = (n) => [256, ...Array.from({ length: n - 1 }, (_, i) => 32 + (i % 90))];

/** Prefill of all but the DECODE last tokens of the context in one call (a chunk of the context: the
 * plan's transfer window), then DECODE tokens. */
async function fill(lm) {
  const fed = await lm.prefill(promptOf(lm.context - DECODE));
  const tokens = [];
  for await (const t of lm.decode({ maxTokens: DECODE })) tokens.push(t.token);
  return { committed: fed.committed, cancelled: fed.cancelled, tokens };
}

async function loader() {
  const spec = await modelSpec(options, null);
  const head = new ModelHead(options, null, spec, 2 ** 30);
  const module = await WebAssembly.compile(bytes);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const { rt, test, admitted } = await threadsPreconditions(options, artifact, bytes, sha256, head, module);
  const doc = { memoryBytes: rt.memory.buffer.byteLength, selfTest: test.overall, plan: admitted?.plan, context: admitted?.context };
  try {
    if (admitted === null) throw new Error('threadsPreconditions admitted no model');
    const handle = await loadAdmitted(options, rt, null, head);
    const lm = await Loaded.activate(rt, handle, admitted.context, { prefillChunk: admitted.context, session: {} }, await rt.call('tr_lane'), admitted.plan.budget);
    doc.run = await fill(lm);
    const heap = await abi.heapStats(rt);
    doc.heap = { peak: heap.peak, staticBase: heap.staticBase, measured: heap.staticBase + heap.peak };
    doc.memoryAfter = rt.memory.buffer.byteLength;
    doc.workerFailures = /** @type {any} */ (rt).workerFailures();
  } finally {
    head.cancel();
    await closeRuntime(rt);
  }
  return doc;
}

async function short(less) {
  const plan = await abi.planFor(bytes, file, { workers, inPlace: true });
  const minimum = (await planner(bytes)).memory.buffer.byteLength; // the module's declared minimum
  // the planned size, `less` pages under it
  const planned = Math.ceil(plan.peak / PAGE) * PAGE;
  const sized = await instantiate({ bytes, workers, planBytes: planned - less * PAGE });
  const doc = { plan: plan.peak, planned, minimum, memoryBytes: sized.memory.buffer.byteLength, context: plan.context };
  try {
    const spec = await modelSpec(options, null);
    try {
      const { handle, context } = await admitAndLoad(options, sized, null, spec, () => 2 ** 30);
      doc.loaded = true;
      const lm = await Loaded.activate(sized, handle, context, { prefillChunk: context, session: {} }, await sized.call('tr_lane'), 2 ** 32);
      doc.run = await fill(lm);
    } catch (e) {
      doc.error = errorOf(e);
    }
    // a trap would have killed the leader: the runtime still answers, its workers alive
    doc.lane = await sized.call('tr_lane');
    doc.workerFailures = /** @type {any} */ (sized).workerFailures();
  } finally {
    await sized.close();
  }
  return doc;
}

const doc = mode === 'loader' ? await loader() : await short(Number(lessArg));
process.stdout.write(JSON.stringify({ mode, workers, ...doc }));
