// Unit tests of the loader's fetch room (crates/wasm/js/fetch.js) in node: downloads, their
// bounds and progress, and the content-addressed cache (a folder in node; the Cache API one is
// in browser.test.mjs). Digests are node:crypto's, bounds and progress are written out from
// the module's contract (its header comment; README "The loader"), never taken from a run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync, existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CACHE_NAME, MANIFEST_CAP, SIGNATURE_CAP, defaultFetch, drain, fetchCapped, fetchSigned, fromStore, memoryStream, open, openStore, responseSource, sha256Hex, storeQuietly } from '../../../crates/wasm/js/fetch.js';

const sha256 = (/** @type {Uint8Array} */ data) => createHash('sha256').update(data).digest('hex');
const URL_A = new URL('https://cdn.invalid/a.wasm');
const bytesOf = (/** @type {number} */ n, seed = 1) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);
const tmp = () => mkdtempSync(join(tmpdir(), 'trl-fetch-'));

/** A Source over `chunks`, recording reads and cancels; `length` as a Content-Length would say. */
function chunked(/** @type {Uint8Array[]} */ chunks, /** @type {number | null} */ length = null, /** @type {Error | null} */ failAt = null) {
  const log = { reads: 0, cancelled: 0 };
  let i = 0;
  return {
    log,
    length,
    read: async () => {
      log.reads++;
      if (failAt && i === chunks.length) throw failAt;
      return i < chunks.length ? { done: false, value: chunks[i++] } : { done: true };
    },
    cancel: () => {
      log.cancelled++;
    },
  };
}

/** o.onProgress recording every event. */
function progressLog() {
  /** @type {any[]} */
  const events = [];
  return { events, onProgress: (/** @type {any} */ p) => events.push(p) };
}

test('the bounds and the cache name', () => {
  assert.equal(MANIFEST_CAP, 4 * 1024 * 1024);
  assert.equal(SIGNATURE_CAP, 1024 * 1024);
  assert.equal(CACHE_NAME, 'tinyrustlm-cas-v1');
});

test('drain gathers the chunks, hashes them and reports progress up to the total', async () => {
  const parts = [bytesOf(3), bytesOf(4, 2), bytesOf(5, 3)];
  const whole = Uint8Array.from([...parts[0], ...parts[1], ...parts[2]]);
  const p = progressLog();
  const got = await drain(p, chunked(parts, 12), { what: 'module', url: URL_A, limit: 12, phase: 'module' });
  assert.deepEqual(got.bytes, whole);
  assert.equal(got.length, 12);
  assert.equal(got.sha256, sha256(whole));
  const url = URL_A.href;
  assert.deepEqual(p.events, [0, 3, 7, 12].map((loaded) => ({ phase: 'module', loaded, total: 12, url })));
});

test('drain: one chunk is returned as it came; no chunk is empty bytes', async () => {
  const only = bytesOf(8);
  const got = await drain({}, chunked([only]), { what: 'm', url: URL_A, limit: 8, phase: 'x' });
  assert.equal(got.bytes, only);
  const none = await drain({}, chunked([]), { what: 'm', url: URL_A, limit: 8, phase: 'x' });
  assert.deepEqual(none.bytes, new Uint8Array(0));
  assert.equal(none.length, 0);
  assert.equal(none.sha256, sha256(new Uint8Array(0)));
});

test('drain without a length: progress totals what arrived, and ends at it', async () => {
  const p = progressLog();
  await drain(p, chunked([bytesOf(2), bytesOf(3)]), { what: 'm', url: URL_A, limit: 100, phase: 'model' });
  assert.deepEqual(p.events.map((e) => [e.loaded, e.total]), [[0, 0], [2, 2], [5, 5], [5, 5]]);
});

test('drain: a body shorter than its length ends progress at what arrived; a longer one stops at the total', async () => {
  let p = progressLog();
  await drain(p, chunked([bytesOf(2)], 5), { what: 'm', url: URL_A, limit: 10, phase: 'model' });
  assert.deepEqual(p.events.map((e) => [e.loaded, e.total]), [[0, 5], [2, 5], [2, 5]]);
  p = progressLog();
  await drain(p, chunked([bytesOf(2), bytesOf(2), bytesOf(2)]), { what: 'm', url: URL_A, limit: 10, phase: 'model', total: 4 });
  assert.deepEqual(p.events.map((e) => [e.loaded, e.total]), [[0, 4], [2, 4], [4, 4], [6, 4]]);
});

test('drain refuses a declared length above the bound before reading', async () => {
  for (const [length, limit] of [[11, 10], [1 << 30, 1 << 20]]) {
    const source = chunked([bytesOf(3)], length);
    await assert.rejects(drain({}, source, { what: 'the model', url: URL_A, limit, phase: 'model' }), (/** @type {any} */ e) => {
      assert.equal(e.code, 'BoundExceeded');
      assert.equal(e.message, `BoundExceeded: the model ${URL_A.href} is larger than its bound of ${limit} bytes (${length} seen); the download was stopped there`);
      assert.deepEqual(e.detail, { url: URL_A.href, limit });
      return true;
    });
    assert.deepEqual(source.log, { reads: 0, cancelled: 1 });
  }
  // a length exactly at the bound is read
  const source = chunked([bytesOf(10)], 10);
  assert.equal((await drain({}, source, { what: 'm', url: URL_A, limit: 10, phase: 'x' })).length, 10);
  assert.equal(source.log.cancelled, 0);
});

test('drain stops at the chunk that crosses the bound, never after it', async () => {
  const source = chunked([bytesOf(6), bytesOf(4), bytesOf(1), bytesOf(100)]);
  const sunk = /** @type {number[]} */ ([]);
  await assert.rejects(
    drain({}, source, { what: 'module', url: URL_A, limit: 10, phase: 'x', sink: async (/** @type {Uint8Array} */ c, /** @type {number} */ at) => void sunk.push(at, c.length) }),
    (/** @type {any} */ e) => {
      assert.equal(e.message, `BoundExceeded: module ${URL_A.href} is larger than its bound of 10 bytes (11 seen); the download was stopped there`);
      return true;
    },
  );
  assert.deepEqual(sunk, [0, 6, 6, 4]); // the crossing chunk never reaches the sink
  assert.deepEqual(source.log, { reads: 3, cancelled: 1 });
});

test('drain with a sink: the chunks go there with their offsets, bytes is null', async () => {
  const parts = [bytesOf(4), bytesOf(4, 9)];
  const seen = /** @type {[number, number[]][]} */ ([]);
  const got = await drain({}, chunked(parts), { what: 'm', url: URL_A, limit: 8, phase: 'x', sink: async (/** @type {Uint8Array} */ c, /** @type {number} */ at) => void seen.push([at, [...c]]) });
  assert.equal(got.bytes, null);
  assert.deepEqual(seen, [[0, [...parts[0]]], [4, [...parts[1]]]]);
  assert.equal(got.sha256, sha256(Uint8Array.from([...parts[0], ...parts[1]])));
});

test('drain resumed after `start` bytes: they count toward the bound, the progress and the hash', async () => {
  const head = bytesOf(5);
  const tail = bytesOf(3, 7);
  const { Sha256 } = await import('../../../crates/wasm/js/sha256.js');
  const hash = new Sha256();
  hash.update(head);
  const p = progressLog();
  const got = await drain(p, chunked([tail]), { what: 'm', url: URL_A, limit: 8, phase: 'model', total: 8, start: 5, hash });
  assert.equal(got.length, 8);
  assert.deepEqual(got.bytes, tail);
  assert.equal(got.sha256, sha256(Uint8Array.from([...head, ...tail])));
  assert.deepEqual(p.events.map((e) => e.loaded), [5, 8]);
  await assert.rejects(drain({}, chunked([bytesOf(4)]), { what: 'm', url: URL_A, limit: 8, phase: 'x', start: 5 }), { code: 'BoundExceeded' });
});

test('drain: a failing read is FetchFailed naming the file', async () => {
  const source = chunked([bytesOf(2)], null, new Error('connection reset'));
  await assert.rejects(drain({}, source, { what: 'model', url: URL_A, limit: 10, phase: 'x' }), (/** @type {any} */ e) => {
    assert.equal(e.message, `FetchFailed: model ${URL_A.href}: connection reset`);
    assert.deepEqual(e.detail, { url: URL_A.href });
    return true;
  });
  const bare = chunked([], null, /** @type {any} */ ('reset'));
  await assert.rejects(drain({}, bare, { what: 'model', url: URL_A, limit: 10, phase: 'x' }), { message: `FetchFailed: model ${URL_A.href}: reset` });
});

test('responseSource reads a streamed body and its Content-Length', async () => {
  const body = bytesOf(10);
  const source = responseSource(new Response(body, { headers: { 'content-length': '10' } }));
  assert.equal(source.length, 10);
  const got = await drain({}, source, { what: 'm', url: URL_A, limit: 10, phase: 'x' });
  assert.deepEqual(got.bytes, body);
  for (const header of ['10x', '', '-1', '1e3', '0x10']) {
    assert.equal(responseSource(new Response(body, { headers: { 'content-length': header } })).length, null, header);
  }
  assert.equal(responseSource(new Response(body)).length, null);
  assert.equal(responseSource({ headers: null, body: new Response(body).body }).length, null);
  // cancelling a streamed body does not throw, even when the stream's cancel fails
  const failing = { headers: new Headers(), body: { getReader: () => ({ read: async () => ({ done: true }), cancel: () => Promise.reject(new Error('x')) }) } };
  assert.equal(responseSource(failing).cancel(), undefined);
});

test('responseSource without streams: the whole body in one chunk, then done', async () => {
  const body = bytesOf(7);
  let calls = 0;
  const response = {
    headers: new Headers({ 'content-length': '7' }),
    body: null,
    arrayBuffer: async () => {
      calls++;
      return body.buffer;
    },
  };
  const source = responseSource(response);
  assert.equal(source.length, 7);
  assert.deepEqual(await source.read(), { done: false, value: body });
  assert.deepEqual(await source.read(), { done: true });
  assert.deepEqual(await source.read(), { done: true });
  assert.equal(calls, 1);
  assert.equal(source.cancel(), undefined);
});

test('open: the fetch option, its failures and HTTP errors', async () => {
  const body = bytesOf(5);
  const seen = /** @type {string[]} */ ([]);
  const o = { fetch: async (/** @type {URL} */ url) => (seen.push(url.href), new Response(body, { headers: { 'content-length': '5' } })) };
  const source = await open(o, URL_A, 'module');
  assert.equal(source.length, 5);
  assert.deepEqual(seen, [URL_A.href]);
  const thrown = { fetch: async () => { throw new TypeError('network down'); } };
  await assert.rejects(open(thrown, URL_A, 'module'), (/** @type {any} */ e) => {
    assert.equal(e.message, `FetchFailed: module ${URL_A.href}: network down`);
    assert.deepEqual(e.detail, { url: URL_A.href });
    return true;
  });
  const status = { fetch: async () => new Response('gone', { status: 410 }) };
  await assert.rejects(open(status, URL_A, 'model'), (/** @type {any} */ e) => {
    assert.equal(e.message, `FetchFailed: model ${URL_A.href}: HTTP 410`);
    assert.deepEqual(e.detail, { url: URL_A.href, status: 410 });
    return true;
  });
  // a file: URL with another fetch goes to that fetch
  const file = pathToFileURL(join(tmp(), 'x.bin'));
  const other = { fetch: async () => new Response(body) };
  assert.deepEqual((await drain({}, await open(other, file, 'm'), { what: 'm', url: file, limit: 5, phase: 'x' })).bytes, body);
});

test('open: node reads file: URLs itself with the default fetch', async () => {
  const dir = tmp();
  const data = bytesOf(200_000);
  writeFileSync(join(dir, 'm.bin'), data);
  const url = pathToFileURL(join(dir, 'm.bin'));
  const source = await open({ fetch: defaultFetch }, url, 'model');
  assert.equal(source.length, 200_000);
  const got = await drain({}, source, { what: 'model', url, limit: 200_000, phase: 'x' });
  assert.equal(got.sha256, sha256(data));
  // bounded: stopped there, and the stream is closed
  const small = await open({ fetch: defaultFetch }, url, 'model');
  await assert.rejects(drain({}, small, { what: 'model', url, limit: 1000, phase: 'x' }), { code: 'BoundExceeded' });
  const missing = pathToFileURL(join(dir, 'none.bin'));
  await assert.rejects(open({ fetch: defaultFetch }, missing, 'model'), (/** @type {any} */ e) => {
    assert.equal(e.code, 'FetchFailed');
    assert.ok(e.message.startsWith(`FetchFailed: model ${missing.href}: ENOENT`), e.message);
    assert.deepEqual(e.detail, { url: missing.href });
    return true;
  });
  // a folder has no size: read like a body without a length (and fails to read)
  const folder = await open({ fetch: defaultFetch }, pathToFileURL(dir), 'model');
  assert.equal(folder.length, null);
  await assert.rejects(drain({}, folder, { what: 'model', url, limit: 10, phase: 'x' }), { code: 'FetchFailed' });
});

test('defaultFetch is the global fetch', async () => {
  const original = globalThis.fetch;
  const seen = /** @type {any[]} */ ([]);
  globalThis.fetch = /** @type {any} */ (async (/** @type {any} */ url) => (seen.push(url), new Response('x')));
  try {
    assert.equal(await (await defaultFetch(URL_A)).text(), 'x');
    assert.deepEqual(seen, [URL_A]);
  } finally {
    globalThis.fetch = original;
  }
});

test('fetchCapped returns the bytes within the cap, and refuses above it', async () => {
  const body = bytesOf(9);
  const o = { fetch: async () => new Response(body) };
  assert.deepEqual(await fetchCapped(o, URL_A, 'manifest', 9, 'manifest'), body);
  await assert.rejects(fetchCapped(o, URL_A, 'manifest', 8, 'manifest'), { message: `BoundExceeded: manifest ${URL_A.href} is larger than its bound of 8 bytes (9 seen); the download was stopped there` });
  assert.equal(await sha256Hex(body), sha256(body));
});

// ---- the content-addressed store ---------------------------------------------------------

test('openStore: none, and a folder in node only when one is named', async () => {
  assert.equal(await openStore({ cache: 'none', cacheDir: tmp() }), null);
  assert.equal(await openStore({ cache: 'auto' }), null);
  const dir = join(tmp(), 'nested', 'cas');
  const store = await openStore({ cache: 'auto', cacheDir: dir });
  assert.equal(store.kind, 'directory');
  assert.equal(existsSync(dir), true); // made, with its parents
});

test('the folder store: get, put (bytes or a stream), drop', async () => {
  const dir = tmp();
  const store = await openStore({ cache: 'auto', cacheDir: dir });
  const data = bytesOf(300_000);
  const key = sha256(data);
  assert.equal(await store.get(key), null);
  await store.put(key, data);
  assert.deepEqual(readdirSync(dir), [key]); // the temporary file was renamed
  const source = await store.get(key);
  assert.equal(source.length, 300_000);
  assert.equal((await drain({}, source, { what: 'm', url: URL_A, limit: 300_000, phase: 'x' })).sha256, key);
  const other = bytesOf(3000, 5);
  await store.put(sha256(other), memoryStream({ buffer: other.buffer }, 0, other.length));
  assert.deepEqual(readFileSync(join(dir, sha256(other))), Buffer.from(other));
  await store.drop(key);
  await store.drop(key); // absent: no error
  assert.deepEqual(readdirSync(dir), [sha256(other)]);
  assert.equal(await store.get(key), null);
});

/** An in-memory store recording its calls; `entries` sha256 -> bytes. */
function memoryStore(/** @type {Record<string, Uint8Array>} */ entries = {}, /** @type {any} */ fail = {}) {
  const calls = /** @type {string[]} */ ([]);
  return {
    calls,
    entries,
    kind: 'memory',
    /** @returns {Promise<any>} */
    async get(/** @type {string} */ key) {
      calls.push(`get ${key.slice(0, 4)}`);
      if (fail.get) throw fail.get;
      return key in entries ? chunked([entries[key]], entries[key].length) : null;
    },
    async put(/** @type {string} */ key, /** @type {Uint8Array} */ body) {
      calls.push(`put ${key.slice(0, 4)}`);
      if (fail.put) throw fail.put;
      entries[key] = body;
    },
    async drop(/** @type {string} */ key) {
      calls.push(`drop ${key.slice(0, 4)}`);
      delete entries[key];
      if (fail.drop) throw fail.drop;
    },
  };
}

const recordOf = (/** @type {Uint8Array} */ data, cache = 'miss') => ({ what: 'module', url: URL_A.href, sha256: sha256(data), size: data.length, cache });

test('fromStore: an intact entry is a hit, reported once at its size', async () => {
  const data = bytesOf(64);
  const store = memoryStore({ [sha256(data)]: data });
  const record = recordOf(data);
  const p = progressLog();
  assert.deepEqual(await fromStore(p, store, record, { limit: 64, phase: 'module' }), data);
  assert.equal(record.cache, 'hit');
  assert.deepEqual(p.events, [{ phase: 'module', loaded: 64, total: 64, url: URL_A.href }]);
  // without a phase nothing is reported
  const quiet = progressLog();
  await fromStore(quiet, store, recordOf(data), { limit: 64, phase: null });
  assert.deepEqual(quiet.events, []);
  // with a sink: streamed there, true returned
  const sunk = /** @type {number[]} */ ([]);
  assert.equal(await fromStore({}, store, recordOf(data), { limit: 64, phase: 'model', sink: async (/** @type {Uint8Array} */ c) => void sunk.push(c.length) }), true);
  assert.deepEqual(sunk, [64]);
});

test('fromStore: a same-size poisoned entry is re-hashed, dropped and missed', async () => {
  const data = bytesOf(64);
  const poisoned = bytesOf(64, 99);
  const store = memoryStore({ [sha256(data)]: poisoned });
  const record = recordOf(data);
  assert.equal(await fromStore({}, store, record, { limit: 64, phase: 'module' }), null);
  assert.equal(record.cache, 'poisoned');
  assert.deepEqual(store.calls, [`get ${sha256(data).slice(0, 4)}`, `drop ${sha256(data).slice(0, 4)}`]);
  assert.equal(sha256(data) in store.entries, false);
});

test('fromStore: a shorter or a longer entry is poisoned too', async () => {
  const data = bytesOf(64);
  for (const entry of [data.slice(0, 63), Uint8Array.from([...data, 0])]) {
    const store = memoryStore({ [sha256(data)]: entry });
    const record = recordOf(data);
    const p = progressLog();
    assert.equal(await fromStore(p, store, record, { limit: 64, phase: 'module' }), null);
    assert.equal(record.cache, 'poisoned');
    assert.deepEqual(p.events, []);
  }
  // an entry holding the right bytes and more, streamed in pieces, is still cut at its size
  const store = memoryStore();
  store.get = async () => chunked([data, bytesOf(1)]);
  const record = recordOf(data);
  assert.equal(await fromStore({}, store, record, { limit: 64, phase: 'module' }), null);
  assert.equal(record.cache, 'poisoned');
});

test('fromStore: no store, no entry or an unreadable store is a miss; a failing drop is ignored', async () => {
  const data = bytesOf(16);
  assert.equal(await fromStore({}, null, recordOf(data), { limit: 16, phase: 'x' }), null);
  const record = recordOf(data);
  assert.equal(await fromStore({}, memoryStore(), record, { limit: 16, phase: 'x' }), null);
  assert.equal(record.cache, 'miss');
  const broken = memoryStore({}, { get: new Error('blocked') });
  assert.equal(await fromStore({}, broken, record, { limit: 16, phase: 'x' }), null);
  assert.equal(record.cache, 'miss');
  const undroppable = memoryStore({ [sha256(data)]: bytesOf(16, 3) }, { drop: new Error('x') });
  assert.equal(await fromStore({}, undroppable, record, { limit: 16, phase: 'x' }), null);
  assert.equal(record.cache, 'poisoned');
  // an entry that fails while it is read is the loader's own error, not a miss
  const failing = memoryStore();
  failing.get = async () => chunked([], null, new Error('disk'));
  await assert.rejects(fromStore({}, failing, recordOf(data), { limit: 16, phase: 'x' }), { code: 'FetchFailed', message: `FetchFailed: cached module ${URL_A.href}: disk` });
  const odd = memoryStore();
  odd.get = async () => ({ length: null, cancel() {}, read: async () => { throw new RangeError('odd'); } });
  await assert.rejects(fromStore({}, odd, recordOf(data), { limit: 16, phase: 'x' }), { code: 'FetchFailed' });
});

test('storeQuietly: stored, or the failure recorded and reported, never thrown', async () => {
  const data = bytesOf(8);
  let record = recordOf(data);
  await storeQuietly({}, memoryStore(), record, data);
  assert.equal(record.cache, 'stored');
  record = recordOf(data, 'poisoned');
  await storeQuietly({}, memoryStore(), record, data);
  assert.equal(record.cache, 'poisoned'); // a replaced poisoned entry stays reported as such
  /** @type {[any, string, string][]} */
  const failures = [
    [Object.assign(new Error('quota'), { name: 'QuotaExceededError' }), 'CacheQuota', 'quota-exceeded'],
    [Object.assign(new Error('disk full'), { code: 'ENOSPC' }), 'CacheQuota', 'quota-exceeded'],
    [new Error('read-only'), 'CacheFailed', 'write-failed'],
    ['bare', 'CacheFailed', 'write-failed'],
  ];
  for (const [error, code, cache] of failures) {
    const reported = /** @type {any[]} */ ([]);
    record = recordOf(data);
    await storeQuietly({ onCacheError: (/** @type {any} */ e) => reported.push(e) }, memoryStore({}, { put: error }), record, data);
    assert.equal(record.cache, cache);
    assert.equal(reported.length, 1);
    assert.equal(reported[0].code, code);
    assert.equal(reported[0].message, `${code}: caching ${URL_A.href}: ${error.message || error}`);
    assert.deepEqual(reported[0].detail, { url: URL_A.href });
    record = recordOf(data);
    await storeQuietly({}, memoryStore({}, { put: error }), record, data); // nobody listening
    assert.equal(record.cache, cache);
  }
});

/** A fetch option serving `body` at URL_A and counting requests. */
function server(/** @type {any} */ body) {
  const log = { requests: 0 };
  return { log, fetch: async () => (log.requests++, new Response(body, { headers: { 'content-length': String(body.length) } })) };
}

test('fetchSigned: a miss downloads and stores; the next load is a hit without the network', async () => {
  const data = bytesOf(1000);
  const store = memoryStore();
  const net = server(data);
  const p = progressLog();
  const spec = { url: URL_A, what: 'module', sha256: sha256(data), size: 1000, phase: 'module' };
  const first = await fetchSigned({ fetch: net.fetch, onProgress: p.onProgress }, store, spec);
  assert.deepEqual(first.bytes, data);
  assert.equal(first.sha256, sha256(data));
  assert.deepEqual(first.record, { what: 'module', url: URL_A.href, sha256: sha256(data), size: 1000, cache: 'stored' });
  assert.deepEqual(store.entries[sha256(data)], data);
  assert.deepEqual(p.events.map((e) => [e.phase, e.loaded, e.total]), [['module', 0, 1000], ['module', 1000, 1000]]);
  const second = await fetchSigned({ fetch: net.fetch }, store, spec);
  assert.deepEqual(second.bytes, data);
  assert.equal(second.record.cache, 'hit');
  assert.equal(net.log.requests, 1);
});

test('fetchSigned: a same-size poisoned entry is refetched and replaced', async () => {
  const data = bytesOf(500);
  const store = memoryStore({ [sha256(data)]: bytesOf(500, 42) });
  const net = server(data);
  const got = await fetchSigned({ fetch: net.fetch }, store, { url: URL_A, what: 'module', sha256: sha256(data), size: 500, phase: 'module' });
  assert.deepEqual(got.bytes, data);
  assert.equal(got.record.cache, 'poisoned');
  assert.equal(net.log.requests, 1);
  assert.deepEqual(store.entries[sha256(data)], data);
});

test('fetchSigned: bytes of another digest are returned with their digest and never stored', async () => {
  const data = bytesOf(100);
  const served = bytesOf(100, 7);
  const store = memoryStore();
  const got = await fetchSigned({ fetch: server(served).fetch }, store, { url: URL_A, what: 'module', sha256: sha256(data), size: 100, phase: 'module' });
  assert.equal(got.sha256, sha256(served));
  assert.deepEqual(got.bytes, served);
  assert.equal(got.record.cache, 'miss');
  assert.deepEqual(store.entries, {});
  // bounded by the signed size
  await assert.rejects(fetchSigned({ fetch: server(bytesOf(101)).fetch }, store, { url: URL_A, what: 'module', sha256: sha256(data), size: 100, phase: 'module' }), { code: 'BoundExceeded' });
  // and without a store nothing is cached
  const off = await fetchSigned({ fetch: server(data).fetch }, null, { url: URL_A, what: 'module', sha256: sha256(data), size: 100, phase: 'module' });
  assert.equal(off.record.cache, 'off');
  assert.deepEqual(off.bytes, data);
});

test('fetchSigned: a body shorter than the signed size is returned but not stored', async () => {
  const data = bytesOf(100);
  const store = memoryStore();
  const got = await fetchSigned({ fetch: server(data.slice(0, 99)).fetch }, store, { url: URL_A, what: 'module', sha256: sha256(data.slice(0, 99)), size: 100, phase: 'module' });
  assert.equal(got.bytes.length, 99);
  assert.equal(got.record.cache, 'miss');
  assert.deepEqual(store.entries, {});
});

test('memoryStream: copies of at most 1 MiB each, from ptr, len bytes', async () => {
  const buffer = new ArrayBuffer((3 << 20) + 10);
  const view = new Uint8Array(buffer);
  for (let i = 0; i < view.length; i += 4099) view[i] = (i >> 12) & 0xff;
  const ptr = 7;
  const len = (2 << 20) + 12345;
  const reader = memoryStream({ buffer }, ptr, len).getReader();
  const sizes = [];
  const chunks = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    sizes.push(value.length);
    chunks.push(value);
    assert.notEqual(value.buffer, buffer); // a copy
  }
  assert.deepEqual(sizes, [1 << 20, 1 << 20, 12345]);
  const joined = new Uint8Array(len);
  let at = 0;
  for (const c of chunks) {
    joined.set(c, at);
    at += c.length;
  }
  assert.equal(sha256(joined), sha256(view.subarray(ptr, ptr + len)));
  const empty = memoryStream({ buffer }, 0, 0).getReader();
  assert.deepEqual(await empty.read(), { done: true, value: undefined });
});
