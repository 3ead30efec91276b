// The hash bench's measurements (pipeline/bench/hashing.py), the same code in node and in
// Chromium: MB/s of each way the loader can hash a model, per size, one figure per run.
// - js-streaming: sha256.js `Sha256.update` over 64 KiB chunks (a download as it streams);
// - webcrypto-whole: `sha256Whole` over one ArrayBuffer view (model.bytes, a lane's own memory);
// - webcrypto-whole-shared: `sha256Whole` over a SharedArrayBuffer view (a threads lane's
//   memory: copied first, the copy timed too).
// Where the page has the Cache API (Chromium; not node), a model in the loader's store (a cached
// load), each entry put there once per size, untimed:
// - cached-read-into-memory: the entry's body read into an unshared Wasm memory, chunk by chunk
//   (what the loader does with a cached copy, session.js `drainInto`; nothing hashed);
// - cached-webcrypto-in-place: then `sha256Whole` over that memory where it landed: the cached
//   load's one hash (session.js `keepStreamed`), timed alone;
// - cached-js-prepass: the entry read and hashed with `Sha256` as it streams: the pre-pass the
//   loader made before any lane started until issue 33 item 7 (fetch.js `modelCached`), for
//   comparison (a cached load then read and hashed its copy twice).
// Every figure's digest is checked against WebCrypto on the same bytes: a wrong one is an error.
import { Sha256, sha256Whole } from '../js/sha256.js';

const CHUNK = 1 << 16;
const CACHE = 'tinyrustlm-hash-bench';
const PAGE = 65536;

/** @param {number} n @param {boolean} shared */
function bytesOf(n, shared) {
  const b = new Uint8Array(shared ? new SharedArrayBuffer(n) : new ArrayBuffer(n));
  for (let i = 0; i < n; i++) b[i] = (i * 131 + (i >>> 11)) & 0xff;
  return b;
}

const hexOf = (/** @type {ArrayBuffer} */ d) => Array.from(new Uint8Array(d), (x) => x.toString(16).padStart(2, '0')).join('');

/** `f()` timed: { hex, s } (seconds). @param {() => Promise<string>} f */
async function timed(f) {
  const t = performance.now();
  const hex = await f();
  return { hex, s: (performance.now() - t) / 1e3 };
}

/** @typedef {{ bytes: Uint8Array, entry: string | null }} Input */

/**
 * The cached entry of `input` read into a fresh unshared Wasm memory (a lane's own), chunk by
 * chunk as the loader's sink writes it; the memory's view of the model.
 * @param {Input} input
 */
async function readIntoMemory(input) {
  const cache = await caches.open(CACHE);
  const hit = await cache.match(/** @type {string} */ (input.entry));
  if (!hit || !hit.body) throw new Error('the cached entry is gone');
  const n = input.bytes.length;
  const memory = new WebAssembly.Memory({ initial: Math.ceil(n / PAGE) });
  const reader = hit.body.getReader();
  let at = 0;
  for (;;) {
    const step = await reader.read();
    if (step.done) break;
    new Uint8Array(memory.buffer, at, step.value.length).set(step.value);
    at += step.value.length;
  }
  if (at !== n) throw new Error(`the cached entry holds ${at} bytes, not ${n}`);
  return new Uint8Array(memory.buffer, 0, n);
}

/** @type {Record<string, (input: Input) => Promise<{ hex: string, s: number }>>} */
const ENGINES = {
  'js-streaming': (input) =>
    timed(async () => {
      const b = input.bytes;
      const h = new Sha256();
      for (let at = 0; at < b.length; at += CHUNK) h.update(b.subarray(at, at + CHUNK));
      return h.hex();
    }),
  'webcrypto-whole': (input) => timed(async () => (await sha256Whole(input.bytes)).hex),
  'webcrypto-whole-shared': (input) => timed(async () => (await sha256Whole(input.bytes)).hex),
  'cached-read-into-memory': async (input) => {
    const t = performance.now();
    const landed = await readIntoMemory(input);
    const s = (performance.now() - t) / 1e3;
    return { hex: (await sha256Whole(landed)).hex, s }; // checked, untimed
  },
  'cached-webcrypto-in-place': async (input) => {
    const landed = await readIntoMemory(input); // untimed: the read is the row above
    return timed(async () => (await sha256Whole(landed)).hex);
  },
  'cached-js-prepass': (input) =>
    timed(async () => {
      const hit = await (await caches.open(CACHE)).match(/** @type {string} */ (input.entry));
      if (!hit || !hit.body) throw new Error('the cached entry is gone');
      const reader = hit.body.getReader();
      const h = new Sha256();
      for (;;) {
        const step = await reader.read();
        if (step.done) break;
        h.update(step.value);
      }
      return h.hex();
    }),
};

/**
 * { engine, bytes, mb_per_s: number[] } for every engine and size; one warm-up run each. The
 * `-shared` engine only with `shared` (a SharedArrayBuffer exists), the `cached-` ones only
 * where the page has the Cache API.
 * @param {{ sizes: number[], runs: number, shared: boolean }} plan
 */
export async function measure({ sizes, runs, shared }) {
  const rows = [];
  const cacheApi = typeof globalThis.caches !== 'undefined' && globalThis.isSecureContext !== false;
  for (const n of sizes) {
    const plain = bytesOf(n, false);
    const want = hexOf(await crypto.subtle.digest('SHA-256', /** @type {Uint8Array<ArrayBuffer>} */ (plain)));
    /** @type {string | null} */
    let entry = null;
    if (cacheApi) {
      entry = new URL(`/.tinyrustlm-hash-bench/${want}`, location.href).href;
      await (await caches.open(CACHE)).put(entry, new Response(/** @type {Uint8Array<ArrayBuffer>} */ (plain), { headers: { 'content-type': 'application/octet-stream' } }));
    }
    for (const [engine, run] of Object.entries(ENGINES)) {
      const isShared = engine.endsWith('-shared');
      if ((isShared && !shared) || (engine.startsWith('cached-') && entry === null)) continue;
      const bytes = isShared ? bytesOf(n, true) : plain;
      const mbPerS = [];
      for (let k = -1; k < runs; k++) {
        const { hex, s } = await run({ bytes, entry });
        if (hex !== want) throw new Error(`${engine} gives ${hex} for ${n} bytes, WebCrypto ${want}`);
        if (k >= 0) mbPerS.push(n / 1e6 / Math.max(s, 1e-6));
      }
      rows.push({ engine, bytes: n, mb_per_s: mbPerS });
    }
    if (entry !== null) await (await caches.open(CACHE)).delete(entry);
  }
  return rows;
}
