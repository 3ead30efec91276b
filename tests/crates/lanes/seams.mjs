// Node driver for tests/crates/lanes/test_failure_seams.py: failure injection at the seams
// (issue 33 item 6) through the loader's session API (`Loaded`) on real lanes; prints one JSON
// document, Python asserts.
//
//   node seams.mjs chunks LANE.wasm WORKERS MODEL CHUNK TILE
//       a prefill in JS chunks of CHUNK tokens over Rust tiles of TILE, cancelled inside the
//       operation at barriers of every forward (threads lane, tr_fault_cancel_at_barrier) or
//       after every chunk (other lanes): what prefill() reports committed, the session's
//       position, and the digest and tokens after resuming
//   node seams.mjs die LANE.wasm WORKERS MODEL FALLBACK.wasm VICTIM MANIFEST.json
//       worker VICTIM (or 'leader') killed mid-prefill: the error, the calls after it, the lane
//       failure record, the lane choice of the next load, and the fallback lane's run
import { readFileSync } from 'node:fs';
import { instantiate, sha256Hex } from '../../../crates/wasm/js/host.js';
import * as abi from '../../../crates/wasm/js/abi.js';
import { Loaded, cacheIdentity } from '../../../crates/wasm/js/session.js';
import { laneFailureRecord, forgetLaneFailures } from '../../../crates/wasm/js/errors.js';
import { chooseLanes, runProbes } from '../../../crates/wasm/js/choice.js';

const bytes = (text) => [...new TextEncoder().encode(text)];
const PROMPT = [256, ...bytes('Once upon a time, in a land of tiles and chunks, a model read only its own rows.')];
const DECODED = 4;

const [mode, ...args] = process.argv.slice(2);

/** A Loaded over `model` on `rt` with a fresh session, `chunk` tokens per call, tile `tile`. */
async function activate(rt, model, chunk, tile, sessions) {
  const lm = await Loaded.activate(rt, model, 0, { prefillChunk: chunk, session: {} }, await rt.call('tr_lane'), 2 ** 32);
  sessions.push(lm);
  for (const s of sessions) s.memoryBytes = rt.memory.buffer.byteLength;
  if (tile !== null) {
    const code = await lm.call('tr_session_prefill_tile', lm.session, tile);
    if (code !== 0) throw new Error(`tr_session_prefill_tile(${tile}) returned ${code}`);
  }
  return lm;
}

async function digest(lm) {
  const d = await abi.sessionDigest(lm.rt, lm.session);
  lm.memoryBytes = lm.rt.memory.buffer.byteLength;
  return { position: Number(d.position), logits: d.logits.toString(16), kv: d.kv.toString(16) };
}

async function decode(lm, n) {
  const tokens = [];
  for await (const t of lm.decode({ maxTokens: n })) tokens.push(t.token);
  return tokens;
}

/** After a cancelled prefill: what it reported, the session's state, then the resumed run. */
async function afterCancel(lm, r) {
  const at = await digest(lm);
  const out = { cancelled: r.cancelled, committed: r.committed, position: at.position, cache: lm.committedTokens().length };
  const rest = await lm.prefill(PROMPT.slice(r.committed));
  out.resumed = { committed: rest.committed, digest: await digest(lm), tokens: await decode(lm, DECODED) };
  return out;
}

async function chunks(lanePath, workers, modelPath, chunkArg, tileArg) {
  const [chunk, tile] = [Number(chunkArg), Number(tileArg)];
  const modelBytes = readFileSync(modelPath);
  // the threads lane's memory at the plan: a session at a time (each freed), but its tile over
  // the plan's (DEFAULT_PREFILL_TILE, 16) reallocates its activations outside the plan: room for
  // a session's parts once more per 16 tokens of the tile
  const room = 2 + Math.ceil(tile / 16);
  const { rt } = /** @type {{ rt: any }} */ (await abi.instantiateFor({ bytes: readFileSync(lanePath), workers: Number(workers) }, modelBytes, { inPlace: false, sessions: room }));
  const sessions = [];
  try {
    const model = await abi.loadModel(rt, modelBytes);
    const ref = await activate(rt, model, chunk, tile, sessions);
    const threads = ref.threads;
    const before = threads ? (await abi.workerCounters(rt)).barriers : 0;
    const whole = await ref.prefill(PROMPT);
    const barriers = threads ? (await abi.workerCounters(rt)).barriers - before : 0;
    const doc = { chunk, tile, threads, prompt: PROMPT.length, barriers, reference: { ...whole, digest: await digest(ref), tokens: await decode(ref, DECODED) }, trials: [] };
    await rt.call('tr_session_free', ref.session);
    if (threads) {
      // 17 barriers per forward of the `small` model: cancel at the first, a middle and the last
      // barrier of every forward (every tile of every chunk)
      const per = 17;
      for (let k = 1; k <= barriers; k++) {
        if (![1, 9, per].includes(((k - 1) % per) + 1)) continue;
        const lm = await activate(rt, model, chunk, tile, sessions);
        await lm.call('tr_fault_cancel_at_barrier', k);
        const r = await lm.prefill(PROMPT);
        await lm.call('tr_fault_cancel_at_barrier', 0);
        doc.trials.push({ at: k, ...(await afterCancel(lm, r)) });
        await rt.call('tr_session_free', lm.session);
      }
    } else {
      // calls run whole on this thread: the cancel lands between chunks, after the j-th
      for (let j = 1; j * chunk < PROMPT.length; j++) {
        const lm = await activate(rt, model, chunk, tile, sessions);
        const r = await lm.prefill(PROMPT, { onProgress: (done) => done >= j * chunk && lm.cancel() });
        doc.trials.push({ at: j, ...(await afterCancel(lm, r)) });
        await rt.call('tr_session_free', lm.session);
      }
    }
    return doc;
  } finally {
    await rt.close();
  }
}

/** `promise` settled: { ok, value } or { ok: false, name, code, detail }. */
async function settle(promise) {
  try {
    return { ok: true, value: await promise };
  } catch (e) {
    return { ok: false, name: e.name, code: e.code, message: String(e.message), detail: e.detail ?? null };
  }
}

async function die(lanePath, workers, modelPath, fallbackPath, victim, manifestPath) {
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
  const threadsId = manifest.artifacts.find((a) => a.requires_cross_origin_isolation).id;
  forgetLaneFailures();
  const modelBytes = readFileSync(modelPath);
  // the reference session and the one whose worker dies, alive at once
  const { rt } = /** @type {{ rt: any }} */ (await abi.instantiateFor({ bytes: readFileSync(lanePath), workers: Number(workers), livenessMs: 1500 }, modelBytes, { inPlace: false, sessions: 2 }));
  const doc = { prompt: PROMPT.length };
  try {
    const model = await abi.loadModel(rt, modelBytes);
    const sessions = [];
    const ref = await activate(rt, model, 16, null, sessions); // what the lane gives before the death
    await ref.prefill(PROMPT);
    doc.reference = await decode(ref, DECODED);
    const lm = await activate(rt, model, 1, null, sessions);
    lm.artifactId = threadsId;
    let killed = null;
    const kill = (committed) => {
      if (committed < 5 || killed !== null) return;
      killed = victim === 'leader' ? rt.killLeader() : rt.kill(Number(victim));
    };
    doc.prefill = await settle(lm.prefill(PROMPT, { onProgress: kill }));
    await killed;
    // every later call fails the same way, at once (bounded by the driver's timeout: never a hang)
    doc.again = await settle(lm.prefill([65]));
    doc.decode = await settle(decode(lm, 1));
    doc.record = laneFailureRecord();
  } finally {
    await rt.close();
  }
  // the next load: the failed lane is skipped, the next one is chosen; retryFailedLanes tries it
  const probes = await runProbes();
  const next = chooseLanes(manifest, probes, { isolation: true });
  const retry = chooseLanes(manifest, probes, { isolation: true, failed: {} });
  doc.next = { candidates: next.candidates.map((a) => a.id), attempts: next.attempts };
  doc.retry = retry.candidates.map((a) => a.id);
  const lower = await instantiate({ bytes: readFileSync(fallbackPath) });
  try {
    const model = await abi.loadModel(lower, modelBytes);
    const lm = await activate(lower, model, 16, null, []);
    lm.identity = await cacheIdentity({ modelSha256: await sha256Hex(modelBytes), tier: 'f32', lane: doc.next.candidates[0] });
    const fed = await lm.prefill(PROMPT);
    doc.fallback = { lane: await lower.call('tr_lane'), committed: fed.committed, tokens: await decode(lm, DECODED) };
  } finally {
    await lower.close();
  }
  return doc;
}

const modes = { chunks, die };
if (!(mode in modes)) throw new Error(`unknown mode ${mode}`);
process.stdout.write(JSON.stringify(await modes[mode](...args)));
