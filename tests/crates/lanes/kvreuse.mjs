// Node driver for tests/crates/lanes/test_kv_reuse.py: KV prefix reuse through the loader's
// session API (`Loaded.turn`) on one real lane; prints one JSON document, Python asserts.
//
//   node kvreuse.mjs check LANE.wasm WORKERS MODEL LANE_ID    every reuse and refusal case
// (The time to first token of a follow-up turn, with and without reuse, is the bench's:
// pipeline/bench/kvreuse.mjs.)
import { readFileSync } from 'node:fs';
import { sha256Hex } from '../../../crates/wasm/js/host.js';
import * as abi from '../../../crates/wasm/js/abi.js';
import { Loaded, cacheIdentity, IDENTITY_FIELDS } from '../../../crates/wasm/js/session.js';

const [mode, lanePath, workersArg, modelPath, laneId] = process.argv.slice(2);
const workers = Number(workersArg);
// sampling, so the PRNG restart and the repetition penalty's history both matter
const SESSION = { seed: 42n, stream: 7n, temperature: 0.9, topP: 0.95, repetitionPenalty: 1.3 };
const bytes = (text) => [...new TextEncoder().encode(text)];
const FIRST = [256, ...bytes('Hello, world. Tell me a story')];
const NEW = bytes('\nQ: and then?');

const modelBytes = readFileSync(modelPath);
// the memory of the plan (threads lane: created at it), with every session this driver keeps
// alive at once (`check`: the first session, 3 + one per identity field more after a first
// turn, and a fresh session beside each of its 5 + fields cases)
const alive = mode === 'measure' ? 2 : 1 + (3 + IDENTITY_FIELDS.length) + (5 + IDENTITY_FIELDS.length);
const { rt } = await abi.instantiateFor({ bytes: readFileSync(lanePath), workers }, modelBytes, { inPlace: false, sessions: alive });
const model = await abi.loadModel(rt, modelBytes);
const identity = await cacheIdentity({ modelSha256: await sha256Hex(modelBytes), tier: 'f32', lane: laneId });
const laneNumber = await rt.call('tr_lane');
const sessions = [];

/** A Loaded over the shared model: one more session (every one's memory size re-read). */
async function activate() {
  const lm = await Loaded.activate(rt, model, 0, { prefillChunk: 0, session: SESSION }, laneNumber, 2 ** 32);
  lm.identity = { ...identity };
  sessions.push(lm);
  for (const s of sessions) s.memoryBytes = rt.memory.buffer.byteLength;
  return lm;
}

/** The session's digest now (a window of its own: memory sizes re-read). */
async function digest(lm) {
  const d = await abi.sessionDigest(rt, lm.session);
  for (const s of sessions) s.memoryBytes = rt.memory.buffer.byteLength;
  return { position: Number(d.position), logits: d.logits.toString(16), kv: d.kv.toString(16) };
}

async function decode(lm, n) {
  const tokens = [];
  for await (const t of lm.decode({ maxTokens: n })) tokens.push(t.token);
  return tokens;
}

/** One turn then `n` tokens: { turn (reused...), digest after the turn, tokens }. */
async function turn(lm, prompt, n = 8) {
  const r = await lm.turn(prompt);
  const first = await decode(lm, 1);
  const d = await digest(lm); // after the first token: its K/V is not fed yet, the logits are
  const tokens = [...first, ...(await decode(lm, n - 1))];
  return { turn: r, digest: d, tokens };
}

/** A session after a first turn of FIRST and 5 tokens; and the conversation so far. */
async function afterFirstTurn() {
  const lm = await activate();
  const first = await turn(lm, FIRST, 5);
  return { lm, first, conversation: [...FIRST, ...first.tokens] };
}

async function fresh(prompt, n = 8) {
  const lm = await activate();
  return turn(lm, prompt, n);
}

async function check() {
  const out = { identity, cases: [] };
  const { lm, first, conversation } = await afterFirstTurn();
  out.first = first.turn;
  const prompt = [...conversation, ...NEW];
  out.cases.push({ name: 'extends', committed: lm.committedTokens().length, reuse: await turn(lm, prompt), fresh: await fresh(prompt) });
  // the same session again: the same prompt (all but its last token reused)
  out.cases.push({ name: 'same prompt', reuse: await turn(lm, prompt), fresh: await fresh(prompt) });
  // the last cached token differs (text equality is not what is compared: ids are)
  for (const at of ['first', 'last']) {
    const s = await afterFirstTurn();
    const cached = s.lm.committedTokens().length;
    const changed = [...s.conversation, ...NEW];
    const i = at === 'first' ? 1 : cached - 1;
    changed[i] = changed[i] === 120 ? 121 : 120;
    out.cases.push({ name: `differs in the ${at} cached token`, reuse: await turn(s.lm, changed), fresh: await fresh(changed) });
  }
  for (const field of IDENTITY_FIELDS) {
    const s = await afterFirstTurn();
    const value = s.lm.identity[field];
    s.lm.identity = { ...s.lm.identity, [field]: typeof value === 'number' ? value + 1 : `${value ?? ''}changed` };
    out.cases.push({ name: `identity ${field}`, field, reuse: await turn(s.lm, prompt), fresh: await fresh(prompt) });
  }
  // a plain prefill() between turns extends the cached tokens (the pending token fed first)
  const s = await afterFirstTurn();
  await s.lm.prefill(NEW);
  out.cases.push({ name: 'prefill between turns', reuse: await turn(s.lm, prompt), fresh: await fresh(prompt) });
  return out;
}

try {
  if (mode !== 'check') throw new Error(`unknown mode ${mode}`);
  const doc = await check();
  process.stdout.write(JSON.stringify({ lane: laneId, workers, ...doc }));
} finally {
  await rt.close();
}
