// Unit tests of the loader's SHA-256 (crates/wasm/js/sha256.js) in node (issue 33, item 7): the
// whole-buffer hash the model goes through (`sha256Whole`: WebCrypto, or `Sha256` without it)
// and the streaming `Sha256` agree with node:crypto and crypto.subtle.digest on every size
// around the padding edges and 1 MiB, on views that start inside their buffer, on views of a
// SharedArrayBuffer (a threads lane's memory, which WebCrypto refuses unless copied), and with
// the input split at every offset of a 64-byte block. Expected digests are node:crypto's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Sha256, engineSubtle, sha256Whole } from '../../../crates/wasm/js/sha256.js';

const MIB = 1 << 20;
const SIZES = [0, 1, 3, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000, MIB - 1, MIB, MIB + 1];
const expected = (/** @type {Uint8Array} */ b) => createHash('sha256').update(b).digest('hex');
const subtleHex = async (/** @type {Uint8Array} */ b) => Buffer.from(await crypto.subtle.digest('SHA-256', b.slice())).toString('hex');

/** `n` bytes that differ from one size to the next, in a buffer `pad` bytes larger on each side. */
function bytesOf(/** @type {number} */ n, shared = false, pad = 0) {
  const buffer = shared ? new SharedArrayBuffer(n + 2 * pad) : new ArrayBuffer(n + 2 * pad);
  const all = new Uint8Array(buffer);
  for (let i = 0; i < all.length; i++) all[i] = (i * 131 + n * 7 + (i >>> 9)) & 0xff;
  return all.subarray(pad, pad + n);
}

test('node has crypto.subtle: the whole hash is WebCrypto here', () => {
  assert.equal(engineSubtle(), globalThis.crypto.subtle);
});

for (const shared of [false, true]) {
  test(`sha256Whole agrees with node:crypto and crypto.subtle on every size (${shared ? 'SharedArrayBuffer' : 'ArrayBuffer'}, views inside their buffer)`, async () => {
    for (const n of SIZES) {
      for (const pad of [0, 5]) {
        const bytes = bytesOf(n, shared, pad);
        const want = expected(bytes);
        assert.equal(await subtleHex(bytes), want, `crypto.subtle, ${n} bytes`);
        const web = await sha256Whole(bytes);
        assert.deepEqual(web, { hex: want, engine: 'webcrypto' }, `${n} bytes at ${pad}`);
        const js = await sha256Whole(bytes, null);
        assert.deepEqual(js, { hex: want, engine: 'js' }, `${n} bytes at ${pad}, no crypto.subtle`);
        assert.equal(new Sha256().update(bytes).hex(), want, `Sha256, ${n} bytes`);
      }
    }
  });
}

test('sha256Whole hashes a SharedArrayBuffer view as it was when called (WebCrypto copies first)', async () => {
  const bytes = bytesOf(4096, true);
  const want = expected(bytes);
  const pending = sha256Whole(bytes);
  bytes.fill(0); // the runtime writing its memory after the call
  assert.equal((await pending).hex, want);
});

test('sha256Whole uses the subtle it is given (a lying digest is not hidden)', async () => {
  const lie = { digest: async () => new ArrayBuffer(32) };
  assert.equal((await sha256Whole(bytesOf(10), lie)).hex, '0'.repeat(64));
});

test('Sha256 agrees with node:crypto with the input split at every offset of a 64-byte block', () => {
  for (const n of [64, 65, 127, 128, 200, 1000]) {
    const bytes = bytesOf(n);
    const want = expected(bytes);
    for (let cut = 0; cut <= Math.min(n, 128); cut++) {
      // the first cut, then steps of 64 from there (every later chunk straddles the same offset)
      const h = new Sha256().update(bytes.subarray(0, cut));
      for (let at = cut; at < n; at += 64) h.update(bytes.subarray(at, Math.min(n, at + 64)));
      assert.equal(h.hex(), want, `${n} bytes cut at ${cut}`);
      // and two cuts: every pair of offsets inside one block
      const second = Math.min(n, cut + (cut % 61) + 1);
      const g = new Sha256().update(bytes.subarray(0, cut)).update(bytes.subarray(cut, second)).update(bytes.subarray(second));
      assert.equal(g.hex(), want, `${n} bytes cut at ${cut} and ${second}`);
    }
  }
});

test('Sha256 agrees on 1 MiB +- 1 fed in chunks of every length 1..64 and 64 KiB', () => {
  for (const n of [MIB - 1, MIB, MIB + 1]) {
    const bytes = bytesOf(n);
    const want = expected(bytes);
    for (const step of [1, 7, 63, 64, 65, 1 << 16]) {
      const h = new Sha256();
      for (let at = 0; at < n; at += step) h.update(bytes.subarray(at, at + step));
      assert.equal(h.hex(), want, `${n} bytes in chunks of ${step}`);
    }
  }
});
