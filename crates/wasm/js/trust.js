// TinyRustLM loader, the trust room: the signed manifest (step 1) and the version floor.
import { isNode, sha256Hex } from './host.js';
import { LoaderError, messageOf } from './errors.js';
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
const TRUSTED_KEYS_V1 = 'tinyrustlm.trusted-keys.v1';
const TRUSTED_KEYS_V2 = 'tinyrustlm.trusted-keys.v2';
/** The documents a v2 policy must rule (the loader checks the manifest; both must be there). */
const SIGNED_DOCUMENTS = Object.freeze(['manifest', 'provenance']);
const SIGSTORE_MEDIA_TYPE = 'application/vnd.dev.sigstore.bundle.v0.3+json';
const SHA256_HEX = /^[0-9a-f]{64}$/;
// A date with a time zone, as the verifier's AwareDatetime reads one from text: T, t, space or _
// between date and time, seconds and their fraction optional, Z or an offset (+01:00, +0100)
const AWARE_DATETIME = /^(\d{4})-(\d{2})-(\d{2})[Tt _](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:([Zz])|([+-])(\d{2}):?(\d{2}))$/;
const utf8 = new TextEncoder();

/** @typedef {import('./loader.js').ResolvedOptions} ResolvedOptions */
/**
 * One wasm artifact of the manifest (manifests/schemas/tinyrustlm.module-manifest.v1.json
 * `WasmArtifact`).
 * @typedef {{ id: string, url: string, sha256: string, size: number, required_features: string[], forbidden_features: string[], requires_cross_origin_isolation?: boolean, memory?: { shared: boolean, growth: boolean } | null, js_glue?: string | null, relaxed_instructions?: Record<string, number> | null }} Artifact
 */
/**
 * The signed manifest, as far as the loader reads it (the schema above): what the signature
 * covers, parsed; the fields the loader relies on are checked by `checkManifest`.
 * @typedef {{ schema: string, version: string, runtime_semantics: number, abi_version: number, key_class: string, expires_epoch: number, artifacts: Artifact[], disabled_lanes?: string[], compiler?: { rustc?: string, llvm?: string } }} Manifest
 */
/** @typedef {{ seconds: number, micros: number }} Instant */
/** @typedef {'release' | 'development'} KeyRole */
/** One trusted key, checked: notBefore/notAfter in epoch seconds. */
/** @typedef {{ keyid: string, key: CryptoKey, role: KeyRole, notBefore: number | null, notAfter: number }} TrustedKey */
/** @typedef {{ keyids: Set<string>, threshold: number }} Rule */
/** The trust root: keyid -> key, the manifest's rule, revoked keyid -> reason. */
/** @typedef {{ keys: Map<string, TrustedKey>, rule: Rule, revoked: Map<string, string> }} TrustRoot */
/** manifest.sigstore.json, read (`parseSigstoreBundle`). */
/** @typedef {{ hint: string, payloadType: string, payload: Uint8Array, signatures: { keyid: string, sig: Uint8Array }[] }} SignedEnvelope */
/** A JSON object of unknown fields (what `fields` and `exactly` return, checked). */
/** @typedef {Record<string, unknown>} JsonObject */
/** The newest accepted version per trust root id, where it is remembered. */
/** @typedef {Record<string, unknown>} VersionDoc */
/** @typedef {{ read(): Promise<VersionDoc>, write(doc: VersionDoc): Promise<void> }} VersionMemory */

// base64 as the verifier decodes it (Python's b64decode(validate=True)): the alphabet, padded
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * @param {unknown} text
 * @param {string} where
 */
function base64Bytes(text, where) {
  if (typeof text !== 'string') throw new LoaderError('MalformedSignature', `${where} is not a base64 string`);
  if (!BASE64.test(text)) throw new LoaderError('MalformedSignature', `${where} is not valid base64`);
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

/**
 * @param {Uint8Array} a
 * @param {Uint8Array} b
 */
function sameBytes(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

// ---- 1. the signed manifest ---------------------------------------------------------------

/**
 * DSSE v1 pre-authentication encoding: the exact bytes that were signed.
 * @param {string} payloadType
 * @param {Uint8Array} payload
 */
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

/**
 * @param {unknown} pem
 * @param {string} where
 */
function pemToDer(pem, where) {
  const m = /-----BEGIN PUBLIC KEY-----([A-Za-z0-9+/=\s]+)-----END PUBLIC KEY-----/.exec(typeof pem === 'string' ? pem : '');
  if (!m) throw new LoaderError('TrustedKeysInvalid', `${where}: public_key_pem is not a PEM public key`);
  const body = m[1].replace(/\s+/g, '');
  // a trusted key that is not base64 is a bad trust root (as verify/ says), not a bad signature
  if (!BASE64.test(body)) throw invalid(`${where}.public_key_pem`, 'not valid base64');
  return base64Bytes(body, where);
}

/**
 * @param {string} where
 * @param {string} message
 */
function invalid(where, message) {
  return new LoaderError('TrustedKeysInvalid', `${where}: ${message}`, { where });
}

/**
 * `value` as an object with the `required` fields and no field outside `required` + `optional`.
 * @param {unknown} value
 * @param {readonly string[]} required
 * @param {readonly string[]} optional
 * @param {string} where
 * @returns {JsonObject}
 */
function fields(value, required, optional, where) {
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw invalid(where, 'expected an object');
  for (const name of required) if (!(name in value)) throw invalid(`${where}.${name}`, 'field required');
  for (const name of Object.keys(value)) {
    if (!required.includes(name) && !optional.includes(name)) throw invalid(`${where}.${name}`, 'unknown field');
  }
  return /** @type {JsonObject} */ (value);
}

/**
 * A date with a time zone -> { seconds, micros } since the epoch (micros: 0..999999, the
 * fraction to the microsecond like Python's datetime). A date without a zone, a date that does
 * not exist (02-30, 24:00), or anything but a string is refused.
 * @param {unknown} value
 * @param {string} where
 * @returns {Instant}
 */
function awareInstant(value, where) {
  const m = typeof value === 'string' ? AWARE_DATETIME.exec(value) : null;
  const refuse = () => invalid(where, 'not a date with a time zone (RFC 3339, e.g. 2031-01-01T00:00:00Z)');
  if (!m) throw refuse();
  const [y, mo, d, h, mi, s = 0] = m.slice(1, 7).map((x) => Number(x || 0));
  const day = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  const exists = day.getUTCFullYear() === y && day.getUTCMonth() === mo - 1 && day.getUTCDate() === d && day.getUTCHours() === h && day.getUTCMinutes() === mi && day.getUTCSeconds() === s;
  const [oh, om] = [Number(m[10] || 0), Number(m[11] || 0)];
  if (!exists || oh > 23 || om > 59) throw refuse();
  const offset = m[8] ? 0 : (m[9] === '-' ? -1 : 1) * (oh * 3600 + om * 60);
  return { seconds: Date.UTC(y, mo - 1, d, h, mi, s) / 1000 - offset, micros: Number((m[7] || '').padEnd(6, '0').slice(0, 6)) };
}

/** Whole epoch seconds as the verifier takes them: Python's int(datetime.timestamp()), toward zero. */
const epochSeconds = (/** @type {Instant} */ t) => (t.seconds < 0 && t.micros > 0 ? t.seconds + 1 : t.seconds);
const before = (/** @type {Instant} */ a, /** @type {Instant} */ b) => a.seconds < b.seconds || (a.seconds === b.seconds && a.micros < b.micros);

/**
 * One key entry -> { keyid, key (CryptoKey), role, notBefore (epoch s or null), notAfter }.
 * @param {unknown} value
 * @param {boolean} v2
 * @param {string} where
 * @returns {Promise<TrustedKey>}
 */
async function trustedKey(value, v2, where) {
  const entry = fields(value, ['keyid', 'public_key_pem', 'role', 'not_after'], v2 ? ['not_before'] : [], where);
  const keyid = entry.keyid;
  if (typeof keyid !== 'string' || !SHA256_HEX.test(keyid)) throw invalid(`${where}.keyid`, 'not a lowercase hex SHA-256');
  const role = entry.role;
  if (role !== 'release' && role !== 'development') throw invalid(`${where}.role`, 'must be release or development');
  const notAfter = awareInstant(entry.not_after, `${where}.not_after`);
  const notBefore = entry.not_before === undefined || entry.not_before === null ? null : awareInstant(entry.not_before, `${where}.not_before`);
  const der = pemToDer(entry.public_key_pem, where);
  if ((await sha256Hex(der)) !== keyid) throw invalid(`${where}.keyid`, "not the SHA-256 of the key's SPKI DER");
  const key = await ed25519Key(der, where);
  if (notBefore !== null && !before(notBefore, notAfter)) throw invalid(`${where}.not_before`, 'not_before is not before not_after');
  return {
    keyid,
    key,
    role,
    notBefore: notBefore === null ? null : epochSeconds(notBefore),
    notAfter: epochSeconds(notAfter),
  };
}

/**
 * The Ed25519 verification key of SPKI `der` (WebCrypto).
 * @param {Uint8Array} der
 * @param {string} where
 */
async function ed25519Key(der, where) {
  try {
    // BufferSource: `der` is a fresh copy (base64Bytes), never a view of shared memory
    return await globalThis.crypto.subtle.importKey('spki', /** @type {BufferSource} */ (der), { name: 'Ed25519' }, false, ['verify']);
  } catch (e) {
    // An engine without Ed25519 in WebCrypto cannot check a signature at all: say so.
    if (/** @type {{ name?: unknown }} */ (e)?.name === 'NotSupportedError') throw new LoaderError('CryptoUnsupported', `this engine's WebCrypto has no Ed25519 (${messageOf(e)})`);
    throw invalid(where, `not an Ed25519 public key (${messageOf(e)})`);
  }
}

/**
 * The keys of a v1 or v2 document, keyid -> key; none, or a keyid twice, is refused.
 * @param {JsonObject} doc
 * @param {boolean} v2
 */
async function trustedKeysOf(doc, v2) {
  if (!Array.isArray(doc.keys) || doc.keys.length === 0) throw invalid('trustedKeys.keys', 'no keys: an empty trust root trusts nothing');
  /** @type {Map<string, TrustedKey>} */
  const keys = new Map();
  for (const [i, entry] of doc.keys.entries()) {
    const key = await trustedKey(entry, v2, `trustedKeys.keys[${i}]`);
    if (keys.has(key.keyid)) throw invalid(`trustedKeys.keys[${i}].keyid`, 'duplicate keyid');
    keys.set(key.keyid, key);
  }
  return keys;
}

/**
 * A v2 signing rule -> { keyids (Set), threshold }, checked against the file's keys.
 * @param {unknown} rule
 * @param {Map<string, TrustedKey>} keys
 * @param {string} where
 * @returns {Rule}
 */
function signingRule(rule, keys, where) {
  const { keyids, threshold } = fields(rule, ['keyids', 'threshold'], [], where);
  if (!Array.isArray(keyids) || keyids.length === 0) throw invalid(`${where}.keyids`, 'at least one key');
  for (const keyid of keyids) {
    if (typeof keyid !== 'string' || !SHA256_HEX.test(keyid)) throw invalid(`${where}.keyids`, `${JSON.stringify(keyid)} is not a lowercase hex SHA-256`);
  }
  if (typeof threshold !== 'number' || !Number.isInteger(threshold) || threshold < 1) throw invalid(`${where}.threshold`, 'an integer >= 1');
  const unknown = keyids.filter((k) => !keys.has(k)).sort();
  if (unknown.length) throw invalid(`${where}.keyids`, `keyid ${unknown[0]} is not one of the file's keys`);
  if (new Set(keyids).size !== keyids.length) throw invalid(`${where}.keyids`, 'a keyid is listed twice');
  if (threshold > keyids.length) throw invalid(`${where}.threshold`, `threshold ${threshold} of ${keyids.length} key(s) can never be met`);
  return { keyids: new Set(keyids), threshold };
}

/**
 * The loader's trust root from a trusted-keys document (verify/bundle/trusted_keys.py
 * `trust_root_of`, the same rules): { keys, rule (the manifest's), revoked (keyid -> reason) }.
 * v1 (or no schema): threshold 1 of its keys. v2: the policy's manifest rule, revocations;
 * the provenance rule is checked too (the loader does not read the provenance). A v2 policy
 * asking for a keyless (Sigstore) identity is refused: the loader cannot verify one.
 * @param {unknown} doc
 * @returns {Promise<TrustRoot>}
 */
export async function trustRootOf(doc) {
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw invalid('trustedKeys', `expected a ${TRUSTED_KEYS_V1} or ${TRUSTED_KEYS_V2} object`);
  return 'schema' in doc && doc.schema === TRUSTED_KEYS_V2 ? v2TrustRoot(doc) : v1TrustRoot(doc);
}

/**
 * v1 (or no schema): threshold 1 of its keys, no revocations.
 * @param {object} value
 * @returns {Promise<TrustRoot>}
 */
async function v1TrustRoot(value) {
  const doc = fields(value, ['keys'], ['schema', 'signers'], 'trustedKeys');
  if ('schema' in doc && doc.schema !== TRUSTED_KEYS_V1) throw invalid('trustedKeys.schema', `neither ${TRUSTED_KEYS_V1} nor ${TRUSTED_KEYS_V2}`);
  if ('signers' in doc && doc.signers !== 'one-key' && doc.signers !== 'any-trusted-key') throw invalid('trustedKeys.signers', "must be 'one-key' or 'any-trusted-key'");
  const keys = await trustedKeysOf(doc, false);
  return { keys, rule: { keyids: new Set(keys.keys()), threshold: 1 }, revoked: new Map() };
}

/**
 * v2: the policy's manifest rule (every signed document's rule checked), its revocations; a
 * keyless policy is refused.
 * @param {object} value
 * @returns {Promise<TrustRoot>}
 */
async function v2TrustRoot(value) {
  const doc = fields(value, ['schema', 'keys', 'policy'], ['revoked', 'keyless'], 'trustedKeys');
  const keys = await trustedKeysOf(doc, true);
  const policy = fields(doc.policy, [], SIGNED_DOCUMENTS, 'trustedKeys.policy');
  /** @type {Record<string, Rule>} */
  const rules = {};
  for (const document of SIGNED_DOCUMENTS) {
    const where = `trustedKeys.policy.${document}`;
    if (!(document in policy)) throw invalid(where, `no signing rule for the ${document}`);
    rules[document] = signingRule(policy[document], keys, where);
  }
  const revoked = revokedKeys(doc.revoked === undefined ? [] : doc.revoked);
  if (doc.keyless !== undefined && doc.keyless !== null) {
    throw invalid('trustedKeys.keyless', 'the policy requires a keyless (Sigstore) signature, which this loader cannot verify; give the loader the same policy without `keyless`');
  }
  return { keys, rule: rules.manifest, revoked };
}

/**
 * A v2 policy's `revoked` list -> keyid -> reason; a key revoked twice is refused.
 * @param {unknown} list
 */
function revokedKeys(list) {
  if (!Array.isArray(list)) throw invalid('trustedKeys.revoked', 'expected a list');
  /** @type {Map<string, string>} */
  const revoked = new Map();
  for (const [i, value] of list.entries()) {
    const where = `trustedKeys.revoked[${i}]`;
    const { keyid, reason } = fields(value, ['keyid', 'reason'], [], where);
    if (typeof keyid !== 'string' || !SHA256_HEX.test(keyid)) throw invalid(`${where}.keyid`, 'not a lowercase hex SHA-256');
    if (typeof reason !== 'string' || reason.length === 0) throw invalid(`${where}.reason`, 'a reason is required');
    if (revoked.has(keyid)) throw invalid(`${where}.keyid`, 'revoked twice');
    revoked.set(keyid, reason);
  }
  return revoked;
}

/**
 * `value` as an object with exactly the fields `names` (dsse.py `_object`), else MalformedSignature.
 * @param {unknown} value
 * @param {readonly string[]} names
 * @param {string} where
 * @returns {JsonObject}
 */
function exactly(value, names, where) {
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new LoaderError('MalformedSignature', `${where} is not a JSON object`);
  const missing = names.filter((n) => !(n in value));
  const unknown = Object.keys(value).filter((n) => !names.includes(n));
  if (missing.length) throw new LoaderError('MalformedSignature', `${where}: missing field(s) ${missing.sort().join(', ')}`);
  if (unknown.length) throw new LoaderError('MalformedSignature', `${where}: unknown field(s) ${unknown.sort().join(', ')}`);
  return /** @type {JsonObject} */ (value);
}

/**
 * manifest.sigstore.json read as strictly as the verifier reads it (verify/bundle/dsse.py).
 * @param {Uint8Array} bytes
 * @returns {SignedEnvelope}
 */
function parseSigstoreBundle(bytes) {
  /** @type {unknown} */
  let doc;
  try {
    doc = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (e) {
    throw new LoaderError('MalformedSignature', `manifest.sigstore.json is not JSON (${errorMessage(e)})`);
  }
  const top = exactly(doc, ['mediaType', 'verificationMaterial', 'dsseEnvelope'], 'manifest.sigstore.json');
  if (top.mediaType !== SIGSTORE_MEDIA_TYPE) throw new LoaderError('MalformedSignature', `mediaType ${JSON.stringify(top.mediaType)} is not ${SIGSTORE_MEDIA_TYPE}`);
  const material = exactly(top.verificationMaterial, ['publicKey', 'tlogEntries'], 'verificationMaterial');
  if (!Array.isArray(material.tlogEntries) || material.tlogEntries.length !== 0) {
    throw new LoaderError('MalformedSignature', 'verificationMaterial.tlogEntries must be empty (releases are signed with a local key, no log)');
  }
  const { hint } = exactly(material.publicKey, ['hint'], 'verificationMaterial.publicKey');
  if (typeof hint !== 'string') throw new LoaderError('MalformedSignature', 'verificationMaterial.publicKey.hint must be a string');
  const env = exactly(top.dsseEnvelope, ['payload', 'payloadType', 'signatures'], 'dsseEnvelope');
  if (typeof env.payloadType !== 'string') throw new LoaderError('MalformedSignature', 'dsseEnvelope.payloadType must be a string');
  const signatures = envelopeSignatures(env.signatures);
  return { hint, payloadType: env.payloadType, payload: base64Bytes(env.payload, 'dsseEnvelope.payload'), signatures };
}

/**
 * The envelope's signatures: a non-empty list of { keyid (a string), sig (base64) }.
 * @param {unknown} list
 */
function envelopeSignatures(list) {
  if (!Array.isArray(list) || list.length === 0) {
    throw new LoaderError('MalformedSignature', 'dsseEnvelope.signatures must be a non-empty list');
  }
  return list.map((raw, i) => {
    const where = `dsseEnvelope.signatures[${i}]`;
    const sig = exactly(raw, ['sig', 'keyid'], where);
    if (typeof sig.keyid !== 'string') throw new LoaderError('MalformedSignature', `${where}.keyid must be a string`);
    return { keyid: sig.keyid, sig: base64Bytes(sig.sig, `${where}.sig`) };
  });
}

/**
 * `${e.message}` of what JSON.parse or TextDecoder threw (a SyntaxError or a TypeError).
 * @param {unknown} e
 */
function errorMessage(e) {
  return e instanceof Error ? e.message : /** @type {{ message?: unknown }} */ (e)?.message;
}

/**
 * Why a signature (already verified when its key is listed) does not count, or null.
 * @param {string} keyid
 * @param {TrustRoot} root
 * @param {Pick<ResolvedOptions, 'now' | 'allowDevKey'>} o
 * @param {string} where
 */
function refusalOf(keyid, root, o, where) {
  const key = root.keys.get(keyid);
  const short = `${keyid.slice(0, 16)}…`;
  if (key === undefined) return new LoaderError('UntrustedKey', `signed by key ${keyid} which is not in the trusted keys`, { keyid, where });
  if (root.revoked.has(keyid)) return new LoaderError('KeyRevoked', `key ${short} is revoked (${root.revoked.get(keyid)})`, { keyid, where });
  if (key.notBefore !== null && o.now < key.notBefore) {
    return new LoaderError('KeyNotYetValid', `key ${short} is trusted only from epoch ${key.notBefore} (now ${o.now})`, { keyid, where, not_before: key.notBefore });
  }
  if (o.now >= key.notAfter) return new LoaderError('KeyExpired', `key ${short} is trusted only until epoch ${key.notAfter}`, { keyid, where, not_after: key.notAfter });
  if (!root.rule.keyids.has(keyid)) return new LoaderError('KeyNotAllowed', `key ${short} is trusted but the policy does not let it sign the manifest`, { keyid, where });
  if (key.role === 'development' && !o.allowDevKey) {
    return new LoaderError('DevelopmentKey', `signed by development key ${short}; pass allowDevKey: true to accept a local trial build`, { keyid, where });
  }
  return null;
}

/**
 * The signatures of the manifest's envelope judged against the manifest's rule, in envelope
 * order (verify/bundle/trusted_keys.py `check_envelope`): a key signing twice is refused
 * (`DuplicateSignature`); every signature by a listed key must verify (`SignatureInvalid`);
 * a signature counts when its key is listed, not revoked, inside [not_before, not_after),
 * allowed to sign the manifest and not a development key unless `allowDevKey`. Returns the
 * counted keys; below the threshold `SignatureThreshold` names how many of how many (with
 * threshold 1 and one signature, that signature's own refusal).
 * @param {SignedEnvelope} signed
 * @param {TrustRoot} root
 * @param {Pick<ResolvedOptions, 'now' | 'allowDevKey'>} o
 * @returns {Promise<TrustedKey[]>}
 */
export async function countSignatures(signed, root, o) {
  const message = pae(signed.payloadType, signed.payload);
  /** @type {Set<string>} */
  const seen = new Set();
  /** @type {TrustedKey[]} */
  const counted = [];
  /** @type {LoaderError[]} */
  const refused = [];
  for (const [i, signature] of signed.signatures.entries()) {
    const where = `dsseEnvelope.signatures[${i}]`;
    const short = `${signature.keyid.slice(0, 16)}…`;
    if (seen.has(signature.keyid)) {
      throw new LoaderError('DuplicateSignature', `key ${short} signed this envelope twice; a threshold counts distinct keys`, { keyid: signature.keyid, where });
    }
    seen.add(signature.keyid);
    const key = root.keys.get(signature.keyid);
    if (key !== undefined && !(await verifies(key, signature.sig, message))) {
      throw new LoaderError('SignatureInvalid', `the signature by key ${short} does not verify over PAE(payloadType, payload)`, { keyid: signature.keyid, where });
    }
    const refusal = refusalOf(signature.keyid, root, o, where);
    if (refusal === null) counted.push(/** @type {TrustedKey} */ (key)); // no refusal: the key is listed
    else refused.push(refusal);
  }
  if (counted.length >= root.rule.threshold) return counted;
  throw belowThreshold(counted, refused, root.rule);
}

/**
 * Ed25519 over `message` with `key` (WebCrypto).
 * @param {TrustedKey} key
 * @param {Uint8Array} sig
 * @param {Uint8Array} message
 */
function verifies(key, sig, message) {
  // BufferSource: both are fresh copies (base64Bytes, pae), never views of shared memory
  return globalThis.crypto.subtle.verify({ name: 'Ed25519' }, key.key, /** @type {BufferSource} */ (sig), /** @type {BufferSource} */ (message));
}

/**
 * The refusal of too few counted signatures: with threshold 1 and one signature, that
 * signature's own refusal; else `SignatureThreshold`, how many of how many and why not.
 * @param {TrustedKey[]} counted
 * @param {LoaderError[]} refused
 * @param {Rule} rule
 */
function belowThreshold(counted, refused, { threshold, keyids }) {
  if (threshold === 1 && refused.length === 1) return refused[0];
  const reasons = refused.map((r) => r.message.slice(r.code.length + 2)).join('; ') || 'no other signatures';
  return new LoaderError(
    'SignatureThreshold',
    `${counted.length} of ${threshold} required signatures on the manifest (distinct trusted keys out of ${keyids.size} allowed); not counted: ${reasons}`,
    { counted: counted.map((k) => k.keyid), threshold, allowed: keyids.size, refused: refused.map((r) => ({ code: r.code, keyid: r.detail.keyid })) },
  );
}

/**
 * Step 1. Returns { manifest, bytes, sha256, keyid, keyids, keyClass }. Order of refusals: the
 * trusted keys, the bundle's shape, payload type, the signatures against the manifest's rule
 * (`countSignatures`), the key hint, payload equals manifest.json, schema/semantics/ABI, key
 * class of every counted signer, expiry.
 * @param {Pick<ResolvedOptions, 'baseUrl' | 'trustedKeys' | 'allowDevKey' | 'now' | 'fetch' | 'onProgress'>} o
 */
export async function verifySignedManifest(o) {
  // the time every window and expiry is judged at: a missing or non-number `now` would make
  // every `now >= limit` false, i.e. switch the expiry and key-validity checks off
  if (typeof o.now !== 'number' || !Number.isFinite(o.now)) {
    throw new LoaderError('BadOptions', `now must be a finite number of seconds since the epoch (got ${String(o.now)})`);
  }
  const [manifestBytes, signatureBytes] = await Promise.all([
    fetchCapped(o, new URL('manifest.json', o.baseUrl), 'manifest', MANIFEST_CAP, 'manifest'),
    fetchCapped(o, new URL('manifest.sigstore.json', o.baseUrl), 'manifest signature', SIGNATURE_CAP, 'signature'),
  ]);
  const root = await trustRootOf(o.trustedKeys);
  const signed = parseSigstoreBundle(signatureBytes);
  if (signed.payloadType !== MANIFEST_PAYLOAD_TYPE) {
    throw new LoaderError('WrongPayloadType', `the signed payload is ${JSON.stringify(signed.payloadType)}, not ${MANIFEST_PAYLOAD_TYPE} (swapped signature files?)`);
  }
  const counted = await countSignatures(signed, root, o);
  if (!signed.signatures.some((s) => s.keyid === signed.hint)) {
    throw new LoaderError('KeyHintMismatch', `publicKey.hint ${signed.hint.slice(0, 16)}… is not the keyid of any signature`);
  }
  if (!sameBytes(signed.payload, manifestBytes)) {
    throw new LoaderError('PayloadMismatch', 'manifest.json is not byte-identical to the signed payload');
  }
  const manifest = checkManifest(signed.payload, counted, o);
  const keyids = counted.map((k) => k.keyid);
  return { manifest, bytes: manifestBytes, sha256: await sha256Hex(manifestBytes), keyid: keyids[0], keyids, keyClass: counted[0].role };
}

/**
 * The signed payload as the manifest this loader understands: JSON, its schema, runtime
 * semantics and ABI, the key class of every counted signer, not expired, with artifacts.
 * @param {Uint8Array} payload
 * @param {TrustedKey[]} counted
 * @param {Pick<ResolvedOptions, 'now'>} o
 * @returns {Manifest}
 */
function checkManifest(payload, counted, o) {
  /** @type {Manifest} the signed JSON; each field the loader relies on is checked below */
  let manifest;
  try {
    manifest = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(payload));
  } catch (e) {
    throw new LoaderError('BadManifest', `the signed manifest is not JSON (${errorMessage(e)})`);
  }
  if (manifest.schema !== SUPPORTED.schema) throw new LoaderError('UnsupportedAbi', `manifest schema ${JSON.stringify(manifest.schema)} is not ${SUPPORTED.schema}`);
  if (!SUPPORTED.runtimeSemantics.includes(manifest.runtime_semantics) || !SUPPORTED.abiVersions.includes(manifest.abi_version)) {
    throw new LoaderError('UnsupportedAbi', `runtime_semantics ${manifest.runtime_semantics} / abi_version ${manifest.abi_version} are not supported by this loader (${SUPPORTED.runtimeSemantics} / ${SUPPORTED.abiVersions})`);
  }
  for (const key of counted) {
    if (manifest.key_class !== key.role) throw new LoaderError('KeyClassMismatch', `manifest key_class ${manifest.key_class} but the role of signing key ${key.keyid.slice(0, 16)}… is ${key.role}`);
  }
  if (!(typeof manifest.expires_epoch === 'number') || o.now >= manifest.expires_epoch) {
    throw new LoaderError('ManifestExpired', `the manifest expired at ${new Date(manifest.expires_epoch * 1000).toISOString()}`, { expires_epoch: manifest.expires_epoch });
  }
  if (!Array.isArray(manifest.artifacts)) throw new LoaderError('BadManifest', 'the manifest lists no wasm artifacts');
  return manifest;
}

// ---- the version floor --------------------------------------------------------------------------

// The project's one release-version grammar and order (verify/formats/release_version.py keeps
// the same pattern; tests/release_versions.json is the table both are tested on):
// MAJOR.MINOR.PATCH, optionally aN, bN or rcN; numbers without leading zeros, at most 9 digits.
const VERSION = /^(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})(?:(a|b|rc)(0|[1-9][0-9]{0,8}))?$/;
const PRE_RELEASES = ['a', 'b', 'rc']; // in order; a final release sorts after all of them
const VERSION_WORDS = 'MAJOR.MINOR.PATCH, optionally followed by aN, bN or rcN';

/** What the version floor reads of the options (loader.d.ts `checkVersionFloor`). */
/** @typedef {{ trustedKeys: import('./loader.js').TrustedKeys, minVersion?: string | null, allowDowngrade?: boolean, versionFile?: string | null, rememberVersion?: boolean }} VersionOptions */

/**
 * The comparable key of a release version, or null when `text` is not one.
 * @param {unknown} text
 * @returns {number[] | null}
 */
function versionKey(text) {
  const m = typeof text === 'string' ? VERSION.exec(text) : null;
  if (!m) return null;
  const stage = m[4] === undefined ? PRE_RELEASES.length : PRE_RELEASES.indexOf(m[4]);
  return [Number(m[1]), Number(m[2]), Number(m[3]), stage, m[5] === undefined ? 0 : Number(m[5])];
}

/**
 * Orders release versions (numbers, then a < b < rc < final): -1, 0 or 1.
 * @param {string} a
 * @param {string} b
 * @returns {-1 | 0 | 1}
 */
export function compareVersions(a, b) {
  const ka = versionKey(a);
  const kb = versionKey(b);
  if (!ka || !kb) throw new LoaderError('BadOptions', `${JSON.stringify(ka ? b : a)} is not a release version (${VERSION_WORDS})`);
  for (let i = 0; i < ka.length; i++) {
    if (ka[i] !== kb[i]) return ka[i] < kb[i] ? -1 : 1;
  }
  return 0;
}

/**
 * Which trusted keys these are: SHA-256 of their sorted key ids (one memory per trust root).
 * @param {{ keys?: { keyid: unknown }[] }} trustedKeys
 */
export async function trustRootId(trustedKeys) {
  const ids = (trustedKeys.keys || []).map((k) => String(k.keyid)).sort();
  return sha256Hex(utf8.encode(ids.join('\n')));
}

/**
 * Where the newest accepted version is remembered: `o.versionFile` (node: a JSON file the caller
 * names, { trustRootId: version }), else the page's IndexedDB (localStorage where there is
 * none; both per origin), else nowhere.
 * @param {VersionOptions} o
 * @returns {VersionMemory | null}
 */
function versionMemory(o) {
  if (o.versionFile) return fileMemory(o.versionFile);
  if (o.rememberVersion === false || isNode) return null; // node: only a versionFile
  if (globalThis.indexedDB) return indexedDbMemory(globalThis.indexedDB);
  return localStorageMemory(globalThis.localStorage);
}

/**
 * Node: the JSON file `path` (absent: nothing remembered yet), replaced whole on write.
 * @param {string} path
 * @returns {VersionMemory}
 */
function fileMemory(path) {
  return {
    async read() {
      const fs = await import('node:fs');
      try {
        return JSON.parse(await fs.promises.readFile(path, 'utf-8'));
      } catch (e) {
        if (e && /** @type {{ code?: unknown }} */ (e).code === 'ENOENT') return {};
        throw new LoaderError('BadOptions', `versionFile ${path} is not readable JSON (${messageOf(e)})`);
      }
    },
    async write(doc) {
      const fs = await import('node:fs');
      const tmp = `${path}.${process.pid}.tmp`;
      await fs.promises.writeFile(tmp, `${JSON.stringify(doc, null, 1)}\n`);
      await fs.promises.rename(tmp, path);
    },
  };
}

/**
 * The page's memory in IndexedDB (per origin): written with strict durability, so it is on disk
 * when the load goes on, whatever happens to the browser after.
 * @param {IDBFactory} idb
 * @returns {VersionMemory}
 */
function indexedDbMemory(idb) {
  return {
    async read() {
      try {
        const db = await openVersionsDb(idb);
        const doc = await readNewest(db);
        db.close();
        return doc;
      } catch {
        return {}; // storage blocked: the floor stays minVersion
      }
    },
    async write(doc) {
      try {
        const db = await openVersionsDb(idb);
        await writeNewest(db, doc);
        db.close();
      } catch {
        // storage blocked or full: the floor stays minVersion
      }
    },
  };
}

const VERSIONS_STORE = 'versions';
const NEWEST_KEY = 'newest-accepted';

/**
 * The loader's database (created on first use, one object store of versions).
 * @param {IDBFactory} idb
 * @returns {Promise<IDBDatabase>}
 */
function openVersionsDb(idb) {
  return new Promise((resolve, reject) => {
    const request = idb.open('tinyrustlm', 1);
    request.onupgradeneeded = () => request.result.createObjectStore(VERSIONS_STORE);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

/**
 * The remembered document ({} when there is none or it cannot be read).
 * @param {IDBDatabase} db
 * @returns {Promise<VersionDoc>}
 */
function readNewest(db) {
  return new Promise((resolve) => {
    const get = db.transaction(VERSIONS_STORE, 'readonly').objectStore(VERSIONS_STORE).get(NEWEST_KEY);
    get.onsuccess = () => resolve(get.result || {});
    get.onerror = () => resolve({});
  });
}

/**
 * Writes `doc` with strict durability; settles when the transaction ends, however it ends.
 * @param {IDBDatabase} db
 * @param {VersionDoc} doc
 * @returns {Promise<void>}
 */
function writeNewest(db, doc) {
  return new Promise((resolve) => {
    const tx = db.transaction(VERSIONS_STORE, 'readwrite', { durability: 'strict' });
    tx.objectStore(VERSIONS_STORE).put(doc, NEWEST_KEY);
    tx.oncomplete = tx.onerror = tx.onabort = () => resolve(undefined);
  });
}

/**
 * The page's memory in localStorage (per origin), where there is no IndexedDB.
 * @param {Storage | undefined} storage
 * @returns {VersionMemory | null}
 */
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
 * @param {VersionOptions} o
 * @param {{ version: unknown }} manifest
 */
export async function checkVersionFloor(o, manifest) {
  const version = manifest.version;
  if (typeof version !== 'string' || versionKey(version) === null) throw new LoaderError('BadManifest', `the manifest's version ${JSON.stringify(version)} is not a release version (${VERSION_WORDS})`);
  if (o.minVersion != null && versionKey(o.minVersion) === null) throw new LoaderError('BadOptions', `minVersion ${JSON.stringify(o.minVersion)} is not a release version (${VERSION_WORDS})`);
  const memory = versionMemory(o);
  const root = await trustRootId(o.trustedKeys);
  const doc = memory ? await memory.read() : {};
  const stored = doc[root];
  const remembered = typeof stored === 'string' && versionKey(stored) !== null ? stored : null;
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
