// Lane benchmark runner for pipeline/bench/lanes.py (node): ONE repetition of every figure, in a
// fixed interleaved order; lanes.py runs it repeatedly and takes medians. Prints one JSON document.
//
//   node lanes.mjs CONFIG.json
//
// CONFIG: { models: { TIER: PATH }, tokens, warmup, prompt_tokens: [u32...],
//           harness: { NAME: PATH },                  kernel-only modules (bench/harness)
//           runs: [ { name, lane: PATH, workers, tier } ], shipped lane modules, per model tier
//           matvec: [ { name, rows, cols, reps } ], probe_bytes, probe_threads: [1, 2] }
// Every number is wall time on this machine, in this one process.
import { readFileSync } from 'node:fs';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { sha256Hex } from '../../crates/wasm/js/host.js';
import * as abi from '../../crates/wasm/js/abi.js';

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function loadHarness(path) {
  const { instance } = /** @type {any} */ (await WebAssembly.instantiate(readFileSync(path), {}));
  return instance.exports;
}

/** Fills q8-block-v1 rows with deterministic codes and small scales; returns the pointers. */
function q8Matrix(ex, rows, cols) {
  const blocks = Math.ceil(cols / 32);
  const wLen = rows * blocks * 36;
  const w = ex.h_alloc(wLen);
  const x = ex.h_alloc(cols * 4);
  const out = ex.h_alloc(rows * 4);
  const bytes = new Uint8Array(ex.memory.buffer, w, wLen);
  const view = new DataView(ex.memory.buffer);
  let s = 12345;
  for (let b = 0; b < rows * blocks; b++) {
    view.setFloat32(w + 36 * b, 1 / 512, true);
    for (let j = 4; j < 36; j++) {
      s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
      bytes[36 * b + j] = s >>> 24;
    }
  }
  for (let i = 0; i < cols; i++) view.setFloat32(x + 4 * i, Math.sin(i), true);
  return { w, wLen, x, out };
}

/** Integer tier (CONTRACT.md §10): the same q8 matrix against x quantized once (h_quantize),
 *  rows through the lane's active integer kernels (h_int_rows set 1). */
function int8MatvecGbps(ex, { rows, cols, reps }) {
  const m = q8Matrix(ex, rows, cols);
  const blocks = Math.ceil(cols / 32);
  const codes = ex.h_alloc(blocks * 32);
  const scales = ex.h_alloc(blocks * 4);
  if (ex.h_quantize(m.x, cols, codes, scales) !== 0) throw new Error('h_quantize failed');
  const once = () => ex.h_int_rows(1, 1, m.w, m.wLen, codes, scales, cols, 1, rows, 0, m.out);
  once();
  once();
  const t0 = performance.now();
  for (let i = 0; i < reps; i++) once();
  const ms = (performance.now() - t0) / reps;
  return { gbps: m.wLen / ms / 1e6, ms_per_matvec: ms, weight_bytes: m.wLen };
}

/** q8 matvec GB/s of weight bytes through the lane's active kernels (one timed batch). */
function matvecGbps(ex, { rows, cols, reps }) {
  const m = q8Matrix(ex, rows, cols);
  ex.h_matvec(1, 1, m.w, m.wLen, m.x, cols, m.out, rows); // warm up (and tier up)
  ex.h_matvec(1, 1, m.w, m.wLen, m.x, cols, m.out, rows);
  const t0 = performance.now();
  for (let i = 0; i < reps; i++) ex.h_matvec(1, 1, m.w, m.wLen, m.x, cols, m.out, rows);
  const ms = (performance.now() - t0) / reps;
  return { gbps: m.wLen / ms / 1e6, ms_per_matvec: ms, weight_bytes: m.wLen };
}

// ---- read-bandwidth probe: `threads` node workers, each streaming its own buffer -----------

async function probeWorker() {
  const { path, bytes, passes, sync } = workerData;
  const ex = await loadHarness(path);
  const p = ex.h_alloc(bytes);
  new Uint8Array(ex.memory.buffer, p, bytes).fill(1);
  ex.h_read_probe(p, bytes, 1); // warm-up, page faults
  const flag = new Int32Array(sync);
  Atomics.add(flag, 1, 1); // ready
  Atomics.wait(flag, 0, 0); // the start signal
  const t0 = performance.now();
  ex.h_read_probe(p, bytes, passes);
  parentPort.postMessage(performance.now() - t0);
}

/** Aggregate read GB/s of `threads` threads streaming `bytes` each, started together. */
async function bandwidthGbps(path, bytes, threads) {
  const passes = 4;
  const sync = new SharedArrayBuffer(8);
  const flag = new Int32Array(sync);
  const workers = [];
  const done = [];
  for (let i = 0; i < threads; i++) {
    const w = new Worker(new URL(import.meta.url), { workerData: { path, bytes, passes, sync } });
    workers.push(w);
    done.push(new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject); }));
  }
  while (Atomics.load(flag, 1) < threads) await new Promise((r) => setTimeout(r, 5));
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
  const ms = Math.max(...(await Promise.all(done)));
  await Promise.all(workers.map((w) => w.terminate()));
  return (threads * bytes * passes) / ms / 1e6;
}

// ---- one lane run: prefill of the prompt, then decode -------------------------------------

async function laneRun(run, cfg, modelBytes) {
  const bytes = readFileSync(run.lane);
  // the threads lane's shared memory is created at the model's plan (loaded by copy, one session)
  const { rt } = await abi.instantiateFor({ bytes, workers: run.workers }, modelBytes, { inPlace: false });
  try {
    const model = await abi.loadModel(rt, modelBytes);
    // warm-up generation (tier-up, page faults), then the measured one
    await abi.generate(rt, model, {}, cfg.prompt_tokens, cfg.warmup);
    const out = await abi.generate(rt, model, {}, cfg.prompt_tokens, cfg.tokens);
    if (out.code !== 0) throw new Error(`${run.name}: generate returned ${out.code}`);
    // the first step only samples from the prefill's logits: it has no forward pass
    const decodeMs = median(out.decodeMs.slice(1));
    const doc = {
      name: run.name,
      workers: run.workers,
      lane: await rt.call('tr_lane'),
      module_sha256: await sha256Hex(bytes),
      decode_ms: decodeMs,
      prefill_ms: out.prefillMs,
      ttft_ms: out.prefillMs + out.decodeMs[0],
    };
    if (run.workers) doc.worker_counters = await abi.workerCounters(rt);
    return doc;
  } finally {
    await rt.close();
  }
}

async function main(configPath) {
  const cfg = JSON.parse(readFileSync(configPath, 'utf8'));
  // model tier -> bytes (CONTRACT.md §1: format v1 = f32 tier, v2 = integer tier)
  const modelBytes = Object.fromEntries(Object.entries(cfg.models).map(([tier, path]) => [tier, readFileSync(path)]));
  const kernels = {};
  for (const [name, path] of Object.entries(cfg.harness)) {
    kernels[name] = {};
    for (const shape of cfg.matvec) {
      const ex = await loadHarness(path); // a fresh instance per shape: no memory carried over
      kernels[name][shape.name] = matvecGbps(ex, shape);
      if (ex.h_int_rows) kernels[name][`${shape.name}-int8`] = int8MatvecGbps(await loadHarness(path), shape);
    }
  }
  // the probe runs in the first harness that has one (SIMD loads: a simd128 harness)
  let probe = null;
  for (const path of Object.values(cfg.harness)) {
    if (probe === null && (await loadHarness(path)).h_read_probe) probe = path;
  }
  const bandwidth = {};
  for (const threads of probe === null ? [] : cfg.probe_threads) {
    bandwidth[threads] = await bandwidthGbps(probe, cfg.probe_bytes, threads);
  }
  const runs = [];
  for (const run of cfg.runs) runs.push(await laneRun(run, cfg, modelBytes[run.tier]));
  return { node: process.version, v8: process.versions.v8, kernels, bandwidth_gbps: bandwidth, runs };
}

if (isMainThread) {
  main(process.argv[2]).then(
    (doc) => process.stdout.write(JSON.stringify(doc) + '\n', () => process.exit(0)),
    (e) => {
      console.error(e.stack || String(e));
      process.exit(1);
    },
  );
} else {
  probeWorker();
}
