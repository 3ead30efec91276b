// TinyRustLM loader, the trust room: the signed manifest (step 1) and the version floor.
import { isNode, sha256Hex } from './host.js';
import { LoaderError } from './errors.js';
import { fetchCapped, MANIFEST_CAP, SIGNATURE_CAP } from './fetch.js';
import { MODEL_TIERS } from './constants.js';

/** What this loader understands of a manifest (and of a model: its kernel tiers). */
export const SUPPORTED = Object.freeze({
  schema: 'tinyrustlm.module-manifest.v1',
  runtimeSemantics: Object.freeze([1]),
  abiVersions: Object.freeze([1]),
  // model format_version -> kernel tier (crates/core/CONTRACT.md §1, §10); any other is refused
  modelTiers: MODEL_TIERS,
});
export const MANIFEST_PAYLOAD_TYPE = 'application/vnd.tinyrustlm.module-manifest.v1+json';
const TRUSTED_KEYS_SCHEMA = 'tinyrustlm.trusted-keys.v1';
const SIGSTORE_MEDIA_TYPE = 'application/vnd.dev.sigstore.bundle.v0.3+json';
const utf8 = new TextEncoder();

function base64Bytes(text, where) {
  if (typeof text !== 'string') throw new LoaderError('MalformedSignature', `${where} is not a base64 string`);
  let binary;
  try {
    binary = atob(text);
  } catch {
    throw new LoaderError('MalformedSignature', `${where} is not valid base64`);
  }
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

function sameBytes(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

// ---- 1. the signed manifest ---------------------------------------------------------------

/** DSSE v1 pre-authentication encoding: the exact bytes that were signed. */
export function pae(payloadType, payload) {
  const type = utf8.encode(payloadType);
  const head = utf8.encode(`DSSEv1 ${type.length} `);
  const mid = utf8.encode(` ${payload.length} `);
  const out = new Uint8Array(head.length + type.length + mid.length + payload.length);
  out.set(head, 0);
  out.set(type, head.length);
  out.set(mid, head.length + type.length);
  out.set(payload, head.length + type.length + mid.length);
  return out;
}

function pemToDer(pem, where) {
  const m = /-----BEGIN PUBLIC KEY-----([A-Za-z0-9+/=\s]+)-----END PUBLIC KEY-----/.exec(pem || '');
  if (!m) throw new LoaderError('TrustedKeysInvalid', `${where}: public_key_pem is not a PEM public key`);
  return base64Bytes(m[1].replace(/\s+/g, ''), where);
}

/** keyid -> { key (CryptoKey), role, notAfter (epoch s) }; a keyid must be SHA-256(SPKI DER). */
async function importTrustedKeys(doc) {
  if (!doc || doc.schema !== TRUSTED_KEYS_SCHEMA || !Array.isArray(doc.keys) || doc.keys.length === 0) {
    throw new LoaderError('TrustedKeysInvalid', `trusted keys must be a ${TRUSTED_KEYS_SCHEMA} document with at least one key`);
  }
  const keys = new Map();
  for (const [i, entry] of doc.keys.entries()) {
    const where = `trustedKeys.keys[${i}]`;
    const der = pemToDer(entry.public_key_pem, where);
    if ((await sha256Hex(der)) !== entry.keyid) throw new LoaderError('TrustedKeysInvalid', `${where}.keyid is not the SHA-256 of the key's SPKI DER`);
    if (entry.role !== 'release' && entry.role !== 'development') throw new LoaderError('TrustedKeysInvalid', `${where}.role must be release or development`);
    const notAfter = Date.parse(entry.not_after) / 1000;
    if (!Number.isFinite(notAfter)) throw new LoaderError('TrustedKeysInvalid', `${where}.not_after is not a date`);
    let key;
    try {
      key = await globalThis.crypto.subtle.importKey('spki', der, { name: 'Ed25519' }, false, ['verify']);
    } catch (e) {
      // An engine without Ed25519 in WebCrypto cannot check a signature at all: say so.
      if (e && e.name === 'NotSupportedError') throw new LoaderError('CryptoUnsupported', `this engine's WebCrypto has no Ed25519 (${e.message || e})`);
      throw new LoaderError('TrustedKeysInvalid', `${where}: not an Ed25519 public key (${e.message || e})`);
    }
    keys.set(entry.keyid, { key, role: entry.role, notAfter });
  }
  return keys;
}

function parseSigstoreBundle(bytes) {
  let doc;
  try {
    doc = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (e) {
    throw new LoaderError('MalformedSignature', `manifest.sigstore.json is not JSON (${e.message})`);
  }
  const env = doc && doc.dsseEnvelope;
  const hint = doc && doc.verificationMaterial && doc.verificationMaterial.publicKey && doc.verificationMaterial.publicKey.hint;
  if (!doc || doc.mediaType !== SIGSTORE_MEDIA_TYPE || !env || typeof hint !== 'string') {
    throw new LoaderError('MalformedSignature', `manifest.sigstore.json is not a ${SIGSTORE_MEDIA_TYPE} DSSE bundle with a key hint`);
  }
  if (typeof env.payloadType !== 'string' || !Array.isArray(env.signatures) || env.signatures.length !== 1) {
    throw new LoaderError('MalformedSignature', 'the DSSE envelope must carry a payloadType and exactly one signature');
  }
  const sig = env.signatures[0];
  if (typeof sig.keyid !== 'string') throw new LoaderError('MalformedSignature', 'dsseEnvelope.signatures[0].keyid must be a string');
  return {
    hint,
    payloadType: env.payloadType,
    payload: base64Bytes(env.payload, 'dsseEnvelope.payload'),
    keyid: sig.keyid,
    sig: base64Bytes(sig.sig, 'dsseEnvelope.signatures[0].sig'),
  };
}

/**
 * Step 1. Returns { manifest, bytes, sha256, keyid, keyClass }. Order of refusals: the bundle's
 * shape, payload type, trusted key, key validity, development key, signature, payload equals
 * manifest.json, schema/semantics/ABI, key class, expiry.
 */
export async function verifySignedManifest(o) {
  const [manifestBytes, signatureBytes] = await Promise.all([
    fetchCapped(o, new URL('manifest.json', o.baseUrl), 'manifest', MANIFEST_CAP, 'manifest'),
    fetchCapped(o, new URL('manifest.sigstore.json', o.baseUrl), 'manifest signature', SIGNATURE_CAP, 'signature'),
  ]);
  const trusted = await importTrustedKeys(o.trustedKeys);
  const signed = parseSigstoreBundle(signatureBytes);
  if (signed.payloadType !== MANIFEST_PAYLOAD_TYPE) {
    throw new LoaderError('WrongPayloadType', `the signed payload is ${JSON.stringify(signed.payloadType)}, not ${MANIFEST_PAYLOAD_TYPE} (swapped signature files?)`);
  }
  const key = trusted.get(signed.keyid);
  if (key === undefined) throw new LoaderError('UntrustedKey', `signed by key ${signed.keyid.slice(0, 16)}…, which is not in the trusted keys`, { keyid: signed.keyid });
  if (signed.hint !== signed.keyid) throw new LoaderError('KeyHintMismatch', `publicKey.hint ${signed.hint.slice(0, 16)}… is not the signing key`);
  if (o.now >= key.notAfter) throw new LoaderError('KeyExpired', `trusted key ${signed.keyid.slice(0, 16)}… expired`, { keyid: signed.keyid });
  if (key.role === 'development' && !o.allowDevKey) {
    throw new LoaderError('DevelopmentKey', 'the manifest is signed by a development key (pass allowDevKey: true to accept it)', { keyid: signed.keyid });
  }
  const ok = await globalThis.crypto.subtle.verify({ name: 'Ed25519' }, key.key, signed.sig, pae(signed.payloadType, signed.payload));
  if (!ok) throw new LoaderError('SignatureInvalid', 'the Ed25519 signature does not verify over PAE(payloadType, payload)');
  if (!sameBytes(signed.payload, manifestBytes)) {
    throw new LoaderError('PayloadMismatch', 'manifest.json is not byte-identical to the signed payload');
  }
  let manifest;
  try {
    manifest = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(signed.payload));
  } catch (e) {
    throw new LoaderError('BadManifest', `the signed manifest is not JSON (${e.message})`);
  }
  if (manifest.schema !== SUPPORTED.schema) throw new LoaderError('UnsupportedAbi', `manifest schema ${JSON.stringify(manifest.schema)} is not ${SUPPORTED.schema}`);
  if (!SUPPORTED.runtimeSemantics.includes(manifest.runtime_semantics) || !SUPPORTED.abiVersions.includes(manifest.abi_version)) {
    throw new LoaderError('UnsupportedAbi', `runtime_semantics ${manifest.runtime_semantics} / abi_version ${manifest.abi_version} are not supported by this loader (${SUPPORTED.runtimeSemantics} / ${SUPPORTED.abiVersions})`);
  }
  if (manifest.key_class !== key.role) throw new LoaderError('KeyClassMismatch', `manifest key_class ${manifest.key_class} but the key's role is ${key.role}`);
  if (!(typeof manifest.expires_epoch === 'number') || o.now >= manifest.expires_epoch) {
    throw new LoaderError('ManifestExpired', `the manifest expired at ${new Date(manifest.expires_epoch * 1000).toISOString()}`, { expires_epoch: manifest.expires_epoch });
  }
  if (!Array.isArray(manifest.artifacts)) throw new LoaderError('BadManifest', 'the manifest lists no wasm artifacts');
  return { manifest, bytes: manifestBytes, sha256: await sha256Hex(manifestBytes), keyid: signed.keyid, keyClass: key.role };
}

// ---- the version floor --------------------------------------------------------------------------

const VERSION = /^(\d+)\.(\d+)\.(\d+)(?:[-+].*)?$/;

/** Orders release versions (major.minor.patch; anything after them is ignored): -1, 0 or 1. */
export function compareVersions(a, b) {
  const pa = VERSION.exec(a);
  const pb = VERSION.exec(b);
  if (!pa || !pb) throw new LoaderError('BadOptions', `${JSON.stringify(pa ? b : a)} is not a major.minor.patch version`);
  for (let i = 1; i <= 3; i++) {
    const d = Number(pa[i]) - Number(pb[i]);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return 0;
}

/** Which trusted keys these are: SHA-256 of their sorted key ids (one memory per trust root). */
export async function trustRootId(trustedKeys) {
  const ids = (trustedKeys.keys || []).map((k) => String(k.keyid)).sort();
  return sha256Hex(utf8.encode(ids.join('\n')));
}

/**
 * Where the newest accepted version is remembered: `o.versionFile` (node: a JSON file the caller
 * names, { trustRootId: version }), else the page's IndexedDB (localStorage where there is
 * none; both per origin), else nowhere.
 */
function versionMemory(o) {
  if (o.versionFile) {
    return {
      async read() {
        const fs = await import('node:fs');
        try {
          return JSON.parse(await fs.promises.readFile(o.versionFile, 'utf-8'));
        } catch (e) {
          if (e && e.code === 'ENOENT') return {};
          throw new LoaderError('BadOptions', `versionFile ${o.versionFile} is not readable JSON (${e.message || e})`);
        }
      },
      async write(doc) {
        const fs = await import('node:fs');
        const tmp = `${o.versionFile}.${process.pid}.tmp`;
        await fs.promises.writeFile(tmp, `${JSON.stringify(doc, null, 1)}\n`);
        await fs.promises.rename(tmp, o.versionFile);
      },
    };
  }
  if (o.rememberVersion === false || isNode) return null; // node: only a versionFile
  if (globalThis.indexedDB) return indexedDbMemory(globalThis.indexedDB);
  return localStorageMemory(globalThis.localStorage);
}

/**
 * The page's memory in IndexedDB (per origin): written with strict durability, so it is on disk
 * when the load goes on, whatever happens to the browser after.
 */
function indexedDbMemory(idb) {
  const STORE = 'versions';
  const KEY = 'newest-accepted';
  const opened = () =>
    new Promise((resolve, reject) => {
      const request = idb.open('tinyrustlm', 1);
      request.onupgradeneeded = () => request.result.createObjectStore(STORE);
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
  return {
    async read() {
      try {
        const db = await opened();
        const doc = await new Promise((resolve) => {
          const get = db.transaction(STORE, 'readonly').objectStore(STORE).get(KEY);
          get.onsuccess = () => resolve(get.result || {});
          get.onerror = () => resolve({});
        });
        db.close();
        return doc;
      } catch {
        return {}; // storage blocked: the floor stays minVersion
      }
    },
    async write(doc) {
      try {
        const db = await opened();
        await new Promise((resolve) => {
          const tx = db.transaction(STORE, 'readwrite', { durability: 'strict' });
          tx.objectStore(STORE).put(doc, KEY);
          tx.oncomplete = tx.onerror = tx.onabort = () => resolve(undefined);
        });
        db.close();
      } catch {
        // storage blocked or full: the floor stays minVersion
      }
    },
  };
}

/** The page's memory in localStorage (per origin), where there is no IndexedDB. */
function localStorageMemory(storage) {
  if (!storage) return null;
  const KEY = 'tinyrustlm.newest-accepted-version';
  return {
    async read() {
      try {
        return JSON.parse(storage.getItem(KEY) || '{}');
      } catch {
        return {};
      }
    },
    async write(doc) {
      try {
        storage.setItem(KEY, JSON.stringify(doc));
      } catch {
        // storage full or blocked: the floor stays minVersion
      }
    },
  };
}

/**
 * Refuses a release older than `o.minVersion` or than the newest this page (node: this
 * versionFile) accepted under the same trusted keys (`Rollback`), unless `o.allowDowngrade`;
 * then remembers the release's version if it is the newest. Returns { floor, remembered }.
 */
export async function checkVersionFloor(o, manifest) {
  const version = manifest.version;
  if (typeof version !== 'string' || !VERSION.test(version)) throw new LoaderError('BadManifest', `the manifest's version ${JSON.stringify(version)} is not major.minor.patch`);
  const memory = versionMemory(o);
  const root = await trustRootId(o.trustedKeys);
  const doc = memory ? await memory.read() : {};
  const remembered = typeof doc[root] === 'string' && VERSION.test(doc[root]) ? doc[root] : null;
  let floor = o.minVersion ?? null;
  if (remembered !== null && (floor === null || compareVersions(remembered, floor) > 0)) floor = remembered;
  if (floor !== null && compareVersions(version, floor) < 0 && !o.allowDowngrade) {
    const why = floor === remembered ? 'the newest release this page accepted before' : 'minVersion';
    throw new LoaderError('Rollback', `release ${version} is older than ${floor} (${why}); pass allowDowngrade: true to accept it`, { version, floor, remembered });
  }
  if (memory && (remembered === null || compareVersions(version, remembered) > 0)) {
    await memory.write({ ...doc, [root]: version });
  }
  return { floor, remembered };
}
