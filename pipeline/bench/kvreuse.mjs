// Time to first token of a follow-up turn with and without KV prefix reuse (issue 33 item 5),
// through the loader's session API (`Loaded.turn`) on one real lane in node: a 512-token
// conversation (a prompt of 511 tokens and one generated token) is cached, then a turn of 16
// new tokens after it, timed to its first token (`reuse`: 512 kept, 17 fed — the pending token
// and the new ones), beside the same prompt in a fresh session (`scratch`: all 528 fed). The two
// must sample the same tokens. Prints one JSON document.
// Used by `nox -s bench` (pipeline/bench/lanes.py: the bench document's `kv_reuse`, one sample per
// repetition) and by tests/crates/lanes/test_kv_reuse.py (the reuse counts, equal tokens).
//
//   node kvreuse.mjs LANE.wasm WORKERS MODEL LANE_ID
import { readFileSync } from 'node:fs';
import { sha256Hex } from '../../crates/wasm/js/host.js';
import * as abi from '../../crates/wasm/js/abi.js';
import { Loaded, cacheIdentity } from '../../crates/wasm/js/session.js';

// sampling, so the PRNG restart and the repetition penalty's history both matter
const SESSION = { seed: 42n, stream: 7n, temperature: 0.9, topP: 0.95, repetitionPenalty: 1.3 };
const CONVERSATION = 512;
const FOLLOW_UP = 'Then what? Tell.'; // 16 new tokens
const bytes = (text) => [...new TextEncoder().encode(text)];

async function main() {
  const [lanePath, workersArg, modelPath, laneId] = process.argv.slice(2);
  const workers = Number(workersArg);
  const modelBytes = readFileSync(modelPath);
  // the memory of the plan (threads lane: created at it) with both sessions alive at once
  const { rt } = await abi.instantiateFor({ bytes: readFileSync(lanePath), workers }, modelBytes, { inPlace: false, sessions: 2 });
  try {
    const model = await abi.loadModel(rt, modelBytes);
    const identity = await cacheIdentity({ modelSha256: await sha256Hex(modelBytes), tier: 'f32', lane: laneId });
    const laneNumber = await rt.call('tr_lane');
    const sessions = [];
    /** A Loaded over the shared model: one more session (every one's memory size re-read). */
    const activate = async () => {
      const lm = await Loaded.activate(rt, model, 0, { prefillChunk: 0, session: SESSION }, laneNumber, 2 ** 32);
      lm.identity = { ...identity };
      sessions.push(lm);
      for (const s of sessions) s.memoryBytes = rt.memory.buffer.byteLength;
      return lm;
    };
    /** One turn, then `n` tokens; the time to the first of them. */
    const turn = async (lm, prompt, n) => {
      const t0 = performance.now();
      const r = await lm.turn(prompt);
      const tokens = [];
      let ttftMs = 0;
      for await (const t of lm.decode({ maxTokens: n })) {
        if (tokens.length === 0) ttftMs = performance.now() - t0;
        tokens.push(t.token);
      }
      return { ...r, ttft_ms: ttftMs, tokens };
    };
    const text = 'The quick brown fox jumps over the lazy dog. '.repeat(12).slice(0, CONVERSATION - 2);
    const opening = [abi.BOS, ...bytes(text)];
    const lm = await activate();
    const conversation = [...opening, ...(await turn(lm, opening, 2)).tokens].slice(0, CONVERSATION);
    const prompt = [...conversation, ...bytes(FOLLOW_UP)];
    await turn(lm, conversation, 1); // the conversation cached (511 of it, the last one pending)
    const reuse = await turn(lm, prompt, 2);
    const scratch = await turn(await activate(), prompt, 2);
    return { lane: laneId, workers, prompt_tokens: prompt.length, conversation_tokens: CONVERSATION, reuse, scratch };
  } finally {
    await rt.close();
  }
}

main().then(
  (doc) => process.stdout.write(JSON.stringify(doc) + '\n', () => process.exit(0)),
  (e) => {
    console.error(e.stack || String(e));
    process.exit(1);
  },
);
