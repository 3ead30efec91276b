// TinyRustLM loader, the fetch room: every byte the loader downloads comes through here.
//
// - bounded: a download stops at its bound (a module's signed size, the manifest and signature
//   caps below, the model's declared size) with `BoundExceeded`, never after it;
// - node reads bundle paths and file: URLs itself (node's fetch cannot);
// - progress: onProgress({ phase, loaded, total, url }) per chunk, non-decreasing, ending at total;
// - cached by content: a store keyed by SHA-256 (the Cache API in browsers, a folder the caller
//   names in node); every hit is re-hashed before use, a poisoned entry is dropped and fetched
//   again, a failed write (quota) is reported and the network copy used.
import { isNode, sha256Hex } from './host.js';
import { LoaderError } from './errors.js';
import { Sha256, sha256SelfCheck } from './sha256.js';

/** Bounds of the files whose size nothing signed states (a manifest is a few KB). */
export const MANIFEST_CAP = 4 << 20;
export const SIGNATURE_CAP = 1 << 20;
/** The Cache API cache of the content-addressed store (one per origin). */
export const CACHE_NAME = 'tinyrustlm-cas-v1';
const CHUNK = 1 << 20;

/** @typedef {import('./loader.js').FetchRecord} FetchRecord */
/** @typedef {{ read(): Promise<{ done: boolean, value?: Uint8Array }>, cancel(): void, length: number | null }} Source */

/** The default fetch: node's own for http(s), the file system for file: URLs. */
export const defaultFetch = (/** @type {URL} */ url) => globalThis.fetch(url);

/** A Source over a node Readable. */
function nodeSource(stream, length) {
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

/** A Source over a WHATWG Response. */
export function responseSource(response) {
  const header = response.headers && response.headers.get('content-length');
  const length = header !== null && header !== undefined && /^\d+$/.test(header) ? Number(header) : null;
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
  return { length, read: () => reader.read(), cancel: () => void reader.cancel().catch(() => {}) };
}

/** Opens `url` for reading: a Source, or a FetchFailed LoaderError. */
export async function open(o, url, what) {
  if (isNode && url.protocol === 'file:' && o.fetch === defaultFetch) {
    const fs = await import('node:fs');
    const { fileURLToPath } = await import('node:url');
    const path = fileURLToPath(url);
    let st;
    try {
      st = await fs.promises.stat(path);
    } catch (e) {
      throw new LoaderError('FetchFailed', `${what} ${url}: ${e.message || e}`, { url: String(url) });
    }
    // a FIFO or a device has no size: it is read like a body without Content-Length, bounded
    return nodeSource(fs.createReadStream(path, { highWaterMark: 1 << 16 }), st.isFile() ? st.size : null);
  }
  let response;
  try {
    response = await o.fetch(url);
  } catch (e) {
    throw new LoaderError('FetchFailed', `${what} ${url}: ${e.message || e}`, { url: String(url) });
  }
  if (!response.ok) throw new LoaderError('FetchFailed', `${what} ${url}: HTTP ${response.status}`, { url: String(url), status: response.status });
  return responseSource(response);
}

function tooLarge(what, url, limit, seen) {
  return new LoaderError('BoundExceeded', `${what} ${url} is larger than its bound of ${limit} bytes (${seen} seen); the download was stopped there`, { url: String(url), limit });
}

/** Refuses (`HashSelfCheck`) when the streaming SHA-256 disagrees with crypto.subtle.digest. */
export async function streamingHashChecked() {
  try {
    return await sha256SelfCheck();
  } catch (e) {
    throw new LoaderError('HashSelfCheck', `${e.message}: no streamed hash can be trusted in this engine`);
  }
}

/**
 * Reads `source` to its end, at most `limit` bytes in all; `sink(chunk, at)` gets every chunk
 * (by default they are gathered and returned). `start` bytes (hashed into `hash`) were consumed
 * from the same source before: they count toward the bound and the progress. Progress goes to `o.onProgress` as
 * `phase`, from `start` to the end. Resolves to { bytes (null with a sink), length (with
 * start), sha256 }.
 */
export async function drain(o, source, { what, url, limit, phase, total = null, sink = null, start = 0, hash = new Sha256() }) {
  try {
    await streamingHashChecked();
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
  const parts = [];
  let loaded = start;
  const progress = (n) => o.onProgress && o.onProgress({ phase, loaded: n, total: expected ?? n, url: String(url) });
  progress(loaded);
  for (;;) {
    let step;
    try {
      step = await source.read();
    } catch (e) {
      throw new LoaderError('FetchFailed', `${what} ${url}: ${e.message || e}`, { url: String(url) });
    }
    if (step.done) break;
    const chunk = step.value;
    if (loaded + chunk.length > limit) {
      source.cancel();
      throw tooLarge(what, url, limit, loaded + chunk.length);
    }
    hash.update(chunk);
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
  return { bytes, length: loaded, sha256: hash.hex() };
}

/** The bytes of `url`, at most `limit` (manifest, signature). */
export async function fetchCapped(o, url, what, limit, phase) {
  const { bytes } = await drain(o, await open(o, url, what), { what, url, limit, phase });
  return bytes;
}

// ---- the content-addressed store ----------------------------------------------------------------

/**
 * The store `o.cache` asks for: 'none' -> null; 'auto' -> the Cache API where the page has one,
 * in node the folder `o.cacheDir` when given, else null.
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

const keyOf = (sha256) => new URL(`/.tinyrustlm-cas/sha256/${sha256}`, globalThis.location ? globalThis.location.href : 'http://localhost/').href;

function cacheApiStore(cache) {
  return {
    kind: 'cache-api',
    async get(sha256) {
      const hit = await cache.match(keyOf(sha256));
      return hit ? responseSource(hit) : null;
    },
    async put(sha256, body) {
      await cache.put(keyOf(sha256), new Response(body, { headers: { 'content-type': 'application/octet-stream' } }));
    },
    async drop(sha256) {
      await cache.delete(keyOf(sha256));
    },
  };
}

async function dirStore(dir) {
  const fs = await import('node:fs');
  const { join } = await import('node:path');
  const { Readable } = await import('node:stream');
  const { pipeline } = await import('node:stream/promises');
  await fs.promises.mkdir(dir, { recursive: true });
  const path = (sha256) => join(String(dir), sha256);
  return {
    kind: 'directory',
    async get(sha256) {
      let st;
      try {
        st = await fs.promises.stat(path(sha256));
      } catch {
        return null;
      }
      return nodeSource(fs.createReadStream(path(sha256), { highWaterMark: 1 << 16 }), st.size);
    },
    async put(sha256, body) {
      const tmp = `${path(sha256)}.${process.pid}.tmp`;
      const from = body instanceof Uint8Array ? Readable.from([body]) : Readable.fromWeb(body);
      await pipeline(from, fs.createWriteStream(tmp));
      await fs.promises.rename(tmp, path(sha256));
    },
    async drop(sha256) {
      await fs.promises.rm(path(sha256), { force: true });
    },
  };
}

/** A store write that never fails the load: a quota (or any) error is recorded, the bytes used. */
export async function storeQuietly(o, store, record, body) {
  try {
    await store.put(record.sha256, body);
    record.cache = record.cache === 'poisoned' ? 'poisoned' : 'stored';
  } catch (e) {
    const quota = e && (e.name === 'QuotaExceededError' || e.code === 'ENOSPC');
    const error = new LoaderError(quota ? 'CacheQuota' : 'CacheFailed', `caching ${record.url}: ${e.message || e}`, { url: record.url });
    record.cache = quota ? 'quota-exceeded' : 'write-failed';
    if (o.onCacheError) o.onCacheError(error);
  }
}

/**
 * A cached entry of `sha256`, re-hashed: a Uint8Array when it is intact (or, with `sink`, true
 * after streaming it there), null when absent; a poisoned entry is dropped (record.cache =
 * 'poisoned') and null returned, so the caller fetches it again.
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
 */
export async function fetchSigned(o, store, { url, what, sha256, size, phase }) {
  /** @type {FetchRecord} */
  const record = { what, url: String(url), sha256, size, cache: store ? 'miss' : 'off' };
  const cached = await fromStore(o, store, record, { limit: size, phase });
  if (cached instanceof Uint8Array) return { bytes: cached, sha256, record };
  const got = await drain(o, await open(o, url, what), { what, url, limit: size, phase, total: size });
  if (got.sha256 === sha256 && got.length === size && store) await storeQuietly(o, store, record, got.bytes);
  return { bytes: got.bytes, sha256: got.sha256, record };
}

/**
 * `len` bytes of Wasm memory from `ptr` as a stream of copied chunks (what a store writes: no
 * whole-model copy). A fresh view per chunk, so a grown (detached) buffer is never read.
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
