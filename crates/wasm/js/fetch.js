// TinyRustLM loader, the fetch room: every byte the loader downloads comes through here.
//
// - bounded: a download stops at its bound (a module's signed size, the manifest and signature
//   caps below, the model's declared size) with `BoundExceeded`, never after it;
// - node reads bundle paths and file: URLs itself (node's fetch cannot);
// - progress: onProgress({ phase, loaded, total, url }) per chunk, non-decreasing, ending at total;
// - cached by content: a store keyed by SHA-256 (the Cache API in browsers, a folder the caller
//   names in node); every hit is hashed before use (a module as it is read; the model once, in
//   place in Wasm memory: session.js `keepStreamed`), a poisoned entry is dropped and fetched
//   again, a failed write (quota) is reported and the network copy used.
import { isNode, sha256Hex } from './host.js';
import { LoaderError, messageOf, stats } from './errors.js';
import { Sha256, sha256SelfCheck } from './sha256.js';

/** Bounds of the files whose size nothing signed states (a manifest is a few KB). */
export const MANIFEST_CAP = 4 << 20;
export const SIGNATURE_CAP = 1 << 20;
/** The Cache API cache of the content-addressed store (one per origin). */
export const CACHE_NAME = 'tinyrustlm-cas-v1';
const CHUNK = 1 << 20;

/** @typedef {import('./loader.js').FetchRecord} FetchRecord */
/** @typedef {import('./loader.js').ResolvedOptions} ResolvedOptions */
/** @typedef {import('./loader.js').ProgressPhase} ProgressPhase */
/** One read of a Source: a chunk, or the end. */
/** @typedef {{ done: true, value?: Uint8Array }| { done: false, value: Uint8Array }} Chunk */
/**
 * A body being read: `length` the bytes it will yield when known; `total` (when known) the whole
 * resource's length, for a Source over a part of it (a Range answer's Content-Range); `ranged`
 * whether it is only the part asked for (a server that honoured the Range).
 * @typedef {{ read(): Promise<Chunk>, cancel(): void, length: number | null, total?: number | null, ranged?: boolean }} Source
 */
/**
 * The content-addressed store: entries by SHA-256 (`kind` says which store it is).
 * @typedef {{ kind: string, get(sha256: string): Promise<Source | null>, put(sha256: string, body: Uint8Array | ReadableStream<Uint8Array>): Promise<void>, drop(sha256: string): Promise<void> }} Store
 */
/** Where a file is read from and how much of it may come (`drain`). */
/** @typedef {{ what: string, url: URL | string, limit: number, phase: ProgressPhase | null, total?: number | null, sink?: ((chunk: Uint8Array, at: number) => void | Promise<void>) | null, start?: number, hash?: Sha256 | null }} DrainSpec */

/** The default fetch: node's own for http(s), the file system for file: URLs. */
export const defaultFetch = (/** @type {URL} */ url, /** @type {RequestInit | undefined} */ init) => globalThis.fetch(url, init);

/**
 * A Source over a node Readable (of Buffers).
 * @param {import('node:stream').Readable} stream
 * @param {number | null} length
 * @returns {Source}
 */
function nodeSource(stream, length) {
  /** @type {AsyncIterator<Buffer>} */
  const it = stream[Symbol.asyncIterator]();
  return {
    length,
    read: async () => {
      const { done, value } = await it.next();
      return done ? { done: true } : { done: false, value: new Uint8Array(value.buffer, value.byteOffset, value.byteLength) };
    },
    cancel: () => stream.destroy(),
  };
}

/**
 * A Source over a WHATWG Response. Its cancel also aborts the request (`abort`, the
 * AbortController its fetch was given): cancelling the body alone lets some engines' network
 * process go on reading it (WebKit: hundreds of MB past the bound).
 * @param {Response} response
 * @param {AbortController | null} [abort]
 * @returns {Source}
 */
export function responseSource(response, abort = null) {
  const header = response.headers && response.headers.get('content-length');
  const length = /^\d+$/.test(String(header)) ? Number(header) : null; // absent: 'null', no digits
  if (!response.body) {
    // a fetch without streams: one chunk (the caller still bounds it)
    let sent = false;
    return {
      length,
      read: async () => {
        if (sent) return { done: true };
        sent = true;
        return { done: false, value: new Uint8Array(await response.arrayBuffer()) };
      },
      cancel: () => {},
    };
  }
  const reader = response.body.getReader();
  const cancel = () => {
    reader.cancel().catch(() => {});
    if (abort) abort.abort();
  };
  return { length, read: () => reader.read(), cancel };
}

/**
 * A local file (node, the default fetch) as a Source of its bytes [start, end) (end null: to
 * its end); a FIFO or a device has no size: it is read like a body without Content-Length.
 * @param {URL} url
 * @param {string} what
 * @param {number} [start]
 * @param {number | null} [end]
 * @returns {Promise<Source>}
 */
async function openFile(url, what, start = 0, end = null) {
  const fs = await import('node:fs');
  const { fileURLToPath } = await import('node:url');
  const path = fileURLToPath(url);
  let st;
  try {
    st = await fs.promises.stat(path);
  } catch (e) {
    throw new LoaderError('FetchFailed', `${what} ${url}: ${messageOf(e)}`, { url: String(url) });
  }
  if (!st.isFile()) return nodeSource(fs.createReadStream(path, { highWaterMark: 1 << 16 }), null);
  const stop = end === null ? st.size : Math.min(end, st.size);
  if (start === 0 && end === null) return { ...nodeSource(fs.createReadStream(path, { highWaterMark: 1 << 16 }), st.size), total: st.size };
  const length = Math.max(0, stop - start);
  if (length === 0) return { length: 0, total: st.size, ranged: true, read: async () => /** @type {Chunk} */ ({ done: true }), cancel: () => {} };
  return { ...nodeSource(fs.createReadStream(path, { highWaterMark: 1 << 16, start, end: stop - 1 }), length), total: st.size, ranged: true };
}

/**
 * Opens `url` for reading: a Source, or a FetchFailed LoaderError.
 * @param {Pick<ResolvedOptions, 'fetch'>} o
 * @param {URL} url
 * @param {string} what
 * @returns {Promise<Source>}
 */
export async function open(o, url, what) {
  if (isNode && url.protocol === 'file:' && o.fetch === defaultFetch) return openFile(url, what);
  const abort = new AbortController();
  let response;
  try {
    response = await o.fetch(url, { signal: abort.signal });
  } catch (e) {
    throw new LoaderError('FetchFailed', `${what} ${url}: ${messageOf(e)}`, { url: String(url) });
  }
  if (!response.ok) {
    abort.abort();
    throw new LoaderError('FetchFailed', `${what} ${url}: HTTP ${response.status}`, { url: String(url), status: response.status });
  }
  return responseSource(response, abort);
}

// ---- the model download: retried with backoff, resumed by range ----------------------------

/**
 * How often and how patiently the model download is tried (issue 36): at most `attempts` tries
 * in all (the first, every retry and every resume); before try n+1 a wait of
 * min(firstWaitMs * 2^(n-1), maxWaitMs). Retried: a fetch that throws (the network), HTTP 408,
 * 429 and 5xx, a body that breaks off or ends before the model's declared size.
 */
export const MODEL_RETRY = Object.freeze({ attempts: 4, firstWaitMs: 250, maxWaitMs: 4000 });
const RETRY_STATUSES = new Set([408, 429, 500, 502, 503, 504]);

/** A failed try: the error to throw when no try is left, and whether another may be made. */
class Attempt extends Error {
  /**
   * @param {LoaderError} error
   * @param {boolean} retry
   */
  constructor(error, retry) {
    super(error.message);
    this.error = error; // the LoaderError to throw when no try is left
    this.retry = retry;
  }
}

/**
 * One try at `url` for its bytes [start, end) (end null: to its end): { source, skip } (skip:
 * bytes a 200 answer, which ignored the Range, repeats; source.ranged: the answer is the part).
 * @param {Pick<ResolvedOptions, 'fetch'>} o
 * @param {URL} url
 * @param {string} what
 * @param {number} start
 * @param {number | null} end
 * @returns {Promise<{ source: Source, skip: number }>}
 */
async function openFrom(o, url, what, start, end) {
  const detail = { url: String(url) };
  const abort = new AbortController();
  const signal = abort.signal;
  const ranged = start > 0 || end !== null;
  let response;
  try {
    response = await o.fetch(url, ranged ? { headers: { Range: `bytes=${start}-${end === null ? '' : end - 1}` }, signal } : { signal });
  } catch (e) {
    throw new Attempt(new LoaderError('FetchFailed', `${what} ${url}: ${messageOf(e)}`, detail), true);
  }
  if (!response.ok) {
    const error = new LoaderError('FetchFailed', `${what} ${url}: HTTP ${response.status}`, { ...detail, status: response.status });
    if (response.body) response.body.cancel().catch(() => {});
    throw new Attempt(error, RETRY_STATUSES.has(response.status));
  }
  if (ranged && response.status === 206) {
    const range = (response.headers && response.headers.get('content-range')) || '';
    const m = /^bytes (\d+)-\d+\/(\d+|\*)$/.exec(range.trim());
    if (!m || Number(m[1]) !== start) {
      if (response.body) response.body.cancel().catch(() => {});
      const asked = `${start}-${end === null ? '' : end - 1}`;
      throw new Attempt(new LoaderError('FetchFailed', `${what} ${url}: asked for bytes ${asked} and got ${JSON.stringify(range)}`, detail), false);
    }
    return { source: { ...responseSource(response, abort), total: m[2] === '*' ? null : Number(m[2]), ranged: true }, skip: 0 };
  }
  const source = responseSource(response, abort); // a server without ranges: from 0
  return { source: { ...source, total: source.length, ranged: false }, skip: start };
}

/**
 * Opens `url` like `open`, as a Source that retries with backoff (MODEL_RETRY) and, when the
 * body breaks off or ends before `size` bytes, asks for the rest (`Range: bytes=N-`) and goes
 * on. It trusts nothing: every byte it yields is hashed by the caller against the expected
 * SHA-256, as before; once no try is left, an early end ends the Source (the hash refuses it).
 * `part` asks for the bytes [from, to) only (`Range: bytes=from-(to-1)`, to null: to `size`):
 * a server that honours it answers that part (`ranged`, the Source ends at `to`); one that
 * ignores it answers the whole resource: the bytes before `from` are skipped and the Source
 * goes on to `size` (its reader reads what it needs and cancels it). `total`: the whole
 * resource's length when known.
 * @param {Pick<ResolvedOptions, 'fetch'>} o
 * @param {URL} url
 * @param {string} what
 * @param {number | null} size
 * @param {(ms: number) => Promise<void>} [sleep]
 * @param {{ from?: number, to?: number | null }} [part]
 * @returns {Promise<Source>}
 */
export async function openResumable(o, url, what, size, sleep = (ms) => new Promise((r) => setTimeout(r, ms)), { from = 0, to = null } = {}) {
  if (isNode && url.protocol === 'file:' && o.fetch === defaultFetch) return openFile(url, what, from, to);

  let failures = 0;
  const failed = async (/** @type {Attempt} */ attempt) => {
    failures++;
    if (!attempt.retry || failures >= MODEL_RETRY.attempts) throw attempt.error;
    await sleep(Math.min(MODEL_RETRY.firstWaitMs * 2 ** (failures - 1), MODEL_RETRY.maxWaitMs));
  };
  const tryFrom = async (/** @type {number} */ start) => {
    for (;;) {
      try {
        return await openFrom(o, url, what, start, ranged ? to : null);
      } catch (e) {
        if (!(e instanceof Attempt)) throw e;
        await failed(e);
      }
    }
  };
  let ranged = to !== null; // asked for a part, until an answer says the server ignores it
  let { source, skip } = await tryFrom(from);
  ranged = source.ranged === true;
  const end = ranged ? to ?? size : size;
  let received = from;
  return {
    length: source.length === null ? null : source.length - skip,
    total: source.total ?? null,
    ranged,
    cancel: () => source.cancel(),
    /** @returns {Promise<Chunk>} */
    async read() {
      for (;;) {
        /** @type {Chunk | null} */
        let step = null;
        /** @type {unknown} */
        let broke = null;
        try {
          step = await source.read();
        } catch (e) {
          broke = e;
        }
        if (step && !step.done) {
          const dropped = Math.min(skip, step.value.length);
          const chunk = step.value.subarray(dropped);
          skip -= dropped;
          if (chunk.length === 0) continue; // repeated bytes skipped whole, or an empty chunk
          received += chunk.length;
          return { done: false, value: chunk };
        }
        if (step && (end === null || received >= end)) return { done: true };
        source.cancel();
        const why = broke ? `: ${messageOf(broke)}` : ` of ${size}`;
        const attempt = new Attempt(new LoaderError('FetchFailed', `${what} ${url}: broke off after ${received} bytes${why}`, { url: String(url) }), true);
        if (!broke && failures + 1 >= MODEL_RETRY.attempts) return { done: true }; // short: the hash says so
        await failed(attempt);
        ({ source, skip } = await tryFrom(received));
      }
    },
  };
}

/**
 * @param {string} what
 * @param {URL | string} url
 * @param {number} limit
 * @param {number} seen
 */
function tooLarge(what, url, limit, seen) {
  return new LoaderError('BoundExceeded', `${what} ${url} is larger than its bound of ${limit} bytes (${seen} seen); the download was stopped there`, { url: String(url), limit });
}

/** Refuses (`HashSelfCheck`) when the streaming SHA-256 disagrees with crypto.subtle.digest. */
export async function streamingHashChecked() {
  try {
    return await sha256SelfCheck();
  } catch (e) {
    throw new LoaderError('HashSelfCheck', `${messageOf(e)}: no streamed hash can be trusted in this engine`);
  }
}

/**
 * Reads `source` to its end, at most `limit` bytes in all; `sink(chunk, at)` gets every chunk
 * (by default they are gathered and returned). `start` bytes (hashed into `hash`) were consumed
 * from the same source before: they count toward the bound and the progress. Progress goes to `o.onProgress` as
 * `phase`, from `start` to the end. Resolves to { bytes (null with a sink), length (with
 * start), sha256 }. With `hash: null` nothing is hashed here and sha256 is null: the caller
 * hashes the bytes where the sink put them, whole (session.js `keepStreamed`, WebCrypto).
 * @param {Pick<ResolvedOptions, 'onProgress'>} o
 * @param {Source} source
 * @param {DrainSpec} spec
 * @returns {Promise<{ bytes: Uint8Array | null, length: number, sha256: string | null }>}
 */
export async function drain(o, source, { what, url, limit, phase, total = null, sink = null, start = 0, hash = new Sha256() }) {
  try {
    if (hash) await streamingHashChecked();
  } catch (e) {
    source.cancel();
    throw e;
  }
  // source.length (Content-Length) counts the whole body, the `start` bytes read before included
  if (source.length !== null && source.length > limit) {
    source.cancel();
    throw tooLarge(what, url, limit, source.length);
  }
  const expected = total ?? source.length;
  /** @type {Uint8Array[]} */
  const parts = [];
  let loaded = start;
  const progress = (/** @type {number} */ n) => o.onProgress && phase && o.onProgress({ phase, loaded: n, total: expected ?? n, url: String(url) });
  progress(loaded);
  for (;;) {
    let step;
    try {
      step = await source.read();
    } catch (e) {
      throw new LoaderError('FetchFailed', `${what} ${url}: ${messageOf(e)}`, { url: String(url) });
    }
    if (step.done) break;
    const chunk = step.value;
    if (loaded + chunk.length > limit) {
      source.cancel();
      throw tooLarge(what, url, limit, loaded + chunk.length);
    }
    if (hash) hash.update(chunk);
    if (sink) await sink(chunk, loaded);
    else parts.push(chunk);
    loaded += chunk.length;
    if (expected === null || loaded <= expected) progress(loaded);
  }
  if (expected === null || loaded !== expected) progress(loaded); // complete: ends at what arrived
  let bytes = null;
  if (!sink) {
    bytes = parts.length === 1 ? parts[0] : new Uint8Array(loaded - start);
    if (parts.length !== 1) {
      let at = 0;
      for (const p of parts) {
        bytes.set(p, at);
        at += p.length;
      }
    }
  }
  return { bytes, length: loaded, sha256: hash ? hash.hex() : null };
}

/**
 * The bytes of `url`, at most `limit` (manifest, signature).
 * @param {Pick<ResolvedOptions, 'fetch' | 'onProgress'>} o
 * @param {URL} url
 * @param {string} what
 * @param {number} limit
 * @param {ProgressPhase} phase
 */
export async function fetchCapped(o, url, what, limit, phase) {
  const { bytes } = await drain(o, await open(o, url, what), { what, url, limit, phase });
  return /** @type {Uint8Array} */ (bytes); // no sink: drain gathers the bytes
}

// ---- the content-addressed store ----------------------------------------------------------------

/**
 * The store `o.cache` asks for: 'none' -> null; 'auto' -> the Cache API where the page has one,
 * in node the folder `o.cacheDir` when given, else null.
 * @param {Pick<ResolvedOptions, 'cache' | 'cacheDir'>} o
 * @returns {Promise<Store | null>}
 */
export async function openStore(o) {
  if (o.cache === 'none') return null;
  if (isNode) return o.cacheDir ? dirStore(o.cacheDir) : null;
  if (!globalThis.caches || globalThis.isSecureContext === false) return null;
  try {
    return cacheApiStore(await globalThis.caches.open(CACHE_NAME));
  } catch {
    return null; // e.g. storage blocked for this origin: the network alone
  }
}

/**
 * `source` (a store's entry) with every byte read from it counted (loaderStats().storeBytesRead:
 * a cached load reads each entry once).
 * @param {Source} source
 * @returns {Source}
 */
export function counted(source) {
  return {
    ...source,
    async read() {
      const step = await source.read();
      if (!step.done) stats.storeBytesRead += step.value.length;
      return step;
    },
  };
}

const keyOf = (/** @type {string} */ sha256) => new URL(`/.tinyrustlm-cas/sha256/${sha256}`, globalThis.location ? globalThis.location.href : 'http://localhost/').href;

/**
 * @param {Cache} cache
 * @returns {Store}
 */
function cacheApiStore(cache) {
  return {
    kind: 'cache-api',
    async get(sha256) {
      const hit = await cache.match(keyOf(sha256));
      return hit ? counted(responseSource(hit)) : null;
    },
    async put(sha256, body) {
      // BodyInit: what is stored is a download or memoryStream's copies, never a view of shared memory
      await cache.put(keyOf(sha256), new Response(/** @type {BodyInit} */ (body), { headers: { 'content-type': 'application/octet-stream' } }));
    },
    async drop(sha256) {
      await cache.delete(keyOf(sha256));
    },
  };
}

/**
 * @param {string} dir
 * @returns {Promise<Store>}
 */
async function dirStore(dir) {
  const fs = await import('node:fs');
  const { join } = await import('node:path');
  const { Readable } = await import('node:stream');
  const { pipeline } = await import('node:stream/promises');
  await fs.promises.mkdir(dir, { recursive: true });
  const path = (/** @type {string} */ sha256) => join(String(dir), sha256);
  return {
    kind: 'directory',
    async get(sha256) {
      let st;
      try {
        st = await fs.promises.stat(path(sha256));
      } catch {
        return null;
      }
      return counted(nodeSource(fs.createReadStream(path(sha256), { highWaterMark: 1 << 16 }), st.size));
    },
    async put(sha256, body) {
      const tmp = `${path(sha256)}.${process.pid}.tmp`;
      // ReadableStream: the DOM's and node:stream/web's are one class at run time, two types here
      const from = body instanceof Uint8Array ? Readable.from([body]) : Readable.fromWeb(/** @type {import('node:stream/web').ReadableStream<Uint8Array>} */ (body));
      await pipeline(from, fs.createWriteStream(tmp));
      await fs.promises.rename(tmp, path(sha256));
    },
    async drop(sha256) {
      await fs.promises.rm(path(sha256), { force: true });
    },
  };
}

/**
 * A store write that never fails the load: a quota (or any) error is recorded, the bytes used.
 * @param {Pick<ResolvedOptions, 'onCacheError'>} o
 * @param {Store} store
 * @param {FetchRecord} record
 * @param {Uint8Array | ReadableStream<Uint8Array>} body
 */
export async function storeQuietly(o, store, record, body) {
  try {
    await store.put(record.sha256, body);
    record.cache = record.cache === 'poisoned' ? 'poisoned' : 'stored';
  } catch (e) {
    const failure = /** @type {{ name?: unknown, code?: unknown } | null | undefined} */ (e);
    const quota = failure && (failure.name === 'QuotaExceededError' || failure.code === 'ENOSPC');
    const error = new LoaderError(quota ? 'CacheQuota' : 'CacheFailed', `caching ${record.url}: ${messageOf(e)}`, { url: record.url });
    record.cache = quota ? 'quota-exceeded' : 'write-failed';
    if (o.onCacheError) o.onCacheError(error);
  }
}

/**
 * A cached entry of `sha256`, re-hashed: a Uint8Array when it is intact (or, with `sink`, true
 * after streaming it there), null when absent; a poisoned entry is dropped (record.cache =
 * 'poisoned') and null returned, so the caller fetches it again.
 * @param {Pick<ResolvedOptions, 'onProgress'>} o
 * @param {Store | null} store
 * @param {FetchRecord} record
 * @param {{ limit: number, phase: ProgressPhase | null, sink?: DrainSpec['sink'] }} spec
 * @returns {Promise<Uint8Array | true | null>}
 */
export async function fromStore(o, store, record, { limit, phase, sink = null }) {
  if (!store) return null;
  let source;
  try {
    source = await store.get(record.sha256);
  } catch {
    return null;
  }
  if (!source) return null;
  let got;
  try {
    // read silently: progress reports the copy that is used, once
    got = await drain({ ...o, onProgress: null }, source, { what: `cached ${record.what}`, url: record.url, limit, phase, total: limit, sink });
  } catch (e) {
    if (!(e instanceof LoaderError) || e.code !== 'BoundExceeded') throw e;
    got = null;
  }
  if (got && got.sha256 === record.sha256 && got.length === limit) {
    record.cache = 'hit';
    if (phase && o.onProgress) o.onProgress({ phase, loaded: limit, total: limit, url: record.url });
    return got.bytes ?? true;
  }
  record.cache = 'poisoned';
  await store.drop(record.sha256).catch(() => {});
  return null;
}

/**
 * A file whose SHA-256 and size are signed (a module): from the store when an intact copy is
 * there, else downloaded (bounded by `size`) and stored. Resolves to { bytes, sha256, record }
 * — the caller compares sha256 (a mismatch is its typed refusal).
 * @param {Pick<ResolvedOptions, 'fetch' | 'onProgress' | 'onCacheError'>} o
 * @param {Store | null} store
 * @param {{ url: URL, what: string, sha256: string, size: number, phase: ProgressPhase }} spec
 */
export async function fetchSigned(o, store, { url, what, sha256, size, phase }) {
  /** @type {FetchRecord} */
  const record = { what, url: String(url), sha256, size, cache: store ? 'miss' : 'off' };
  const cached = await fromStore(o, store, record, { limit: size, phase });
  if (cached instanceof Uint8Array) return { bytes: cached, sha256, record };
  const got = await drain(o, await open(o, url, what), { what, url, limit: size, phase, total: size });
  const bytes = /** @type {Uint8Array} */ (got.bytes); // no sink: drain gathers the bytes
  const hex = /** @type {string} */ (got.sha256); // drain's own hash: it hashed every byte
  if (hex === sha256 && got.length === size && store) await storeQuietly(o, store, record, bytes);
  return { bytes, sha256: hex, record };
}

// ---- the model's cached copy (session.js streams the model; these decide the store's part) ----

/**
 * Whether `store` (null: none) holds a copy of the model `record` (its `size` bytes), before any
 * lane starts: nothing of it is read or hashed here (the copy is hashed once, in place, after
 * it lands: session.js `keepStreamed`). An entry whose length the store tells (a folder's; a
 * Cache API entry with a Content-Length) and that is not the record's size is poisoned: dropped
 * (record.cache 'poisoned'). Found: record.cache 'hit' until the hash says otherwise.
 * @param {Store | null} store
 * @param {FetchRecord} record
 * @returns {Promise<boolean>}
 */
export async function modelCached(store, record) {
  if (!store) return false;
  const source = await store.get(record.sha256).catch(() => null);
  if (!source) return false;
  source.cancel(); // only its length is asked
  if (source.length !== null && source.length !== record.size) {
    record.cache = 'poisoned';
    await store.drop(record.sha256).catch(() => {});
    return false;
  }
  record.cache = 'hit';
  return true;
}

/**
 * After a load that used the model's cached copy failed before that copy's hash was checked
 * (admission may have been decided on a poisoned header): whether the copy is intact, read whole
 * and hashed as it streams (the failure path only). A poisoned copy is dropped (record.cache
 * 'poisoned'), the caller loads again from the network.
 * @param {Store | null} store
 * @param {FetchRecord} record
 * @returns {Promise<boolean>}
 */
export async function modelIntact(store, record) {
  const sink = (/** @type {Uint8Array} */ chunk) => {
    stats.modelBytesHashed += chunk.length; // drain hashed it
  };
  return (await fromStore({ onProgress: null }, store, record, { limit: record.size, phase: null, sink })) === true;
}

/**
 * The streamed model's bytes as a Source: the store's copy when `modelCached` found one (hashed
 * once it has landed), else the network (`openResumable`, bounded by the declared size). A copy gone since is a miss.
 * @param {Pick<ResolvedOptions, 'fetch'>} o
 * @param {Store | null} store
 * @param {import('./session.js').StreamedModel} model
 * @returns {Promise<Source>}
 */
export async function modelSource(o, store, model) {
  if (model.cached && store) {
    const source = await store.get(model.sha256).catch(() => null);
    if (source) return source;
    model.cached = false; // gone since: the download is stored once it has landed intact
    model.record.cache = 'miss';
  }
  return openResumable(o, model.url, 'model', model.size);
}

/**
 * The store's part once a streamed model has landed whole in Wasm memory: `intact` (its hash
 * and size are the expected ones) or not. A cached copy that was not intact is dropped; a
 * downloaded intact one is stored (copied out of `memory` from `ptr` in chunks); else nothing.
 * @param {Pick<ResolvedOptions, 'onCacheError'>} o
 * @param {Store | null} store
 * @param {{ sha256: string, size: number, record: FetchRecord, cached?: boolean }} model
 * @param {boolean} intact
 * @param {WebAssembly.Memory} memory
 * @param {number} ptr
 */
export async function settleModelCache(o, store, model, intact, memory, ptr) {
  if (!store) return;
  if (!intact) {
    if (model.cached) await store.drop(model.sha256).catch(() => {});
  } else if (!model.cached) {
    await storeQuietly(o, store, model.record, memoryStream(memory, ptr, model.size));
  }
}

/**
 * `len` bytes of Wasm memory from `ptr` as a stream of copied chunks (what a store writes: no
 * whole-model copy). A fresh view per chunk, so a grown (detached) buffer is never read.
 * @param {WebAssembly.Memory} memory
 * @param {number} ptr
 * @param {number} len
 * @returns {ReadableStream<Uint8Array>}
 */
export function memoryStream(memory, ptr, len) {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= len) {
        controller.close();
        return;
      }
      const n = Math.min(CHUNK, len - at);
      controller.enqueue(new Uint8Array(memory.buffer, ptr + at, n).slice());
      at += n;
    },
  });
}

export { sha256Hex };
