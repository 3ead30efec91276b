// Node driver for tests/crates/lanes/test_load_in_place.py: the loader's own step 8
// (session.js admitAndLoad) on one real lane, measured. Modes:
//
//   node inplace.mjs LANE.wasm WORKERS MODEL load SOURCE   SOURCE = bytes | http | http-norange
//     the model admitted and loaded in place through admitAndLoad, from `model.bytes` or from a
//     local HTTP server (honouring Range, or ignoring it); the allocator's high-water mark over
//     the static base and the Wasm memory's size while it loads, beside the plan (in place);
//     then one decoded token (the model works where it landed).
//   node inplace.mjs LANE.wasm WORKERS MODEL refuse SOURCE BUDGET
//     the same with `memoryBudget` BUDGET: the refusal (name, message, detail) and what the
//     server saw (every request: its Range header, the bytes sent).
//   node inplace.mjs LANE.wasm WORKERS MODEL corrupt SOURCE
//     the model's last byte flipped on the server: HashMismatch, and no model adopted.
//
// Prints one JSON document.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createHash } from 'node:crypto';
import * as abi from '../../../crates/wasm/js/abi.js';
import { admitAndLoad, modelSpec } from '../../../crates/wasm/js/session.js';
import { defaultFetch } from '../../../crates/wasm/js/fetch.js';
import { stats } from '../../../crates/wasm/js/errors.js';

const [lanePath, workersArg, modelPath, mode, sourceKind, budgetArg] = process.argv.slice(2);
const workers = Number(workersArg);
const file = readFileSync(modelPath);
const sha256 = createHash('sha256').update(file).digest('hex');
const served = mode === 'corrupt' ? Buffer.from(file) : file;
if (mode === 'corrupt') served[served.length - 1] ^= 0xff;

/** A local server for the model: every request logged ({ range, status, sent }). */
async function serve(ranges) {
  const requests = [];
  const server = createServer((req, res) => {
    const entry = { range: req.headers.range ?? null, status: 200, sent: 0 };
    requests.push(entry);
    let body = served;
    const m = ranges && /^bytes=(\d+)-(\d*)$/.exec(entry.range ?? '');
    if (m) {
      const start = Number(m[1]);
      const end = m[2] === '' ? served.length - 1 : Math.min(Number(m[2]), served.length - 1);
      body = served.subarray(start, end + 1);
      entry.status = 206;
      res.writeHead(206, { 'content-length': body.length, 'content-range': `bytes ${start}-${end}/${served.length}` });
    } else {
      res.writeHead(200, { 'content-length': body.length });
    }
    // in chunks, counted as they are written: a cancelled request stops what it is sent
    let at = 0;
    const step = () => {
      while (at < body.length) {
        const chunk = body.subarray(at, at + 4096);
        at += chunk.length;
        entry.sent += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', step);
      }
      res.end();
    };
    res.on('close', () => { at = body.length; });
    step();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(null)));
  const address = /** @type {import('node:net').AddressInfo} */ (server.address());
  return { requests, url: `http://127.0.0.1:${address.port}/small.trlm`, close: () => { server.closeAllConnections(); server.close(); } };
}

// the threads lane's shared memory at the model's plan (the loader's own order: planned first)
const { rt } = await abi.instantiateFor({ bytes: readFileSync(lanePath), workers }, file, { inPlace: true });
const server = sourceKind === 'bytes' ? null : await serve(sourceKind === 'http');
const model = server ? { url: server.url, size: file.length, sha256 } : { bytes: file, sha256 };
const o = { model, pageUrl: 'http://127.0.0.1/', fetch: defaultFetch, onProgress: null, onCacheError: null, context: 0 };
const budget = budgetArg === undefined ? null : Number(budgetArg);
const budgetFor = () => budget ?? 1 << 30;
const doc = { mode, source: sourceKind, size: file.length, workers };
try {
  const spec = await modelSpec(o, null);
  await rt.call('tr_heap_reset_peak');
  doc.prefixBytes = await abi.modelPrefixBytes(rt, file.subarray(0, abi.MODEL_HEADER_BYTES));
  const before = await abi.heapStats(rt);
  try {
    const { handle, plan, context } = await admitAndLoad(o, rt, null, spec, budgetFor);
    const s = await abi.heapStats(rt);
    doc.loaded = true;
    doc.plan = plan;
    doc.context = context;
    doc.heap = { liveBefore: before.live, peak: s.peak, live: s.live, staticBase: s.staticBase, measured: s.staticBase + s.peak };
    doc.memoryBytes = rt.memory.buffer.byteLength;
    doc.modelLoads = stats.modelLoads;
    const session = await abi.newSession(rt, handle, { context: 16 });
    const code = await abi.prefill(rt, session, [256, 72, 105]);
    const d = await abi.decode(rt, session);
    doc.decoded = { prefill: code, decode: d.code };
  } catch (e) {
    doc.loaded = false;
    doc.error = { name: e.name, code: e.code ?? null, message: e.message, detail: e.detail ?? null };
    const s = await abi.heapStats(rt);
    doc.heap = { liveBefore: before.live, live: s.live, peak: s.peak };
  }
} finally {
  if (server) {
    doc.requests = server.requests;
    server.close();
  }
  await rt.close?.();
}
process.stdout.write(JSON.stringify(doc));
