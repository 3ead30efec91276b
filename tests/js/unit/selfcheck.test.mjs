// fetch.js's streamed hash is first checked against crypto.subtle.digest (once per process, so
// in its own file): here digest lies before the first check, so every hashed download is
// refused with HashSelfCheck before a byte is read, and a download that hashes nothing
// (hash: null; the caller hashes it whole) is not checked at all.
import { test } from 'node:test';
import assert from 'node:assert/strict';

Object.defineProperty(globalThis.crypto.subtle, 'digest', { value: async () => new ArrayBuffer(32), configurable: true });
const { drain, streamingHashChecked } = /** @type {any} */ (await import('../../../crates/wasm/js/fetch.js'));

const URL_A = new URL('https://cdn.invalid/a.wasm');

/** A Source of one chunk, recording reads and cancels. */
function one() {
  const log = { reads: 0, cancelled: 0 };
  let sent = false;
  return {
    log,
    length: 3,
    read: async () => (log.reads++, sent ? { done: true } : ((sent = true), { done: false, value: Uint8Array.of(1, 2, 3) })),
    cancel: () => void log.cancelled++,
  };
}

test('a download that hashes nothing is read without the check', async () => {
  const source = one();
  const got = await drain({}, source, { what: 'model', url: URL_A, limit: 3, phase: 'model', hash: null });
  assert.deepEqual([got.length, got.sha256, source.log.cancelled], [3, null, 0]);
});

test('with a lying digest, a hashed download is HashSelfCheck, cancelled before any read', async () => {
  const source = one();
  await assert.rejects(drain({}, source, { what: 'module', url: URL_A, limit: 3, phase: 'module' }), (/** @type {any} */ e) => {
    assert.equal(e.code, 'HashSelfCheck');
    assert.match(e.message, /^HashSelfCheck: the streaming SHA-256 gives [0-9a-f]{64} for a 0-byte input, crypto\.subtle\.digest 0{64}: no streamed hash can be trusted in this engine$/);
    return true;
  });
  assert.deepEqual(source.log, { reads: 0, cancelled: 1 });
  await assert.rejects(streamingHashChecked(), { code: 'HashSelfCheck' });
});
