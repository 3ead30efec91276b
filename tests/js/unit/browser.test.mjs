// The loader's browser-only paths, in node: this file hides node from the loader (host.js's
// `isNode` is read once, when the module loads; node runs each test file in its own process),
// then gives it a page's Cache API, IndexedDB and localStorage as small in-memory fakes, and
// checks the content-addressed cache (fetch.js cacheApiStore) and the version floor's memory
// (trust.js) against the contract written in those modules' comments.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';

const versions = process.versions;
Object.defineProperty(process, 'versions', { value: { ...versions, node: undefined }, configurable: true });
const { isNode } = await import('../../../crates/wasm/js/host.js');
// The loader's functions typed loosely (any): these tests hand them fakes (a Source, a Response,
// options holding only the fields a function reads) and hostile values, on purpose.
const { CACHE_NAME, drain, fetchSigned, openStore } = /** @type {any} */ (await import('../../../crates/wasm/js/fetch.js'));
const { checkVersionFloor } = /** @type {any} */ (await import('../../../crates/wasm/js/trust.js'));
const { loaderStats } = await import('../../../crates/wasm/js/errors.js');
Object.defineProperty(process, 'versions', { value: versions, configurable: true });

const sha256 = (/** @type {Uint8Array | string} */ data) => createHash('sha256').update(data).digest('hex');
const URL_A = new URL('https://cdn.invalid/a.wasm');

/** A page's `caches` with one cache per name, keyed by request URL; records the calls. */
function fakeCaches(/** @type {any} */ fail = {}) {
  const calls = /** @type {string[]} */ ([]);
  /** @type {Map<string, Map<string, Response>>} */
  const caches = new Map();
  return {
    calls,
    caches,
    async open(/** @type {string} */ name) {
      calls.push(`open ${name}`);
      if (fail.open) throw fail.open;
      if (!caches.has(name)) caches.set(name, new Map());
      const entries = caches.get(name);
      return {
        async match(/** @type {string} */ key) {
          calls.push(`match ${key}`);
          const hit = entries.get(key);
          return hit ? hit.clone() : undefined;
        },
        async put(/** @type {string} */ key, /** @type {Response} */ response) {
          calls.push(`put ${key} ${response.headers.get('content-type')}`);
          if (fail.put) throw fail.put;
          entries.set(key, new Response(await response.arrayBuffer(), { headers: response.headers }));
        },
        async delete(/** @type {string} */ key) {
          calls.push(`delete ${key}`);
          return entries.delete(key);
        },
      };
    },
  };
}

function page(/** @type {Record<string, any>} */ globals) {
  const saved = Object.fromEntries(Object.keys(globals).map((k) => [k, Object.getOwnPropertyDescriptor(globalThis, k)]));
  for (const [k, v] of Object.entries(globals)) Object.defineProperty(globalThis, k, { value: v, configurable: true, writable: true });
  return () => {
    for (const [k, d] of Object.entries(saved)) {
      if (d) Object.defineProperty(globalThis, k, d);
      else delete globalThis[k];
    }
  };
}

test('the loader sees a page here', () => {
  assert.equal(isNode, false);
});

test('openStore on a page: the Cache API, unless none, insecure or blocked', async () => {
  const caches = fakeCaches();
  let restore = page({ caches, isSecureContext: true });
  try {
    assert.equal(await openStore({ cache: 'none' }), null);
    const store = await openStore({ cache: 'auto', cacheDir: '/ignored' });
    assert.equal(store.kind, 'cache-api');
    assert.deepEqual(caches.calls, [`open ${CACHE_NAME}`]);
    assert.equal(await openStore({ cache: 'auto' }).then((s) => s.kind), 'cache-api');
    globalThis.isSecureContext = false;
    assert.equal(await openStore({ cache: 'auto' }), null);
    globalThis.isSecureContext = undefined; // a page that does not say: the Cache API
    assert.equal((await openStore({ cache: 'auto' })).kind, 'cache-api');
  } finally {
    restore();
  }
  restore = page({ caches: fakeCaches({ open: new Error('SecurityError') }), isSecureContext: true });
  try {
    assert.equal(await openStore({ cache: 'auto' }), null);
  } finally {
    restore();
  }
  restore = page({ caches: undefined });
  try {
    assert.equal(await openStore({ cache: 'auto' }), null);
  } finally {
    restore();
  }
});

test('the Cache API store: entries under the page origin, by SHA-256, octet-stream', async () => {
  const caches = fakeCaches();
  const restore = page({ caches, isSecureContext: true, location: { href: 'https://app.example/sub/page.html?x=1' } });
  try {
    const store = await openStore({ cache: 'auto' });
    const data = Uint8Array.from({ length: 300 }, (_, i) => i & 0xff);
    const key = sha256(data);
    const where = `https://app.example/.tinyrustlm-cas/sha256/${key}`;
    assert.equal(await store.get(key), null);
    await store.put(key, data);
    assert.deepEqual([...caches.caches.get(CACHE_NAME).keys()], [where]);
    const before = loaderStats().storeBytesRead;
    const source = await store.get(key);
    assert.equal((await drain({}, source, { what: 'm', url: URL_A, limit: 300, phase: 'x' })).sha256, key);
    assert.equal(loaderStats().storeBytesRead - before, 300); // every byte read from the entry counted
    await store.drop(key);
    assert.equal(await store.get(key), null);
    assert.deepEqual(caches.calls.slice(1), [`match ${where}`, `put ${where} application/octet-stream`, `match ${where}`, `delete ${where}`, `match ${where}`]);
  } finally {
    restore();
  }
});

test('the Cache API store without a location keys under localhost; a hit skips the network', async () => {
  const caches = fakeCaches();
  const restore = page({ caches, isSecureContext: true, location: undefined });
  try {
    const data = new TextEncoder().encode('module bytes');
    const store = await openStore({ cache: 'auto' });
    let requests = 0;
    const o = { fetch: async () => (requests++, new Response(data)) };
    const spec = { url: URL_A, what: 'module', sha256: sha256(data), size: data.length, phase: 'module' };
    assert.equal((await fetchSigned(o, store, spec)).record.cache, 'stored');
    assert.deepEqual([...caches.caches.get(CACHE_NAME).keys()], [`http://localhost/.tinyrustlm-cas/sha256/${sha256(data)}`]);
    const again = await fetchSigned(o, store, spec);
    assert.equal(again.record.cache, 'hit');
    assert.deepEqual(again.bytes, data);
    assert.equal(requests, 1);
  } finally {
    restore();
  }
});

const TRUST = { keys: [{ keyid: 'k1' }] };
const ROOT_ID = sha256('k1');
const KEY = 'tinyrustlm.newest-accepted-version';

/** A page's localStorage over a Map; `fail` makes getItem or setItem throw. */
function fakeStorage(/** @type {any} */ fail = {}) {
  const items = new Map();
  return {
    items,
    getItem: (/** @type {string} */ k) => {
      if (fail.get) throw fail.get;
      return items.has(k) ? items.get(k) : null;
    },
    setItem: (/** @type {string} */ k, /** @type {string} */ v) => {
      if (fail.set) throw fail.set;
      items.set(k, v);
    },
  };
}

test('the version floor on a page without IndexedDB: localStorage', async () => {
  const storage = fakeStorage();
  const restore = page({ indexedDB: undefined, localStorage: storage });
  try {
    assert.deepEqual(await checkVersionFloor({ trustedKeys: TRUST }, { version: '1.1.0' }), { floor: null, remembered: null });
    assert.equal(storage.items.get(KEY), JSON.stringify({ [ROOT_ID]: '1.1.0' }));
    await assert.rejects(checkVersionFloor({ trustedKeys: TRUST }, { version: '1.0.0' }), { code: 'Rollback' });
    assert.deepEqual(await checkVersionFloor({ trustedKeys: TRUST }, { version: '1.2.0' }), { floor: '1.1.0', remembered: '1.1.0' });
    // rememberVersion: false reads and writes nothing
    assert.deepEqual(await checkVersionFloor({ trustedKeys: TRUST, rememberVersion: false }, { version: '0.1.0' }), { floor: null, remembered: null });
    assert.equal(storage.items.get(KEY), JSON.stringify({ [ROOT_ID]: '1.2.0' }));
    storage.items.set(KEY, '{broken');
    assert.deepEqual(await checkVersionFloor({ trustedKeys: TRUST }, { version: '0.1.0' }), { floor: null, remembered: null });
    assert.equal(storage.items.get(KEY), JSON.stringify({ [ROOT_ID]: '0.1.0' }));
  } finally {
    restore();
  }
});

test('localStorage blocked or full: the floor stays minVersion, nothing thrown', async () => {
  for (const fail of [{ get: new Error('SecurityError') }, { set: new Error('QuotaExceededError') }]) {
    const restore = page({ indexedDB: undefined, localStorage: fakeStorage(fail) });
    try {
      assert.deepEqual(await checkVersionFloor({ trustedKeys: TRUST, minVersion: '1.0.0' }, { version: '1.5.0' }), { floor: '1.0.0', remembered: null });
    } finally {
      restore();
    }
  }
  const restore = page({ indexedDB: undefined, localStorage: undefined });
  try {
    assert.deepEqual(await checkVersionFloor({ trustedKeys: TRUST }, { version: '1.5.0' }), { floor: null, remembered: null });
  } finally {
    restore();
  }
});

/** A page's IndexedDB: one database of one object store, kept in a Map; records the calls. */
function fakeIndexedDb(/** @type {any} */ fail = {}) {
  const calls = /** @type {string[]} */ ([]);
  /** @type {Map<string, Map<string, any>>} */
  const stores = new Map();
  let created = false;
  const later = (/** @type {() => void} */ f) => setTimeout(f, 0);
  const db = {
    createObjectStore: (/** @type {string} */ name) => {
      calls.push(`create ${name}`);
      stores.set(name, new Map());
    },
    close: () => calls.push('close'),
    transaction: (/** @type {string} */ name, /** @type {string} */ mode, /** @type {any} */ options) => {
      calls.push(`transaction ${name} ${mode}${options ? ` ${options.durability}` : ''}`);
      const tx = /** @type {any} */ ({});
      tx.objectStore = () => ({
        get: (/** @type {string} */ key) => {
          const request = /** @type {any} */ ({});
          later(() => {
            if (fail.get) return request.onerror();
            request.result = stores.get(name).get(key);
            request.onsuccess();
          });
          return request;
        },
        put: (/** @type {any} */ value, /** @type {string} */ key) => {
          calls.push(`put ${key}`);
          later(() => {
            if (fail.put) return tx.onabort();
            stores.get(name).set(key, structuredClone(value));
            tx.oncomplete();
          });
        },
      });
      return tx;
    },
  };
  return {
    calls,
    stores,
    open: (/** @type {string} */ name, /** @type {number} */ version) => {
      calls.push(`open ${name} ${version}`);
      const request = /** @type {any} */ ({});
      later(() => {
        if (fail.open) {
          request.error = fail.open;
          return request.onerror();
        }
        request.result = db;
        if (!created) {
          created = true;
          request.onupgradeneeded();
        }
        request.onsuccess();
      });
      return request;
    },
  };
}

test('the version floor on a page: IndexedDB, written with strict durability', async () => {
  const idb = fakeIndexedDb();
  const restore = page({ indexedDB: idb, localStorage: fakeStorage({ get: new Error('unused'), set: new Error('unused') }) });
  try {
    assert.deepEqual(await checkVersionFloor({ trustedKeys: TRUST }, { version: '2.0.0' }), { floor: null, remembered: null });
    assert.deepEqual(Object.fromEntries(idb.stores.get('versions')), { 'newest-accepted': { [ROOT_ID]: '2.0.0' } });
    await assert.rejects(checkVersionFloor({ trustedKeys: TRUST }, { version: '1.9.0' }), { code: 'Rollback' });
    assert.deepEqual(await checkVersionFloor({ trustedKeys: TRUST }, { version: '2.0.0' }), { floor: '2.0.0', remembered: '2.0.0' });
    assert.deepEqual(idb.calls, [
      'open tinyrustlm 1', 'create versions', 'transaction versions readonly', 'close',
      'open tinyrustlm 1', 'transaction versions readwrite strict', 'put newest-accepted', 'close',
      'open tinyrustlm 1', 'transaction versions readonly', 'close',
      'open tinyrustlm 1', 'transaction versions readonly', 'close',
    ]);
  } finally {
    restore();
  }
});

test('IndexedDB blocked or failing: the floor stays minVersion, nothing thrown', async () => {
  for (const fail of [{ open: new Error('blocked') }, { get: true }, { put: true }]) {
    const idb = fakeIndexedDb(fail);
    const restore = page({ indexedDB: idb });
    try {
      assert.deepEqual(await checkVersionFloor({ trustedKeys: TRUST, minVersion: '1.0.0' }, { version: '1.5.0' }), { floor: '1.0.0', remembered: null }, JSON.stringify(fail));
      // nothing was remembered: the second load sees no floor but minVersion either
      assert.deepEqual(await checkVersionFloor({ trustedKeys: TRUST, minVersion: '1.0.0' }, { version: '1.5.0' }), { floor: '1.0.0', remembered: null }, JSON.stringify(fail));
    } finally {
      restore();
    }
  }
});
