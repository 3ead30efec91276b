// Lane benchmark runner for pipeline/bench.py (node). Prints one JSON document.
//
//   node bench_lanes.mjs CONFIG.json
//
// CONFIG: { model, tokens, warmup, rounds, prompt,
//           harness: { scalar: PATH, simd128: PATH },   kernel-only modules (tests/lanes/harness)
//           runs: [ { name, lane: PATH, workers } ],     shipped lane modules
//           matvec: [ { name, rows, cols, reps } ], probe_bytes }
// Every number is wall time on this machine, in this one process, in the order given.
import { readFileSync } from 'node:fs';
import { instantiate } from '../crates/wasm/js/host.js';
import * as abi from '../crates/wasm/js/abi.js';

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function loadHarness(path) {
  const { instance } = await WebAssembly.instantiate(readFileSync(path), {});
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

/** q8 matvec GB/s of weight bytes through the lane's active kernels (best of `rounds`). */
function matvecGbps(ex, { rows, cols, reps }, rounds) {
  const m = q8Matrix(ex, rows, cols);
  ex.h_matvec(1, 1, m.w, m.wLen, m.x, cols, m.out, rows); // warm up (and tier up)
  let best = Infinity;
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now();
    for (let i = 0; i < reps; i++) ex.h_matvec(1, 1, m.w, m.wLen, m.x, cols, m.out, rows);
    best = Math.min(best, (performance.now() - t0) / reps);
  }
  return { gbps: m.wLen / best / 1e6, ms_per_matvec: best, weight_bytes: m.wLen };
}

/** One-thread read bandwidth: SIMD loads over `bytes` (best of `rounds`). */
function bandwidthGbps(ex, bytes, rounds) {
  const p = ex.h_alloc(bytes);
  new Uint8Array(ex.memory.buffer, p, bytes).fill(1);
  ex.h_read_probe(p, bytes, 1);
  let best = Infinity;
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now();
    ex.h_read_probe(p, bytes, 4);
    best = Math.min(best, (performance.now() - t0) / 4);
  }
  return bytes / best / 1e6;
}

async function decodeRun(run, cfg, modelBytes) {
  const rt = await instantiate({ bytes: readFileSync(run.lane), workers: run.workers });
  try {
    const model = await abi.loadModel(rt, modelBytes);
    const prompt = abi.encodePrompt(cfg.prompt);
    // warm-up generation (tier-up, page faults), then the measured one
    await abi.generate(rt, model, {}, prompt, cfg.warmup);
    const perRound = [];
    for (let r = 0; r < cfg.rounds; r++) {
      const out = await abi.generate(rt, model, {}, prompt, cfg.tokens);
      if (out.code !== 0) throw new Error(`${run.name}: decode returned ${out.code}`);
      // the first step only samples from the prefill's logits: it has no forward pass
      perRound.push(median(out.decodeMs.slice(1)));
    }
    const ms = Math.min(...perRound);
    const doc = { name: run.name, workers: run.workers, lane: await rt.call('tr_lane'), decode_ms_median: ms, tokens_per_s: 1000 / ms, rounds_ms: perRound };
    if (run.workers) doc.worker_counters = await abi.workerCounters(rt);
    return doc;
  } finally {
    await rt.close();
  }
}

async function main(configPath) {
  const cfg = JSON.parse(readFileSync(configPath, 'utf8'));
  const modelBytes = readFileSync(cfg.model);
  const kernels = {};
  let bandwidth = null;
  for (const [name, path] of Object.entries(cfg.harness)) {
    kernels[name] = {};
    for (const shape of cfg.matvec) {
      const ex = await loadHarness(path); // a fresh instance per shape: no memory carried over
      kernels[name][shape.name] = matvecGbps(ex, shape, cfg.rounds);
      if (bandwidth === null && ex.h_read_probe) bandwidth = bandwidthGbps(ex, cfg.probe_bytes, cfg.rounds);
    }
  }
  const runs = [];
  for (const run of cfg.runs) runs.push(await decodeRun(run, cfg, modelBytes));
  return { node: process.version, kernels, bandwidth_gbps: bandwidth, runs };
}

main(process.argv[2]).then(
  (doc) => process.stdout.write(JSON.stringify(doc) + '\n', () => process.exit(0)),
  (e) => {
    console.error(e.stack || String(e));
    process.exit(1);
  },
);
