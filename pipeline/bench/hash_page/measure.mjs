// The hash bench's measurements (pipeline/bench/hashing.py), the same code in node and in
// Chromium: MB/s of each way the loader can hash a model, per size, one figure per run.
// - js-streaming: sha256.js `Sha256.update` over 64 KiB chunks (a download as it streams);
// - webcrypto-whole: `sha256Whole` over one ArrayBuffer view (model.bytes, a lane's own memory);
// - webcrypto-whole-shared: `sha256Whole` over a SharedArrayBuffer view (a threads lane's
//   memory: copied first, the copy timed too).
// Every figure's digest is checked against WebCrypto on the same bytes: a wrong one is an error.
import { Sha256, sha256Whole } from '../js/sha256.js';

const CHUNK = 1 << 16;

/** @param {number} n @param {boolean} shared */
function bytesOf(n, shared) {
  const b = new Uint8Array(shared ? new SharedArrayBuffer(n) : new ArrayBuffer(n));
  for (let i = 0; i < n; i++) b[i] = (i * 131 + (i >>> 11)) & 0xff;
  return b;
}

const hexOf = (/** @type {ArrayBuffer} */ d) => Array.from(new Uint8Array(d), (x) => x.toString(16).padStart(2, '0')).join('');

/** @type {Record<string, (b: Uint8Array) => Promise<string>>} */
const ENGINES = {
  'js-streaming': async (b) => {
    const h = new Sha256();
    for (let at = 0; at < b.length; at += CHUNK) h.update(b.subarray(at, at + CHUNK));
    return h.hex();
  },
  'webcrypto-whole': async (b) => (await sha256Whole(b)).hex,
  'webcrypto-whole-shared': async (b) => (await sha256Whole(b)).hex,
};

/**
 * { engine, bytes, mb_per_s: number[] } for every engine and size; one warm-up run each.
 * @param {{ sizes: number[], runs: number, shared: boolean }} plan
 */
export async function measure({ sizes, runs, shared }) {
  const rows = [];
  for (const n of sizes) {
    const plain = bytesOf(n, false);
    const want = hexOf(await crypto.subtle.digest('SHA-256', /** @type {Uint8Array<ArrayBuffer>} */ (plain)));
    for (const [engine, run] of Object.entries(ENGINES)) {
      const isShared = engine.endsWith('-shared');
      if (isShared && !shared) continue;
      const bytes = isShared ? bytesOf(n, true) : plain;
      const mbPerS = [];
      for (let k = -1; k < runs; k++) {
        const t = performance.now();
        const got = await run(bytes);
        const s = (performance.now() - t) / 1e3;
        if (got !== want) throw new Error(`${engine} gives ${got} for ${n} bytes, WebCrypto ${want}`);
        if (k >= 0) mbPerS.push(n / 1e6 / Math.max(s, 1e-6));
      }
      rows.push({ engine, bytes: n, mb_per_s: mbPerS });
    }
  }
  return rows;
}
