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
import * as fetchJs from '../../../crates/wasm/js/fetch.js';
import { loaderStats } from '../../../crates/wasm/js/errors.js';

// The loader's functions typed loosely (any): these tests hand them fakes (a Source, a Response,
// options holding only the fields a function reads) and hostile values, on purpose.
const { CACHE_NAME, MANIFEST_CAP, MODEL_RETRY, SIGNATURE_CAP, counted, defaultFetch, drain, fetchCapped, fetchSigned, fromStore, memoryStream, modelCached, modelIntact, modelSource, open, openResumable, openStore, responseSource, settleModelCache, sha256Hex, storeQuietly } = /** @type {any} */ (fetchJs);

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

test('open: the fetch is given a signal, aborted on an HTTP error and by a cancel', async () => {
  const inits = /** @type {any[]} */ ([]);
  const answer = (/** @type {number} */ status) => ({ fetch: async (/** @type {URL} */ _u, /** @type {any} */ init) => (inits.push(init), new Response(bytesOf(4), { status })) });
  const source = await open(answer(200), URL_A, 'module');
  assert.deepEqual(Object.keys(inits[0]), ['signal']);
  assert.ok(inits[0].signal instanceof AbortSignal);
  assert.equal(inits[0].signal.aborted, false);
  source.cancel();
  assert.equal(inits[0].signal.aborted, true);
  await assert.rejects(open(answer(500), URL_A, 'module'), { code: 'FetchFailed' });
  assert.equal(inits[1].signal.aborted, true);
});

// ---- the model download: retries and resume (openResumable) -------------------------------

/** A Response whose body yields `chunks`, then fails with `error` (or ends when null). */
function body(/** @type {Uint8Array[]} */ chunks, /** @type {Error | null} */ error = null, /** @type {Record<string, string>} */ headers = {}, status = 200) {
  let i = 0;
  const stream = new ReadableStream({
    pull(controller) {
      if (i < chunks.length) controller.enqueue(chunks[i++]);
      else if (error) controller.error(error);
      else controller.close();
    },
  });
  return new Response(stream, { status, headers });
}

/** A fetch answering try n with `answers[n](start)` (start: the Range's first byte, or 0);
 * records every try's Range header and signal. */
function tries(/** @type {((start: number) => any)[]} */ answers) {
  const calls = /** @type {{ range: string | null, signal: AbortSignal, keys: string[] }[]} */ ([]);
  const fetch = async (/** @type {URL} */ url, /** @type {any} */ init) => {
    assert.equal(url, URL_A);
    const range = init.headers ? init.headers.Range : null;
    calls.push({ range, signal: init.signal, keys: Object.keys(init) });
    const answer = answers[calls.length - 1];
    if (!answer) throw new Error(`try ${calls.length} was not expected`);
    return answer(range ? Number(/^bytes=(\d+)-$/.exec(range)?.[1]) : 0);
  };
  return { calls, fetch };
}

/** The ranged answer of a server honouring Range: bytes `start`..`end` of `data`. */
const partial = (/** @type {Uint8Array} */ data, /** @type {number} */ start, end = data.length, error = /** @type {Error | null} */ (null)) =>
  body([data.slice(start, end)], error, { 'content-range': `bytes ${start}-${data.length - 1}/${data.length}` }, 206);

/** Reads all of `source` (what the loader's drain does). */
async function readAll(/** @type {any} */ source) {
  const parts = [];
  for (;;) {
    const step = await source.read();
    if (step.done) break;
    assert.ok(step.value.length > 0, 'no empty chunk');
    parts.push(...step.value);
  }
  return Uint8Array.from(parts);
}

const sleeps = () => {
  const waited = /** @type {number[]} */ ([]);
  return { waited, sleep: async (/** @type {number} */ ms) => void waited.push(ms) };
};

test('MODEL_RETRY: four tries, waits from 250 ms doubling up to 4 s', () => {
  assert.deepEqual({ ...MODEL_RETRY }, { attempts: 4, firstWaitMs: 250, maxWaitMs: 4000 });
  assert.ok(Object.isFrozen(MODEL_RETRY));
});

test('openResumable: one try, given a signal and no Range, yields the body as it came', async () => {
  const data = bytesOf(10);
  const t = tries([() => body([data.slice(0, 4), data.slice(4)], null, { 'content-length': '10' })]);
  const s = sleeps();
  const source = await openResumable({ fetch: t.fetch }, URL_A, 'model', 10, s.sleep);
  assert.equal(source.length, 10);
  assert.deepEqual(await source.read(), { done: false, value: data.slice(0, 4) });
  assert.deepEqual(await readAll(source), data.slice(4));
  assert.deepEqual(await source.read(), { done: true });
  assert.deepEqual(t.calls.map((c) => [c.range, c.keys]), [[null, ['signal']]]);
  assert.ok(t.calls[0].signal instanceof AbortSignal);
  assert.deepEqual(s.waited, []);
  // drained with the signed size: the bytes and their digest
  const again = tries([() => body([data])]);
  const got = await drain({}, await openResumable({ fetch: again.fetch }, URL_A, 'model', 10, s.sleep), { what: 'model', url: URL_A, limit: 10, phase: 'model', total: 10 });
  assert.equal(got.sha256, sha256(data));
});

test('openResumable retries a thrown fetch, 408, 429 and 5xx with doubling waits', async () => {
  const data = bytesOf(6);
  const failing = /** @type {((start: number) => any)[]} */ ([
    () => { throw new TypeError('network down'); },
    () => new Response('busy', { status: 503 }),
    () => new Response('slow down', { status: 429 }),
  ]);
  const t = tries([...failing, () => body([data])]);
  const s = sleeps();
  assert.deepEqual(await readAll(await openResumable({ fetch: t.fetch }, URL_A, 'model', 6, s.sleep)), data);
  assert.equal(t.calls.length, 4);
  assert.deepEqual(s.waited, [250, 500, 1000]);
  for (const status of [408, 429, 500, 502, 503, 504]) {
    const one = tries([() => new Response('x', { status }), () => body([data])]);
    const w = sleeps();
    assert.deepEqual(await readAll(await openResumable({ fetch: one.fetch }, URL_A, 'model', 6, w.sleep)), data, String(status));
    assert.deepEqual(w.waited, [250], String(status));
  }
});

test('openResumable: no try is left after four; the last failure is thrown', async () => {
  const s = sleeps();
  const down = tries(Array(4).fill(() => { throw new TypeError('network down'); }));
  await assert.rejects(openResumable({ fetch: down.fetch }, URL_A, 'model', 6, s.sleep), (/** @type {any} */ e) => {
    assert.equal(e.name, 'LoaderError');
    assert.equal(e.message, `FetchFailed: model ${URL_A.href}: network down`);
    assert.deepEqual(e.detail, { url: URL_A.href });
    return true;
  });
  assert.equal(down.calls.length, 4);
  assert.deepEqual(s.waited, [250, 500, 1000]);
  const busy = tries([() => { throw new TypeError('network down'); }, ...Array(3).fill(() => new Response('x', { status: 502 }))]);
  await assert.rejects(openResumable({ fetch: busy.fetch }, URL_A, 'model', 6, sleeps().sleep), (/** @type {any} */ e) => {
    assert.equal(e.message, `FetchFailed: model ${URL_A.href}: HTTP 502`);
    assert.deepEqual(e.detail, { url: URL_A.href, status: 502 });
    return true;
  });
});

test('openResumable: other HTTP errors are not retried, and their body is cancelled', async () => {
  for (const status of [400, 403, 404, 410, 501]) {
    let cancelled = 0;
    const response = { ok: false, status, body: { cancel: async () => void cancelled++ } };
    const t = tries([() => response]);
    const s = sleeps();
    await assert.rejects(openResumable({ fetch: t.fetch }, URL_A, 'model', 6, s.sleep), { message: `FetchFailed: model ${URL_A.href}: HTTP ${status}` });
    assert.deepEqual([t.calls.length, cancelled, s.waited], [1, 1, []], String(status));
  }
  // a failed answer without a body, and one whose cancel fails: refused all the same
  const bare = tries([() => ({ ok: false, status: 404, body: null })]);
  await assert.rejects(openResumable({ fetch: bare.fetch }, URL_A, 'model', 6, sleeps().sleep), { message: `FetchFailed: model ${URL_A.href}: HTTP 404` });
  const rude = tries([() => ({ ok: false, status: 404, body: { cancel: () => Promise.reject(new Error('x')) } })]);
  await assert.rejects(openResumable({ fetch: rude.fetch }, URL_A, 'model', 6, sleeps().sleep), { message: `FetchFailed: model ${URL_A.href}: HTTP 404` });
});

test('openResumable resumes a body that breaks off by Range, from the byte it reached', async () => {
  const data = bytesOf(10);
  for (const total of ['10', '*']) {
    const t = tries([
      () => body([data.slice(0, 4)], new Error('reset'), { 'content-length': '10' }),
      (start) => body([data.slice(start)], null, { 'content-range': ` bytes ${start}-9/${total} ` }, 206),
    ]);
    const s = sleeps();
    const source = await openResumable({ fetch: t.fetch }, URL_A, 'model', 10, s.sleep);
    assert.deepEqual(await readAll(source), data);
    assert.equal(source.length, 10);
    assert.deepEqual(t.calls.map((c) => c.range), [null, 'bytes=4-']);
    assert.deepEqual(t.calls[1].keys, ['headers', 'signal']);
    assert.equal(t.calls[0].signal.aborted, true); // the broken request is aborted
    assert.equal(t.calls[1].signal.aborted, false);
    assert.deepEqual(s.waited, [250]);
    source.cancel(); // the current request
    assert.equal(t.calls[1].signal.aborted, true);
  }
});

test('openResumable: a server without ranges answers from byte 0, and what was read is skipped', async () => {
  const data = bytesOf(10);
  const t = tries([
    () => body([data.slice(0, 3), data.slice(3, 6)], new Error('reset')),
    () => body([data.slice(0, 2), data.slice(2, 6), data.slice(6)]), // 200: the whole file again
  ]);
  const source = await openResumable({ fetch: t.fetch }, URL_A, 'model', 10, sleeps().sleep);
  const chunks = [];
  for (let step = await source.read(); !step.done; step = await source.read()) chunks.push(step.value);
  assert.deepEqual(chunks, [data.slice(0, 3), data.slice(3, 6), data.slice(6)]);
  assert.deepEqual(t.calls.map((c) => c.range), [null, 'bytes=6-']);
  // a skip that ends inside a chunk
  const mid = tries([() => body([data.slice(0, 5)], new Error('reset')), () => body([data.slice(0, 7), data.slice(7)])]);
  const resumed = await openResumable({ fetch: mid.fetch }, URL_A, 'model', 10, sleeps().sleep);
  assert.deepEqual(await resumed.read(), { done: false, value: data.slice(0, 5) });
  assert.deepEqual(await resumed.read(), { done: false, value: data.slice(5, 7) });
  assert.deepEqual(await resumed.read(), { done: false, value: data.slice(7) });
  assert.deepEqual(await resumed.read(), { done: true });
});

test('openResumable: a 206 of another range is refused at once', async () => {
  const data = bytesOf(10);
  for (const range of ['bytes 0-9/10', 'bytes 3-9/10', 'bytes 4-9', 'bytes 4-9/x', 'x bytes 4-9/10', null]) {
    let cancelled = 0;
    const t = tries([
      () => body([data.slice(0, 4)], new Error('reset')),
      () => {
        const response = body([data.slice(4)], null, range === null ? {} : { 'content-range': range }, 206);
        const cancel = response.body?.cancel.bind(response.body);
        Object.defineProperty(response.body, 'cancel', { value: () => (cancelled++, cancel?.()) });
        return response;
      },
    ]);
    const s = sleeps();
    const source = await openResumable({ fetch: t.fetch }, URL_A, 'model', 10, s.sleep);
    assert.deepEqual(await source.read(), { done: false, value: data.slice(0, 4) });
    await assert.rejects(source.read(), (/** @type {any} */ e) => {
      assert.equal(e.message, `FetchFailed: model ${URL_A.href}: asked for bytes 4- and got ${JSON.stringify(range ?? '')}`);
      assert.deepEqual(e.detail, { url: URL_A.href });
      return true;
    });
    assert.deepEqual([t.calls.length, cancelled, s.waited], [2, 1, [250]], String(range));
  }
  // a 206 to a first try (no Range asked) is read as it is
  const first = tries([() => partial(data, 0)]);
  assert.deepEqual(await readAll(await openResumable({ fetch: first.fetch }, URL_A, 'model', 10, sleeps().sleep)), data);
});

test('openResumable: a body that keeps breaking off is FetchFailed after the fourth try', async () => {
  const data = bytesOf(10);
  const t = tries(Array(4).fill((/** @type {number} */ start) => partial(data, start, start + 2, new Error('reset'))));
  const s = sleeps();
  const source = await openResumable({ fetch: t.fetch }, URL_A, 'model', 10, s.sleep);
  const got = [];
  await assert.rejects(async () => {
    for (;;) {
      const step = await source.read();
      if (step.done) break;
      got.push(...step.value);
    }
  }, (/** @type {any} */ e) => {
    assert.equal(e.message, `FetchFailed: model ${URL_A.href}: broke off after 8 bytes: reset`);
    assert.deepEqual(e.detail, { url: URL_A.href });
    return true;
  });
  assert.deepEqual(Uint8Array.from(got), data.slice(0, 8));
  assert.deepEqual(t.calls.map((c) => c.range), [null, 'bytes=2-', 'bytes=4-', 'bytes=6-']);
  assert.deepEqual(s.waited, [250, 500, 1000]);
});

test('openResumable: a body that ends short is asked for the rest; after the last try, the short end ends it', async () => {
  const data = bytesOf(10);
  const t = tries(Array(4).fill((/** @type {number} */ start) => partial(data, start, start + 2)));
  const s = sleeps();
  const source = await openResumable({ fetch: t.fetch }, URL_A, 'model', 10, s.sleep);
  assert.deepEqual(await readAll(source), data.slice(0, 8)); // the hash against the signed one refuses it
  assert.deepEqual(t.calls.map((c) => c.range), [null, 'bytes=2-', 'bytes=4-', 'bytes=6-']);
  assert.deepEqual(s.waited, [250, 500, 1000]);
  // the rest in the last try: whole
  const last = tries([0, 3, 6, 9].map((end, i, all) => (start) => partial(data, start, i === 3 ? 10 : all[i + 1])));
  assert.deepEqual(await readAll(await openResumable({ fetch: last.fetch }, URL_A, 'model', 10, sleeps().sleep)), data);
  assert.equal(last.calls.length, 4);
  // without a size, the end of the body is the end
  const open1 = tries([() => body([data.slice(0, 3)])]);
  assert.deepEqual(await readAll(await openResumable({ fetch: open1.fetch }, URL_A, 'model', null, sleeps().sleep)), data.slice(0, 3));
  assert.equal(open1.calls.length, 1);
  // a body longer than the size ends when it ends (drain's bound refuses the excess)
  const long = tries([() => body([data, data])]);
  assert.equal((await readAll(await openResumable({ fetch: long.fetch }, URL_A, 'model', 10, sleeps().sleep))).length, 20);
});

test('openResumable: a break after a retried open counts every failure toward the four tries', async () => {
  const data = bytesOf(10);
  const t = tries([
    () => new Response('x', { status: 503 }),
    () => body([data.slice(0, 5)], new Error('reset')),
    () => new Response('x', { status: 503 }),
    (start) => partial(data, start, 7, new Error('reset')),
  ]);
  const s = sleeps();
  const source = await openResumable({ fetch: t.fetch }, URL_A, 'model', 10, s.sleep);
  assert.deepEqual(await source.read(), { done: false, value: data.slice(0, 5) });
  assert.deepEqual(await source.read(), { done: false, value: data.slice(5, 7) });
  await assert.rejects(source.read(), { message: `FetchFailed: model ${URL_A.href}: broke off after 7 bytes: reset` });
  assert.deepEqual(s.waited, [250, 500, 1000]);
});

test('openResumable: node reads file: URLs itself with the default fetch; another fetch gets them', async () => {
  const dir = tmp();
  const data = bytesOf(1000);
  writeFileSync(join(dir, 'm.bin'), data);
  const url = pathToFileURL(join(dir, 'm.bin'));
  const source = await openResumable({ fetch: defaultFetch }, url, 'model', 1000);
  assert.equal(source.length, 1000);
  assert.deepEqual(await readAll(source), data);
  const seen = /** @type {string[]} */ ([]);
  const other = { fetch: async (/** @type {URL} */ u) => (seen.push(u.href), body([data])) };
  assert.deepEqual(await readAll(await openResumable(other, url, 'model', 1000)), data);
  assert.deepEqual(seen, [url.href]);
});

test('openResumable waits with setTimeout by default', async () => {
  const data = bytesOf(4);
  const t = tries([() => new Response('x', { status: 503 }), () => body([data])]);
  const original = globalThis.setTimeout;
  const waits = /** @type {number[]} */ ([]);
  globalThis.setTimeout = /** @type {any} */ ((/** @type {() => void} */ fn, /** @type {number} */ ms) => (waits.push(ms), original(fn, 0)));
  try {
    assert.deepEqual(await readAll(await openResumable({ fetch: t.fetch }, URL_A, 'model', 4)), data);
  } finally {
    globalThis.setTimeout = original;
  }
  assert.deepEqual(waits, [250]);
});

test('defaultFetch is the global fetch', async () => {
  const original = globalThis.fetch;
  const seen = /** @type {any[]} */ ([]);
  globalThis.fetch = /** @type {any} */ (async (/** @type {any} */ url) => (seen.push(url), new Response('x')));
  try {
    assert.equal(await (await defaultFetch(URL_A)).text(), 'x');
    assert.deepEqual(seen, [URL_A]);
    // the init goes on as given (Range, signal)
    const init = { headers: { Range: 'bytes=3-' }, signal: new AbortController().signal };
    const inits = /** @type {any[]} */ ([]);
    globalThis.fetch = /** @type {any} */ (async (/** @type {any} */ url, /** @type {any} */ i) => (inits.push(i), new Response('y')));
    assert.equal(await (await defaultFetch(URL_A, init)).text(), 'y');
    assert.equal(inits[0], init);
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
  const before = loaderStats().storeBytesRead;
  const source = await store.get(key);
  assert.equal(source.length, 300_000);
  assert.equal(loaderStats().storeBytesRead, before); // opened: nothing read yet
  assert.equal((await drain({}, source, { what: 'm', url: URL_A, limit: 300_000, phase: 'x' })).sha256, key);
  assert.equal(loaderStats().storeBytesRead - before, 300_000); // every byte read counted
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

// ---- parts, files, signals and odd answers (issue 36: fetch.js in mutation scope) ----------

test('openResumable on a file (node, the default fetch): the whole file, or the part [from, to) alone', async () => {
  const dir = tmp();
  const data = bytesOf(200_000);
  writeFileSync(join(dir, 'm.bin'), data);
  const url = pathToFileURL(join(dir, 'm.bin'));
  const whole = await openResumable({ fetch: defaultFetch }, url, 'model', 200_000);
  assert.deepEqual([whole.length, whole.total, whole.ranged], [200_000, 200_000, undefined]);
  assert.deepEqual(await readAll(whole), data);
  /** @type {[number, number | null, Uint8Array][]} */
  const parts = [[3, 10, data.slice(3, 10)], [0, 5, data.slice(0, 5)], [150_000, null, data.slice(150_000)], [199_990, 300_000, data.slice(199_990)]];
  for (const [from, to, want] of parts) {
    const part = await openResumable({ fetch: defaultFetch }, url, 'model', 200_000, undefined, { from, to });
    assert.deepEqual([part.length, part.total, part.ranged], [want.length, 200_000, true], `${from}-${to}`);
    assert.deepEqual(await readAll(part), want, `${from}-${to}`);
  }
  // a part past the end, or empty: no bytes, and nothing to close
  for (const [from, to] of [[200_000, null], [250_000, null], [7, 7], [9, 4]]) {
    const none = await openResumable({ fetch: defaultFetch }, url, 'model', 200_000, undefined, { from, to });
    assert.deepEqual([none.length, none.total, none.ranged], [0, 200_000, true], `${from}-${to}`);
    assert.deepEqual(await none.read(), { done: true });
    assert.equal(none.cancel(), undefined);
  }
});

test('a file Source stops reading when it is cancelled', async () => {
  const dir = tmp();
  writeFileSync(join(dir, 'm.bin'), bytesOf(1 << 20));
  const source = await open({ fetch: defaultFetch }, pathToFileURL(join(dir, 'm.bin')), 'model');
  const first = await source.read();
  assert.equal(first.value.length, 1 << 16);
  source.cancel();
  const after = await source.read().then((/** @type {any} */ step) => step.done, () => true);
  assert.equal(after, true); // ended (or failed): no further chunk of the file
});

test('the default fetch with an http(s) URL goes to the network, not the file system', async () => {
  const original = globalThis.fetch;
  const seen = /** @type {string[]} */ ([]);
  globalThis.fetch = /** @type {any} */ (async (/** @type {URL} */ url) => (seen.push(url.href), new Response(bytesOf(4))));
  try {
    assert.deepEqual(await readAll(await open({ fetch: defaultFetch }, URL_A, 'module')), bytesOf(4));
    assert.deepEqual(await readAll(await openResumable({ fetch: defaultFetch }, URL_A, 'model', 4, sleeps().sleep)), bytesOf(4));
  } finally {
    globalThis.fetch = original;
  }
  assert.deepEqual(seen, [URL_A.href, URL_A.href]);
});

test('responseSource: a cancel cancels the body stream too', async () => {
  let cancelled = 0;
  const stream = new ReadableStream({ pull: (c) => c.enqueue(bytesOf(1)), cancel: () => void cancelled++ });
  const source = responseSource(new Response(stream));
  source.cancel();
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(cancelled, 1);
});

/** A fetch answering try n with `answers[n](range)` (range: the Range header asked, or null). */
function ranges(/** @type {((range: string | null) => any)[]} */ answers) {
  const asked = /** @type {(string | null)[]} */ ([]);
  const fetch = async (/** @type {URL} */ _url, /** @type {any} */ init) => {
    const range = init.headers ? init.headers.Range : null;
    asked.push(range);
    const answer = answers[asked.length - 1];
    if (!answer) throw new Error(`try ${asked.length} was not expected`);
    return answer(range);
  };
  return { asked, fetch };
}

/** A 206 answer: `bytes` with Content-Range `range` (and their Content-Length). */
const answer206 = (/** @type {Uint8Array} */ bytes, /** @type {string} */ range, error = /** @type {Error | null} */ (null)) =>
  body([bytes], error, { 'content-range': range, 'content-length': String(bytes.length) }, 206);

test('openResumable: a part from a server that honours Range is that part alone', async () => {
  const data = bytesOf(40);
  /** @type {[number, number | null, string, string, number | null][]} */
  const cases = [
    [0, 4, 'bytes=0-3', 'bytes 0-3/40', 40],
    [4, 8, 'bytes=4-7', 'bytes 4-7/40', 40],
    [14, 30, 'bytes=14-29', 'bytes 14-29/40', 40],
    [4, null, 'bytes=4-', 'bytes 4-39/40', 40],
    [4, null, 'bytes=4-', 'bytes 4-39/*', null],
  ];
  for (const [from, to, range, content, total] of cases) {
    const t = ranges([() => answer206(data.slice(from, to ?? 40), content)]);
    const source = await openResumable({ fetch: t.fetch }, URL_A, 'model', 40, sleeps().sleep, { from, to });
    assert.deepEqual([source.length, source.total, source.ranged], [(to ?? 40) - from, total, true], content);
    assert.deepEqual(await readAll(source), data.slice(from, to ?? 40), content);
    assert.deepEqual(t.asked, [range], content); // the part ends the Source: nothing more is asked
  }
  // a part that breaks off is resumed within the part
  const t = ranges([() => answer206(data.slice(0, 3), 'bytes 0-7/40', new Error('reset')), () => answer206(data.slice(3, 8), 'bytes 3-7/40')]);
  const s = sleeps();
  assert.deepEqual(await readAll(await openResumable({ fetch: t.fetch }, URL_A, 'model', 40, s.sleep, { from: 0, to: 8 })), data.slice(0, 8));
  assert.deepEqual([t.asked, s.waited], [['bytes=0-7', 'bytes=3-7'], [250]]);
});

test('openResumable: a part from a server that ignores Range skips what precedes it and goes on to the size', async () => {
  const data = bytesOf(10);
  const t = ranges([() => body([data.slice(0, 2), data.slice(2)], null, { 'content-length': '10' })]);
  const source = await openResumable({ fetch: t.fetch }, URL_A, 'model', 10, sleeps().sleep, { from: 3, to: 6 });
  assert.deepEqual([source.length, source.total, source.ranged], [7, 10, false]);
  assert.deepEqual(await readAll(source), data.slice(3));
  assert.deepEqual(t.asked, ['bytes=3-5']);
  // without a Content-Length: no length, no total
  const bare = ranges([() => body([data])]);
  const unsized = await openResumable({ fetch: bare.fetch }, URL_A, 'model', 10, sleeps().sleep, { from: 4 });
  assert.deepEqual([unsized.length, unsized.total, unsized.ranged], [null, null, false]);
  assert.deepEqual(await readAll(unsized), data.slice(4));
  assert.deepEqual(bare.asked, ['bytes=4-']);
});

test('openResumable: a 206 for a part must name it exactly; the answer is refused at once otherwise', async () => {
  const data = bytesOf(10);
  for (const range of ['bytes 4-7/10x', 'bytes 5-7/10', 'bytes 4-7/']) {
    const t = ranges([() => answer206(data.slice(4, 8), range)]);
    const s = sleeps();
    await assert.rejects(openResumable({ fetch: t.fetch }, URL_A, 'model', 10, s.sleep, { from: 4, to: 8 }), {
      message: `FetchFailed: model ${URL_A.href}: asked for bytes 4-7 and got ${JSON.stringify(range)}`,
    });
    assert.deepEqual([t.asked, s.waited], [['bytes=4-7'], []], range);
  }
  // answers that are no Response: a header with spaces around it, and no body to cancel
  const spaced = ranges([() => ({ ok: true, status: 206, headers: { get: (/** @type {string} */ n) => (n === 'content-range' ? ' bytes 4-7/10 ' : null) }, body: new Response(data.slice(4, 8)).body })]);
  assert.deepEqual(await readAll(await openResumable({ fetch: spaced.fetch }, URL_A, 'model', 10, sleeps().sleep, { from: 4, to: 8 })), data.slice(4, 8));
  const bodiless = ranges([() => ({ ok: true, status: 206, headers: new Headers({ 'content-range': 'bytes 0-3/10' }), body: null })]);
  await assert.rejects(openResumable({ fetch: bodiless.fetch }, URL_A, 'model', 10, sleeps().sleep, { from: 4, to: 8 }), {
    message: `FetchFailed: model ${URL_A.href}: asked for bytes 4-7 and got "bytes 0-3/10"`,
  });
});

test('openResumable: an error that is not a failed try (a broken answer object) is thrown at once', async () => {
  const t = ranges([() => ({ ok: true, status: 200, headers: new Headers(), body: { getReader: () => { throw new Error('no reader'); } } })]);
  const s = sleeps();
  await assert.rejects(openResumable({ fetch: t.fetch }, URL_A, 'model', 4, s.sleep), { message: 'no reader' });
  assert.deepEqual([t.asked.length, s.waited], [1, []]);
});

test('openResumable: an empty chunk is never yielded', async () => {
  const data = bytesOf(6);
  const t = ranges([() => body([data.slice(0, 2), new Uint8Array(0), data.slice(2)])]);
  const source = await openResumable({ fetch: t.fetch }, URL_A, 'model', 6, sleeps().sleep);
  assert.deepEqual(await source.read(), { done: false, value: data.slice(0, 2) });
  assert.deepEqual(await source.read(), { done: false, value: data.slice(2) });
  assert.deepEqual(await source.read(), { done: true });
});

test('drain with hash: null hashes nothing; resumed bytes come gathered without the start', async () => {
  const parts = [bytesOf(3), bytesOf(4, 5)];
  const got = await drain({}, chunked(parts), { what: 'm', url: URL_A, limit: 12, phase: 'x', start: 5, hash: null });
  assert.deepEqual(got, { bytes: Uint8Array.from([...parts[0], ...parts[1]]), length: 12, sha256: null });
});

// ---- the model's cached copy (modelCached, modelSource, settleModelCache) -----------------

const modelRecord = (/** @type {Uint8Array} */ data, cache = 'miss') => ({ what: 'model', url: URL_A.href, sha256: sha256(data), size: data.length, cache });

test('modelCached: an entry of the record\'s size (or of a length the store does not tell) is there, unread and unhashed; another size is poisoned', async () => {
  const data = bytesOf(64);
  let record = modelRecord(data);
  assert.equal(await modelCached(null, record), false);
  assert.equal(record.cache, 'miss');
  assert.equal(await modelCached(memoryStore(), record), false);
  assert.equal(record.cache, 'miss');
  assert.equal(await modelCached(memoryStore({}, { get: new Error('blocked') }), record), false);
  assert.equal(record.cache, 'miss');
  // found: not one byte read (its hash is checked once it lands, in place), the source cancelled;
  // a same-size poisoned copy is not found out here
  for (const entry of [data, bytesOf(64, 9)]) {
    const store = memoryStore({ [sha256(data)]: entry });
    /** @type {any} */
    let opened = null;
    const get = store.get;
    store.get = async (/** @type {string} */ key) => (opened = await get(key));
    const before = loaderStats();
    record = modelRecord(data);
    assert.equal(await modelCached(store, record), true);
    assert.equal(record.cache, 'hit');
    assert.deepEqual(opened.log, { reads: 0, cancelled: 1 });
    assert.deepEqual(store.calls, [`get ${sha256(data).slice(0, 4)}`]);
    assert.equal(loaderStats().modelBytesHashed, before.modelBytesHashed);
  }
  // the store does not tell its length: there, as far as this can tell
  const untold = memoryStore();
  untold.get = async () => chunked([data.slice(0, 10)], null);
  record = modelRecord(data);
  assert.equal(await modelCached(untold, record), true);
  assert.equal(record.cache, 'hit');
  // another size: poisoned, dropped (a failing drop ignored), not there
  for (const [entry, fail] of /** @type {[Uint8Array, any][]} */ ([[Uint8Array.from([...data, 1]), {}], [data.slice(0, 63), {}], [data.slice(0, 63), { drop: new Error('x') }]])) {
    const bad = memoryStore({ [sha256(data)]: entry }, fail);
    record = modelRecord(data);
    assert.equal(await modelCached(bad, record), false);
    assert.equal(record.cache, 'poisoned');
    assert.deepEqual(bad.entries, {});
    assert.deepEqual(bad.calls, [`get ${sha256(data).slice(0, 4)}`, `drop ${sha256(data).slice(0, 4)}`]);
  }
});

test('modelIntact (a failed cached load): the copy read whole and hashed; a poisoned one dropped; silent; its bytes counted', async () => {
  const data = bytesOf(64);
  let record = modelRecord(data, 'hit');
  let before = loaderStats();
  const store = memoryStore({ [sha256(data)]: data });
  assert.equal(await modelIntact(store, record), true);
  assert.equal(record.cache, 'hit');
  assert.equal(loaderStats().modelBytesHashed - before.modelBytesHashed, 64);
  assert.deepEqual(store.entries, { [sha256(data)]: data });
  for (const entry of [bytesOf(64, 9), Uint8Array.from([...data, 1]), data.slice(0, 63)]) {
    const bad = memoryStore({ [sha256(data)]: entry });
    record = modelRecord(data, 'hit');
    before = loaderStats();
    assert.equal(await modelIntact(bad, record), false);
    assert.equal(record.cache, 'poisoned');
    assert.deepEqual(bad.entries, {});
    // what was hashed: every byte read (a longer entry is refused at its length, before a byte)
    assert.equal(loaderStats().modelBytesHashed - before.modelBytesHashed, entry.length > 64 ? 0 : entry.length);
  }
  // gone, or no store: not intact, nothing dropped, the record as it was
  for (const none of [memoryStore(), null]) {
    record = modelRecord(data, 'hit');
    assert.equal(await modelIntact(none, record), false);
    assert.equal(record.cache, 'hit');
  }
});

test('counted: every byte read from a store entry is counted, the rest of the source kept', async () => {
  const log = /** @type {string[]} */ ([]);
  const source = counted({ length: 7, total: 7, cancel: () => log.push('cancel'), read: chunked([bytesOf(3), bytesOf(4)]).read });
  const before = loaderStats().storeBytesRead;
  assert.deepEqual([source.length, source.total], [7, 7]);
  assert.deepEqual(await readAll(source), Uint8Array.from([...bytesOf(3), ...bytesOf(4)]));
  assert.equal(loaderStats().storeBytesRead - before, 7);
  source.cancel();
  assert.deepEqual(log, ['cancel']);
});

test('modelSource: the store\'s copy when it was found intact, else the network', async () => {
  const data = bytesOf(10);
  const model = (/** @type {boolean} */ cached) => ({ url: URL_A, size: 10, sha256: sha256(data), cached, record: modelRecord(data, cached ? 'hit' : 'miss') });
  const stored = () => memoryStore({ [sha256(data)]: data });
  // cached: read from the store, no request
  let net = ranges([]);
  let m = model(true);
  assert.deepEqual(await readAll(await modelSource({ fetch: net.fetch }, stored(), m)), data);
  assert.deepEqual([net.asked, m.record.cache], [[], 'hit']);
  // not found intact (or no store): the network, even when the store holds it now
  for (const [cached, store] of /** @type {[boolean, any][]} */ ([[false, stored()], [true, null]])) {
    net = ranges([() => body([data])]);
    m = model(cached);
    assert.deepEqual(await readAll(await modelSource({ fetch: net.fetch }, store, m)), data);
    assert.deepEqual([net.asked, m.record.cache], [[null], cached ? 'hit' : 'miss']);
  }
  // cached, but gone (or unreadable) since: a miss, from the network
  for (const store of [memoryStore(), memoryStore({}, { get: new Error('blocked') })]) {
    net = ranges([() => body([data])]);
    m = model(true);
    assert.deepEqual(await readAll(await modelSource({ fetch: net.fetch }, store, m)), data);
    assert.deepEqual([net.asked, m.record.cache, m.cached], [[null], 'miss', false]); // stored once landed
  }
  // the network copy is the model's download: named 'model', resumed up to its size
  net = ranges([() => body([data.slice(0, 4)]), () => answer206(data.slice(4), 'bytes 4-9/10')]);
  const source = await modelSource({ fetch: net.fetch }, null, model(false));
  assert.deepEqual(await readAll(source), data);
  assert.deepEqual(net.asked, [null, 'bytes=4-']);
  const gone = ranges([() => new Response('x', { status: 404 })]);
  await assert.rejects(modelSource({ fetch: gone.fetch }, null, model(false)), { message: `FetchFailed: model ${URL_A.href}: HTTP 404` });
});

test('settleModelCache: a downloaded intact model is stored from memory; a bad cached copy dropped; else nothing', async () => {
  const buffer = new ArrayBuffer(100);
  const view = new Uint8Array(buffer);
  view.set(bytesOf(100, 3));
  const data = view.slice(20, 84);
  const model = (/** @type {boolean} */ cached) => ({ sha256: sha256(data), size: 64, cached, record: modelRecord(data, cached ? 'hit' : 'miss') });
  /** A store whose put reads the stream it is given. */
  const reading = (/** @type {Record<string, Uint8Array>} */ entries = {}, /** @type {any} */ fail = {}) => {
    const store = memoryStore(entries, fail);
    const put = store.put;
    store.put = async (/** @type {string} */ key, /** @type {any} */ stream) => put(key, new Uint8Array(await new Response(stream).arrayBuffer()));
    return store;
  };
  let store = reading();
  let m = model(false);
  await settleModelCache({}, store, m, true, { buffer }, 20);
  assert.deepEqual(store.entries, { [sha256(data)]: data });
  assert.equal(m.record.cache, 'stored');
  // intact and cached already: nothing to do
  store = reading({ [sha256(data)]: data });
  await settleModelCache({}, store, model(true), true, { buffer }, 20);
  assert.deepEqual(store.calls, []);
  // not intact: a cached copy is dropped (a failing drop ignored); a download is not stored
  for (const fail of [{}, { drop: new Error('x') }]) {
    store = reading({ [sha256(data)]: data }, fail);
    await settleModelCache({}, store, model(true), false, { buffer }, 20);
    assert.deepEqual([store.calls, store.entries], [[`drop ${sha256(data).slice(0, 4)}`], {}]);
  }
  store = reading();
  await settleModelCache({}, store, model(false), false, { buffer }, 20);
  assert.deepEqual(store.calls, []);
  // no store: nothing, whatever the model
  for (const [cached, intact] of [[false, true], [true, false]]) await settleModelCache({}, null, model(cached), intact, { buffer }, 20);
  // a failing write is reported, never thrown
  const reported = /** @type {any[]} */ ([]);
  m = model(false);
  await settleModelCache({ onCacheError: (/** @type {any} */ e) => reported.push(e.code) }, reading({}, { put: new Error('ro') }), m, true, { buffer }, 20);
  assert.deepEqual([reported, m.record.cache], [['CacheFailed'], 'write-failed']);
});
