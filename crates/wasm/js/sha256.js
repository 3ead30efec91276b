// Incremental SHA-256 (FIPS 180-4) for hashing a download while it streams: WebCrypto's
// digest() needs every byte at once. ES module, no dependencies. Before the loader trusts its
// first streamed hash, `sha256SelfCheck()` compares this implementation with
// crypto.subtle.digest once (fetch.js `drain`, session.js `modelSpec`); where an engine has no
// crypto.subtle the check is skipped (and said so by its result).
//
// Hashing a model (issue 33, item 7) goes through `sha256Whole` instead: once the bytes are
// contiguous (model.bytes, or a streamed model all in Wasm memory) crypto.subtle.digest hashes
// them at native speed. Measured (64 MiB, 64 KiB chunks, node 24 on the 2-core CI machine,
// MB/s median of 5): this class ~156, a rewrite with the state in locals and one loop over
// all blocks ~156 (V8 already keeps this one in registers: no gain), a Rust SHA-256 compiled
// to Wasm ~240 scalar / ~250 with simd128 (the rounds are serial; SIMD only helps the
// message schedule), WebCrypto ~870-1700. No incremental software hash reaches 500 MB/s in
// an engine here, so the streamed model is hashed whole after it lands and before
// tr_model_load (pipeline/bench/hashing.py measures every engine in node and Chromium);
// without crypto.subtle (an insecure context) this class hashes it while it streams.

const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

export class Sha256 {
  constructor() {
    this.h = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
    this.block = new Uint8Array(64);
    this.filled = 0;
    this.length = 0; // bytes seen (a Number is exact up to 2^53)
    this.w = new Int32Array(64);
  }

  /**
   * Feeds `bytes`.
   * @param {Uint8Array} bytes
   */
  update(bytes) {
    let at = 0;
    this.length += bytes.length;
    if (this.filled > 0) {
      const take = Math.min(64 - this.filled, bytes.length);
      this.block.set(bytes.subarray(0, take), this.filled);
      this.filled += take;
      at = take;
      if (this.filled < 64) return this;
      this.compress(this.block, 0);
      this.filled = 0;
    }
    for (; at + 64 <= bytes.length; at += 64) this.compress(bytes, at);
    this.block.set(bytes.subarray(at), 0);
    this.filled = bytes.length - at;
    return this;
  }

  /** The lowercase hex digest; the object must not be used afterwards. */
  hex() {
    const bits = this.length * 8;
    const pad = new Uint8Array(((this.filled < 56 ? 56 : 120) - this.filled) + 8);
    pad[0] = 0x80;
    const v = new DataView(pad.buffer);
    v.setUint32(pad.length - 8, Math.floor(bits / 2 ** 32));
    v.setUint32(pad.length - 4, bits >>> 0);
    const length = this.length;
    this.update(pad);
    this.length = length;
    return Array.from(this.h, (x) => x.toString(16).padStart(8, '0')).join('');
  }

  /**
   * One 64-byte block of `bytes` from `at` into the state.
   * @param {Uint8Array} bytes
   * @param {number} at
   */
  compress(bytes, at) {
    const w = this.w;
    for (let i = 0; i < 16; i++) {
      const j = at + 4 * i;
      w[i] = (bytes[j] << 24) | (bytes[j + 1] << 16) | (bytes[j + 2] << 8) | bytes[j + 3];
    }
    for (let i = 16; i < 64; i++) {
      const a = w[i - 15];
      const b = w[i - 2];
      const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
      const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
      w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
    }
    const h = this.h;
    let a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (let i = 0; i < 64; i++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const ch = (e & f) ^ (~e & g);
      const t1 = (k + S1 + ch + K[i] + w[i]) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const maj = (a & b) ^ (a & c) ^ (b & c);
      const t2 = (S0 + maj) | 0;
      k = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += k;
  }
}

// Inputs around the padding edges (55, 56, 64 bytes; two blocks), fed in uneven chunks so every
// path of `update` (a partly filled block, whole blocks, a tail) is taken.
const SELF_CHECK_LENGTHS = [0, 1, 3, 55, 56, 57, 63, 64, 65, 119, 120, 128, 1000];

/**
 * Compares `Sha256` with `subtle.digest('SHA-256')` on SELF_CHECK_LENGTHS; resolves to
 * 'checked', or 'unavailable' without a `subtle`; rejects with an Error naming the first input
 * whose digests differ.
 * @param {Pick<SubtleCrypto, 'digest'> | null | undefined} subtle
 * @returns {Promise<'checked' | 'unavailable'>}
 */
export async function checkSha256Against(subtle) {
  if (!subtle || typeof subtle.digest !== 'function') return 'unavailable';
  for (const n of SELF_CHECK_LENGTHS) {
    const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 131 + n * 7) & 0xff);
    const hash = new Sha256();
    for (let at = 0, k = 0; at < n; k++) {
      const step = Math.min(n - at, 1 + ((k * 37) % 70));
      hash.update(bytes.subarray(at, at + step));
      at += step;
    }
    const ours = hash.hex();
    const theirs = Array.from(new Uint8Array(await subtle.digest('SHA-256', bytes)), (b) => b.toString(16).padStart(2, '0')).join('');
    if (ours !== theirs) throw new Error(`the streaming SHA-256 gives ${ours} for a ${n}-byte input, crypto.subtle.digest ${theirs}`);
  }
  return 'checked';
}

/** @type {Promise<'checked' | 'unavailable'> | null} */
let selfCheck = null;

/** `checkSha256Against(globalThis.crypto.subtle)`, run once per module instance. */
export function sha256SelfCheck() {
  if (selfCheck === null) selfCheck = checkSha256Against(globalThis.crypto && globalThis.crypto.subtle);
  return selfCheck;
}

/** @param {ArrayBufferLike} buffer */
export const isShared = (buffer) => Object.prototype.toString.call(buffer) === '[object SharedArrayBuffer]';

/** @param {Uint8Array} digest */
const hexOf = (digest) => Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');

/** The engine's crypto.subtle, or null where there is none (an insecure context). */
export function engineSubtle() {
  const c = globalThis.crypto;
  return c && c.subtle && typeof c.subtle.digest === 'function' ? c.subtle : null;
}

/**
 * The SHA-256 of `bytes`, all of them at once: crypto.subtle.digest (native speed) when
 * `subtle` is given, else `Sha256`. WebCrypto refuses a view of a SharedArrayBuffer (a threads
 * lane's memory), so such a view is copied first (a transient copy of `bytes.length`; digest
 * takes its own copy synchronously, so `bytes` may change once the promise is returned).
 * Resolves to { hex, engine }.
 * @param {Uint8Array} bytes
 * @param {Pick<SubtleCrypto, 'digest'> | null} [subtle]
 * @returns {Promise<{ hex: string, engine: 'webcrypto' | 'js' }>}
 */
export async function sha256Whole(bytes, subtle = engineSubtle()) {
  if (!subtle) return { hex: new Sha256().update(bytes).hex(), engine: 'js' };
  // TypedArray#set copies a shared view ~4x faster than #slice (node 24: ~1800 vs ~420 MB/s)
  const view = isShared(bytes.buffer) ? new Uint8Array(bytes.length) : bytes;
  if (view !== bytes) view.set(bytes);
  const digest = await subtle.digest('SHA-256', /** @type {Uint8Array<ArrayBuffer>} */ (view));
  return { hex: hexOf(new Uint8Array(digest)), engine: 'webcrypto' };
}
