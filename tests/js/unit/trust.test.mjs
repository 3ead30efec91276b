// Unit tests of the loader's trust room (crates/wasm/js/trust.js) in node, fast enough for
// Stryker to run per mutant (tests/mutants/js). The expected verdicts of the trust table, the
// trust roots and the dates are the Python verifier's (fixtures/trust.json, written by
// `python -m tests.js.unit.fixtures`); the rest are written out here from the spec (DSSE's
// PAE, the version floor as README "The loader" states it). Nothing expected is computed by
// the code under test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync, existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as trustJs from '../../../crates/wasm/js/trust.js';

// The loader's functions typed loosely (any): these tests hand them fakes (a Source, a Response,
// options holding only the fields a function reads) and hostile values, on purpose.
const { compareVersions, checkVersionFloor, countSignatures, pae, SUPPORTED, MANIFEST_PAYLOAD_TYPE, trustRootId, trustRootOf, verifySignedManifest } = /** @type {any} */ (trustJs);

/** @type {{ keys: Record<string, string>, envelopes: any[], roots: any[], dates: { stamp: string, epoch: number | null }[], manifests: any[], versions: { version: string, key: number[] | null }[] }} */
const FIXTURES = JSON.parse(readFileSync(new URL('./fixtures/trust.json', import.meta.url), 'utf-8'));
const BASE = new URL('https://bundle.invalid/release/');
const sha256 = (/** @type {string | Uint8Array} */ data) => createHash('sha256').update(data).digest('hex');
const bytes = (/** @type {string} */ b64) => Uint8Array.from(Buffer.from(b64, 'base64'));

/** The bundle's two files served by the loader's `fetch` option; anything else is a 404. */
function serving(/** @type {Record<string, any>} */ files) {
  return async (/** @type {URL} */ url) => {
    assert.equal(url.href.startsWith(BASE.href), true, `fetched outside the bundle: ${url}`);
    const name = url.href.slice(BASE.href.length);
    return name in files ? new Response(files[name]) : new Response('', { status: 404 });
  };
}

async function verdict(/** @type {any} */ o) {
  try {
    return { ok: await verifySignedManifest(o), error: null };
  } catch (e) {
    return { ok: null, error: e };
  }
}

// ---- the trust table (issue 23): who may sign the manifest ---------------------------------

for (const row of FIXTURES.envelopes) {
  test(`envelope: ${row.name}`, async () => {
    const manifest = bytes(row.manifest);
    const got = await verdict({
      baseUrl: BASE,
      trustedKeys: row.trustedKeys,
      now: row.now,
      allowDevKey: row.allowDevKey,
      fetch: serving({ 'manifest.json': manifest, 'manifest.sigstore.json': bytes(row.signature) }),
    });
    if (row.code === null) {
      assert.equal(got.error, null, got.error && got.error.message);
      assert.deepEqual(got.ok.keyids, row.keyids); // the counted keys, in envelope order
      assert.equal(got.ok.keyid, row.keyids[0]);
      assert.deepEqual(got.ok.bytes, manifest);
      assert.equal(got.ok.sha256, sha256(manifest));
      assert.deepEqual(got.ok.manifest, JSON.parse(Buffer.from(manifest).toString()));
      assert.equal(got.ok.keyClass, got.ok.manifest.key_class);
    } else {
      assert.ok(got.error, 'accepted');
      assert.equal(got.error.name, 'LoaderError');
      assert.equal(got.error.code, row.code, got.error.message);
      assert.ok(got.error.message.startsWith(`${row.code}: `), got.error.message);
      assert.ok(got.error.message.includes(row.message), `${got.error.message} lacks ${row.message}`);
    }
  });
}

const ALICE = FIXTURES.keys.alice;
const BOB = FIXTURES.keys.bob;
const row = (/** @type {string} */ name) => {
  const found = FIXTURES.envelopes.find((r) => r.name === name);
  assert.ok(found, name);
  return found;
};

/** The row's inputs as `verifySignedManifest` options, with `edit` applied to the manifest and signature files. */
function optionsOf(/** @type {any} */ r, /** @type {{ manifest?: Uint8Array, signature?: any, now?: number, trustedKeys?: any }} */ edit = {}) {
  const signature = edit.signature === undefined ? bytes(r.signature) : new TextEncoder().encode(JSON.stringify(edit.signature));
  return {
    baseUrl: BASE,
    trustedKeys: edit.trustedKeys ?? r.trustedKeys,
    now: edit.now ?? r.now,
    allowDevKey: r.allowDevKey,
    fetch: serving({ 'manifest.json': edit.manifest ?? bytes(r.manifest), 'manifest.sigstore.json': signature }),
  };
}

const signatureDoc = (/** @type {any} */ r) => JSON.parse(Buffer.from(bytes(r.signature)).toString());

// Manifests past their signatures: the loader's own checks of step 1 (fixtures: `manifests`).
for (const row of FIXTURES.manifests) {
  test(`manifest: ${row.name}`, async () => {
    const got = await verdict({
      baseUrl: BASE,
      trustedKeys: row.trustedKeys,
      now: row.now,
      fetch: serving({ 'manifest.json': bytes(row.manifest), 'manifest.sigstore.json': bytes(row.signature) }),
    });
    assert.equal(got.error && got.error.code, row.code, got.error ? got.error.message : 'accepted');
    assert.ok(got.error.message.startsWith(`${row.code}: ${row.message}`), got.error.message);
  });
}

// The refusals' exact words and evidence, for one row each (what a caller reads from them).
test('the refusals name the key, the rule and the count', async () => {
  const short = (/** @type {string} */ k) => `${k.slice(0, 16)}…`;
  const cases = [
    ['short by one: alone, 2 required', `SignatureThreshold: 1 of 2 required signatures on the manifest (distinct trusted keys out of 3 allowed); not counted: no other signatures`],
    ['only unlisted signatures', `UntrustedKey: signed by key ${FIXTURES.keys.eve} which is not in the trusted keys`],
    ['the only signer revoked', `KeyRevoked: key ${short(ALICE)} is revoked (lost)`],
    ['trusted, not allowed to sign the manifest', `KeyNotAllowed: key ${short(BOB)} is trusted but the policy does not let it sign the manifest`],
    ['development key, not allowed', `DevelopmentKey: signed by development key ${short(FIXTURES.keys.dora)}; pass allowDevKey: true to accept a local trial build`],
    ['the same key twice, threshold 1', `DuplicateSignature: key ${short(ALICE)} signed this envelope twice; a threshold counts distinct keys`],
    ['a bad co-signature', `SignatureInvalid: the signature by key ${short(BOB)} does not verify over PAE(payloadType, payload)`],
    ['alone, at not_after', `KeyExpired: key ${short(ALICE)} is trusted only until epoch ${row('alone, at not_after').now}`],
    ['alone, before not_before', `KeyNotYetValid: key ${short(ALICE)} is trusted only from epoch ${row('alone, before not_before').now + 1} (now ${row('alone, before not_before').now})`],
    ['a revoked co-signer does not count', `SignatureThreshold: 1 of 2 required signatures on the manifest (distinct trusted keys out of 2 allowed); not counted: key ${short(BOB)} is revoked (lost)`],
  ];
  for (const [name, message] of cases) {
    const got = await verdict(optionsOf(row(name)));
    assert.equal(got.error && got.error.message, message, name);
  }
});

test('a refusal carries its evidence in detail', async () => {
  const where0 = 'dsseEnvelope.signatures[0]';
  const where1 = 'dsseEnvelope.signatures[1]';
  const cases = [
    ['only unlisted signatures', { keyid: FIXTURES.keys.eve, where: where0 }],
    ['the only signer revoked', { keyid: ALICE, where: where0 }],
    ['trusted, not allowed to sign the manifest', { keyid: BOB, where: where0 }],
    ['development key, not allowed', { keyid: FIXTURES.keys.dora, where: where0 }],
    ['the same key twice, threshold 1', { keyid: ALICE, where: where1 }],
    ['a bad co-signature', { keyid: BOB, where: where1 }],
    ['alone, at not_after', { keyid: ALICE, where: where0, not_after: row('alone, at not_after').now }],
    ['alone, before not_before', { keyid: ALICE, where: where0, not_before: row('alone, before not_before').now + 1 }],
    ['short by one: 2 of 3 signed, 3 required', { counted: [ALICE, BOB], threshold: 3, allowed: 3, refused: [] }],
    ['a revoked co-signer does not count', { counted: [ALICE], threshold: 2, allowed: 2, refused: [{ code: 'KeyRevoked', keyid: BOB }] }],
  ];
  for (const [name, detail] of cases) {
    const got = await verdict(optionsOf(row(/** @type {string} */ (name))));
    assert.deepEqual(got.error && got.error.detail, detail, /** @type {string} */ (name));
  }
});

test('countSignatures returns the counted keys with their roles and windows', async () => {
  const r = row('at not_before');
  const root = await trustRootOf(r.trustedKeys);
  const doc = signatureDoc(r);
  const signed = {
    payloadType: MANIFEST_PAYLOAD_TYPE,
    payload: bytes(doc.dsseEnvelope.payload),
    signatures: doc.dsseEnvelope.signatures.map((/** @type {any} */ s) => ({ keyid: s.keyid, sig: bytes(s.sig) })),
  };
  const counted = await countSignatures(signed, root, { now: r.now, allowDevKey: false });
  assert.deepEqual(counted.map((k) => [k.keyid, k.role, k.notBefore]), [[ALICE, 'release', null], [BOB, 'release', r.now]]);
  // the same signatures over another payload type: PAE differs, so neither verifies
  await assert.rejects(countSignatures({ ...signed, payloadType: 'application/json' }, root, { now: r.now }), { code: 'SignatureInvalid' });
});

// ---- step 1 past the signatures: the files, the manifest's own fields ----------------------

test('the signed payload must be manifest.json, byte for byte', async () => {
  const r = row('v1, the release key');
  const manifest = bytes(r.manifest);
  const longer = new Uint8Array([...manifest, 0x0a]);
  const changed = manifest.slice();
  changed[changed.length - 2] ^= 1;
  for (const other of [longer, changed, manifest.slice(0, -1)]) {
    const got = await verdict(optionsOf(r, { manifest: other }));
    assert.equal(got.error && got.error.message, 'PayloadMismatch: manifest.json is not byte-identical to the signed payload');
  }
});

/** A manifest signed by alice alone (a v1 trusted-keys file), changed by `edit`: its verdict. */
async function withManifest(/** @type {(m: any) => any} */ edit, /** @type {number} */ now = row('v1, the release key').now) {
  const r = row('v1, the release key');
  const doc = signatureDoc(r);
  const manifest = edit(JSON.parse(Buffer.from(bytes(r.manifest)).toString()));
  const payload = new TextEncoder().encode(typeof manifest === 'string' ? manifest : JSON.stringify(manifest));
  doc.dsseEnvelope.payload = Buffer.from(payload).toString('base64');
  // re-signing needs alice's private key, which only the fixtures' writer holds: a changed
  // payload must fail on its signature first
  const got = await verdict(optionsOf(r, { manifest: payload, signature: doc, now }));
  return got;
}

test('a changed payload no longer verifies (the signature covers it)', async () => {
  const got = await withManifest((m) => ({ ...m, version: '9.9.9' }));
  assert.equal(got.error && got.error.code, 'SignatureInvalid');
});

test('the manifest must not have expired', async () => {
  const r = row('v1, the release key');
  const expires = JSON.parse(Buffer.from(bytes(r.manifest)).toString()).expires_epoch;
  const before = await verdict(optionsOf(r, { now: expires - 1 }));
  assert.equal(before.error, null);
  for (const now of [expires, expires + 0.5, expires + 1000]) {
    const got = await verdict(optionsOf(r, { now }));
    assert.equal(got.error && got.error.code, 'ManifestExpired', String(now));
    assert.equal(got.error.message, `ManifestExpired: the manifest expired at ${new Date(expires * 1000).toISOString()}`);
    assert.deepEqual(got.error.detail, { expires_epoch: expires });
  }
});

test('a now that is not a finite number is BadOptions, before anything is fetched', async () => {
  // an undefined or NaN now would make every `now >= limit` false: expiry and key windows off
  const r = row('v1, the release key');
  const expires = JSON.parse(Buffer.from(bytes(r.manifest)).toString()).expires_epoch;
  for (const now of [undefined, null, Number.NaN, Number.POSITIVE_INFINITY, String(expires + 1000)]) {
    let fetched = 0;
    const o = { ...optionsOf(r), now, fetch: async () => (fetched++, new Response('', { status: 404 })) };
    const got = await verdict(o);
    assert.equal(got.error && got.error.code, 'BadOptions', String(now));
    assert.equal(got.error.message, `BadOptions: now must be a finite number of seconds since the epoch (got ${String(now)})`);
    assert.equal(fetched, 0);
  }
});

test('load() takes an option given as undefined as its default (now: the real time)', async () => {
  const { load } = /** @type {any} */ (await import('../../../crates/wasm/js/loader.js'));
  const r = row('v1, the release key');
  const expires = JSON.parse(Buffer.from(bytes(r.manifest)).toString()).expires_epoch;
  const model = { url: new URL('model.trlm', BASE).href, sha256: 'a'.repeat(64), size: 64 };
  const o = { ...optionsOf(r), model, now: undefined };
  const got = await load(o).then(() => null, (/** @type {any} */ e) => e);
  // judged at Date.now(): expired or not, never BadOptions and never judged at no time at all
  assert.notEqual(got && got.code, 'BadOptions', got && got.message);
  if (Date.now() / 1000 >= expires) assert.equal(got && got.code, 'ManifestExpired');
});

test('the payload type, the key hint and the bundle shape', async () => {
  const r = row('v1, the release key');
  const type = signatureDoc(r);
  type.dsseEnvelope.payloadType = 'application/vnd.in-toto+json';
  let got = await verdict(optionsOf(r, { signature: type }));
  assert.equal(got.error && got.error.message, `WrongPayloadType: the signed payload is "application/vnd.in-toto+json", not ${MANIFEST_PAYLOAD_TYPE} (swapped signature files?)`);
  const hint = signatureDoc(r);
  hint.verificationMaterial.publicKey.hint = BOB;
  got = await verdict(optionsOf(r, { signature: hint }));
  assert.equal(got.error && got.error.message, `KeyHintMismatch: publicKey.hint ${BOB.slice(0, 16)}… is not the keyid of any signature`);
  /** @type {[string, (d: any) => void, string][]} */
  const shapes = [
    ['not JSON', (d) => d, 'manifest.sigstore.json is not JSON ('],
    ['a list', (d) => [d], 'manifest.sigstore.json is not a JSON object'],
    ['another media type', (d) => { d.mediaType = 'application/json'; }, 'mediaType "application/json" is not application/vnd.dev.sigstore.bundle.v0.3+json'],
    ['a missing field', (d) => { delete d.dsseEnvelope; }, 'manifest.sigstore.json: missing field(s) dsseEnvelope'],
    ['two missing fields', (d) => { delete d.dsseEnvelope; delete d.mediaType; }, 'manifest.sigstore.json: missing field(s) dsseEnvelope, mediaType'],
    ['two unknown fields', (d) => { d.z = 1; d.a = 1; }, 'manifest.sigstore.json: unknown field(s) a, z'],
    ['verificationMaterial null', (d) => { d.verificationMaterial = null; }, 'verificationMaterial is not a JSON object'],
    ['tlogEntries not a list', (d) => { d.verificationMaterial.tlogEntries = {}; }, 'verificationMaterial.tlogEntries must be empty'],
    ['publicKey with a field more', (d) => { d.verificationMaterial.publicKey.rawBytes = ''; }, 'verificationMaterial.publicKey: unknown field(s) rawBytes'],
    ['a hint that is a number', (d) => { d.verificationMaterial.publicKey.hint = 1; }, 'verificationMaterial.publicKey.hint must be a string'],
    ['a payload type that is a number', (d) => { d.dsseEnvelope.payloadType = 1; }, 'dsseEnvelope.payloadType must be a string'],
    ['signatures not a list', (d) => { d.dsseEnvelope.signatures = {}; }, 'dsseEnvelope.signatures must be a non-empty list'],
    ['a signature without its keyid', (d) => { delete d.dsseEnvelope.signatures[0].keyid; }, 'dsseEnvelope.signatures[0]: missing field(s) keyid'],
    ['a keyid that is a number', (d) => { d.dsseEnvelope.signatures[0].keyid = 1; }, 'dsseEnvelope.signatures[0].keyid must be a string'],
    ['a sig that is a number', (d) => { d.dsseEnvelope.signatures[0].sig = 1; }, 'dsseEnvelope.signatures[0].sig is not a base64 string'],
    ['a payload of bad base64', (d) => { d.dsseEnvelope.payload = 'a*=='; }, 'dsseEnvelope.payload is not valid base64'],
    ['a payload of base64 without padding', (d) => { d.dsseEnvelope.payload = 'YWJj' + 'YQ'; }, 'dsseEnvelope.payload is not valid base64'],
  ];
  for (const [name, edit, message] of shapes) {
    const doc = signatureDoc(r);
    const changed = edit(doc) ?? doc;
    const data = name === 'not JSON' ? new TextEncoder().encode('{"mediaType": ') : new TextEncoder().encode(JSON.stringify(changed));
    const o = optionsOf(r);
    o.fetch = serving({ 'manifest.json': bytes(r.manifest), 'manifest.sigstore.json': data });
    got = await verdict(o);
    assert.equal(got.error && got.error.code, 'MalformedSignature', name);
    assert.ok(got.error.message.startsWith(`MalformedSignature: ${message}`), `${name}: ${got.error.message}`);
  }
  // padded base64 of 1 and 2 trailing bytes is read
  for (const payload of ['YQ==', 'YWI=']) {
    const doc = signatureDoc(r);
    doc.dsseEnvelope.payload = payload;
    got = await verdict(optionsOf(r, { signature: doc }));
    assert.equal(got.error && got.error.code, 'SignatureInvalid', payload);
  }
});

test('the files are fetched from the bundle, bounded, and a 404 is FetchFailed', async () => {
  const r = row('v1, the release key');
  const seen = /** @type {string[]} */ ([]);
  const o = optionsOf(r);
  const serve = o.fetch;
  o.fetch = async (/** @type {URL} */ url) => {
    seen.push(url.href);
    return serve(url);
  };
  assert.equal((await verdict(o)).error, null);
  assert.deepEqual(seen.sort(), [`${BASE.href}manifest.json`, `${BASE.href}manifest.sigstore.json`]);
  const missing = await verdict({ ...optionsOf(r), fetch: serving({ 'manifest.json': bytes(r.manifest) }) });
  assert.equal(missing.error && missing.error.code, 'FetchFailed');
  const huge = await verdict({ ...optionsOf(r), fetch: serving({ 'manifest.json': new Uint8Array((4 << 20) + 1), 'manifest.sigstore.json': bytes(r.signature) }) });
  assert.equal(huge.error && huge.error.code, 'BoundExceeded');
  assert.equal(huge.error.detail.limit, 4 << 20);
  const bigSignature = await verdict({ ...optionsOf(r), fetch: serving({ 'manifest.json': bytes(r.manifest), 'manifest.sigstore.json': new Uint8Array((1 << 20) + 1) }) });
  assert.equal(bigSignature.error && bigSignature.error.detail.limit, 1 << 20);
});

test('what the loader supports', () => {
  assert.equal(SUPPORTED.schema, 'tinyrustlm.module-manifest.v1');
  assert.deepEqual([...SUPPORTED.runtimeSemantics], [1]);
  assert.deepEqual([...SUPPORTED.abiVersions], [1]);
  assert.equal(MANIFEST_PAYLOAD_TYPE, 'application/vnd.tinyrustlm.module-manifest.v1+json');
  assert.ok(Object.isFrozen(SUPPORTED) && Object.isFrozen(SUPPORTED.runtimeSemantics) && Object.isFrozen(SUPPORTED.abiVersions));
});

// ---- trust roots and dates, as verify/'s trust_root_of reads them --------------------------

/** The loader's `where` ("trustedKeys.keys[0].keyid") as verify/'s path ("keys.0.keyid"). */
const pathOf = (/** @type {string} */ where) => where.replace(/^trustedKeys\.?/, '').replace(/\[(\d+)\]/g, '.$1');

// where the loader names a field more precisely than pydantic's first error, or the key
// entry as a whole where verify/ names the field it parsed (the same refusal, said otherwise)
const WHERE = {
  'v1 with no keys': 'keys',
  'v2 with no keys': 'keys',
  'not an object': '',
  null: '',
  'a PEM of no key': 'keys.0.keyid', // no bytes between the markers: not the key's SHA-256
  'a PEM that is a number': 'keys.0',
  'a PEM of bad base64': 'keys.0.public_key_pem',
  'a policy for another document': 'policy.sbom',
  'a rule naming a bad keyid': 'policy.provenance.keyids',
  'a rule naming a number': 'policy.provenance.keyids',
};

for (const r of FIXTURES.roots) {
  test(`trust root: ${r.name}`, async () => {
    let root;
    try {
      root = await trustRootOf(r.doc);
    } catch (e) {
      assert.equal(r.code, e.code, `${r.name}: ${e.message}`);
      assert.equal(e.name, 'LoaderError');
      if (r.where !== null) {
        // the place the loader names: its detail, else its message's prefix
        const said = e.detail.where ?? e.message.slice('TrustedKeysInvalid: '.length).split(': ')[0];
        assert.equal(pathOf(said), r.name in WHERE ? WHERE[r.name] : r.where, e.message);
        assert.ok(e.message.startsWith(`TrustedKeysInvalid: ${said}: `), e.message);
      }
      return;
    }
    assert.equal(r.code, null, `${r.name}: accepted`);
    const keys = Object.fromEntries([...root.keys].map(([id, k]) => [id, { role: k.role, notBefore: k.notBefore, notAfter: k.notAfter }]));
    assert.deepEqual(keys, r.keys);
    for (const [id, k] of root.keys) {
      assert.equal(k.keyid, id);
      assert.equal(k.key.type, 'public');
      assert.equal(k.key.algorithm.name, 'Ed25519');
    }
    assert.deepEqual({ keyids: [...root.rule.keyids].sort(), threshold: root.rule.threshold }, r.rule);
    assert.deepEqual(Object.fromEntries(root.revoked), r.revoked);
  });
}

const keyEntry = () => structuredClone(FIXTURES.roots.find((r) => r.name === 'v1').doc.keys[0]);

for (const { stamp, epoch } of FIXTURES.dates) {
  test(`date: ${JSON.stringify(stamp)}`, async () => {
    const doc = { schema: 'tinyrustlm.trusted-keys.v1', keys: [{ ...keyEntry(), not_after: stamp }] };
    if (epoch === null) {
      await assert.rejects(trustRootOf(doc), (/** @type {any} */ e) => {
        assert.equal(e.message, 'TrustedKeysInvalid: trustedKeys.keys[0].not_after: not a date with a time zone (RFC 3339, e.g. 2031-01-01T00:00:00Z)');
        return true;
      });
    } else {
      assert.equal((await trustRootOf(doc)).keys.get(ALICE).notAfter, epoch);
    }
  });
}

test('dates that are not strings are refused', async () => {
  for (const value of [1924992000, null, true, ['2031-01-01T00:00:00Z'], { at: 1 }]) {
    const doc = { schema: 'tinyrustlm.trusted-keys.v1', keys: [{ ...keyEntry(), not_after: value }] };
    await assert.rejects(trustRootOf(doc), { code: 'TrustedKeysInvalid' }, JSON.stringify(value));
  }
});

test('the refusals of a trust root say what is wrong', async () => {
  const v2 = () => structuredClone(FIXTURES.roots.find((r) => r.name.startsWith('v2, two keys')).doc);
  const messages = [
    [null, 'trustedKeys: expected a tinyrustlm.trusted-keys.v1 or tinyrustlm.trusted-keys.v2 object'],
    [[], 'trustedKeys: expected a tinyrustlm.trusted-keys.v1 or tinyrustlm.trusted-keys.v2 object'],
    [{ keys: [] }, 'trustedKeys.keys: no keys: an empty trust root trusts nothing'],
    [{ keys: [keyEntry()], schema: 'x' }, 'trustedKeys.schema: neither tinyrustlm.trusted-keys.v1 nor tinyrustlm.trusted-keys.v2'],
    [{ keys: [keyEntry()], signers: 'x' }, "trustedKeys.signers: must be 'one-key' or 'any-trusted-key'"],
    [{ keys: [keyEntry(), keyEntry()] }, 'trustedKeys.keys[1].keyid: duplicate keyid'],
    [{ keys: [{ ...keyEntry(), role: 'x' }] }, 'trustedKeys.keys[0].role: must be release or development'],
    [{ keys: [{ ...keyEntry(), keyid: 'A'.repeat(64) }] }, 'trustedKeys.keys[0].keyid: not a lowercase hex SHA-256'],
    [{ keys: [{ ...keyEntry(), keyid: `${ALICE}0` }] }, 'trustedKeys.keys[0].keyid: not a lowercase hex SHA-256'],
    [{ keys: [{ ...keyEntry(), keyid: `0${ALICE}` }] }, 'trustedKeys.keys[0].keyid: not a lowercase hex SHA-256'],
    [{ keys: [{ ...keyEntry(), keyid: 7 }] }, 'trustedKeys.keys[0].keyid: not a lowercase hex SHA-256'],
    [{ ...v2(), revoked: [{ keyid: `${ALICE}0`, reason: 'a' }] }, 'trustedKeys.revoked[0].keyid: not a lowercase hex SHA-256'],
    [{ ...v2(), policy: { ...v2().policy, manifest: { keyids: [`${ALICE}0`], threshold: 1 } } }, `trustedKeys.policy.manifest.keyids: "${ALICE}0" is not a lowercase hex SHA-256`],
    [{ ...v2(), policy: { ...v2().policy, manifest: { keyids: [`0${ALICE}`], threshold: 1 } } }, `trustedKeys.policy.manifest.keyids: "0${ALICE}" is not a lowercase hex SHA-256`],
    [{ keys: [{ ...keyEntry(), public_key_pem: keyEntry().public_key_pem.replace('MCow', 'MC*w') }] }, 'trustedKeys.keys[0]: public_key_pem is not a PEM public key'],
    [{ keys: [{ ...keyEntry(), public_key_pem: keyEntry().public_key_pem.replace('MCow', 'MC=w') }] }, 'trustedKeys.keys[0].public_key_pem: not valid base64'],
    [{ ...v2(), keys: [{ ...v2().keys[0], not_before: '2031-01-01T00:00:00Z', not_after: '2030-01-01T00:00:00Z' }, v2().keys[1]] }, 'trustedKeys.keys[0].not_before: not_before is not before not_after'],
    [{ keys: [{ ...keyEntry(), keyid: 'a'.repeat(64) }] }, "trustedKeys.keys[0].keyid: not the SHA-256 of the key's SPKI DER"],
    [{ keys: [{ ...keyEntry(), public_key_pem: 'x' }] }, 'trustedKeys.keys[0]: public_key_pem is not a PEM public key'],
    [{ keys: [{ ...keyEntry(), comment: 1 }] }, 'trustedKeys.keys[0].comment: unknown field'],
    [{ keys: [{ ...keyEntry(), role: undefined, not_after: undefined }].map((k) => JSON.parse(JSON.stringify(k))) }, 'trustedKeys.keys[0].role: field required'],
    [{ ...v2(), policy: { manifest: v2().policy.manifest } }, 'trustedKeys.policy.provenance: no signing rule for the provenance'],
    [{ ...v2(), policy: { ...v2().policy, manifest: { keyids: [ALICE], threshold: 2 } } }, 'trustedKeys.policy.manifest.threshold: threshold 2 of 1 key(s) can never be met'],
    [{ ...v2(), policy: { ...v2().policy, manifest: { keyids: [ALICE, 'f'.repeat(64), 'e'.repeat(64)], threshold: 1 } } }, `trustedKeys.policy.manifest.keyids: keyid ${'e'.repeat(64)} is not one of the file's keys`],
    [{ ...v2(), policy: { ...v2().policy, manifest: { keyids: [ALICE, ALICE], threshold: 1 } } }, 'trustedKeys.policy.manifest.keyids: a keyid is listed twice'],
    [{ ...v2(), policy: { ...v2().policy, manifest: { keyids: [ALICE, 7], threshold: 1 } } }, 'trustedKeys.policy.manifest.keyids: 7 is not a lowercase hex SHA-256'],
    [{ ...v2(), policy: { ...v2().policy, manifest: { keyids: [], threshold: 1 } } }, 'trustedKeys.policy.manifest.keyids: at least one key'],
    [{ ...v2(), policy: { ...v2().policy, manifest: { keyids: [ALICE], threshold: 0 } } }, 'trustedKeys.policy.manifest.threshold: an integer >= 1'],
    [{ ...v2(), revoked: {} }, 'trustedKeys.revoked: expected a list'],
    [{ ...v2(), revoked: [{ keyid: ALICE, reason: '' }] }, 'trustedKeys.revoked[0].reason: a reason is required'],
    [{ ...v2(), revoked: [{ keyid: ALICE, reason: 'a' }, { keyid: ALICE, reason: 'b' }] }, 'trustedKeys.revoked[1].keyid: revoked twice'],
    [{ ...v2(), revoked: [{ keyid: 'x', reason: 'a' }] }, 'trustedKeys.revoked[0].keyid: not a lowercase hex SHA-256'],
    [{ ...v2(), keyless: { identity: 'i', issuer: 'j' } }, 'trustedKeys.keyless: the policy requires a keyless (Sigstore) signature, which this loader cannot verify; give the loader the same policy without `keyless`'],
    [{ ...v2(), policy: 1 }, 'trustedKeys.policy: expected an object'],
  ];
  for (const [doc, message] of messages) {
    await assert.rejects(trustRootOf(doc), (/** @type {any} */ e) => {
      assert.equal(e.message, `TrustedKeysInvalid: ${message}`);
      return true;
    });
  }
  // a keyless field that is null is no requirement
  const root = await trustRootOf({ ...v2(), keyless: null });
  assert.equal(root.rule.threshold, 2);
});

test('a key whose engine has no Ed25519 is CryptoUnsupported; a key of another kind is refused', async () => {
  const subtle = globalThis.crypto.subtle;
  const original = subtle.importKey;
  try {
    subtle.importKey = async () => {
      throw Object.assign(new Error('no such algorithm'), { name: 'NotSupportedError' });
    };
    await assert.rejects(trustRootOf({ keys: [keyEntry()] }), (/** @type {any} */ e) => {
      assert.equal(e.message, "CryptoUnsupported: this engine's WebCrypto has no Ed25519 (no such algorithm)");
      return true;
    });
    subtle.importKey = async () => {
      throw Object.assign(new Error('bad key data'), { name: 'DataError' });
    };
    await assert.rejects(trustRootOf({ keys: [keyEntry()] }), (/** @type {any} */ e) => {
      assert.equal(e.message, 'TrustedKeysInvalid: trustedKeys.keys[0]: not an Ed25519 public key (bad key data)');
      return true;
    });
  } finally {
    subtle.importKey = original;
  }
});

// ---- DSSE PAE and the version floor -------------------------------------------------------

test('pae is DSSE v1 pre-authentication encoding', () => {
  const text = (/** @type {string} */ s) => new TextEncoder().encode(s);
  assert.deepEqual(pae('http://example.com/HelloWorld', text('hello world')), text('DSSEv1 29 http://example.com/HelloWorld 11 hello world'));
  assert.deepEqual(pae('', new Uint8Array()), text('DSSEv1 0  0 '));
  // lengths count bytes, not characters
  assert.deepEqual(pae('é', text('€')), new Uint8Array([...text('DSSEv1 2 '), 0xc3, 0xa9, ...text(' 3 '), 0xe2, 0x82, 0xac]));
});

const VERSION_WORDS = 'MAJOR.MINOR.PATCH, optionally followed by aN, bN or rcN';

test('compareVersions orders release versions numerically, pre-releases before the release', () => {
  const cases = [
    ['1.2.3', '1.2.3', 0], ['1.2.3', '1.2.4', -1], ['1.2.4', '1.2.3', 1], ['1.10.0', '1.9.9', 1],
    ['0.9.0', '1.0.0', -1], ['2.0.0', '1.99.99', 1], ['1.2.10', '1.2.9', 1], ['10.0.0', '9.0.0', 1],
    ['0.0.1', '0.0.0', 1], ['1.2.3', '1.3.0', -1], ['3.0.0', '3.0.1', -1],
    ['1.0.0a1', '1.0.0', -1], ['1.0.0', '1.0.0rc9', 1], ['1.0.0b1', '1.0.0a9', 1], ['1.0.0rc1', '1.0.0b2', 1],
    ['1.0.0rc2', '1.0.0rc10', -1], ['1.0.0a1', '1.0.0a1', 0], ['0.9.9', '1.0.0a0', -1],
  ];
  for (const [a, b, want] of cases) assert.equal(compareVersions(a, b), want, `${a} vs ${b}`);
  for (const [a, b] of [['1.2', '1.2.3'], ['1.2.3', 'v1.2.3'], ['', '1.0.0'], ['1.2.3', '1.2.x'], ['1.0.0-rc1', '1.0.0']]) {
    assert.throws(() => compareVersions(a, b), (/** @type {any} */ e) => {
      assert.equal(e.code, 'BadOptions');
      const bad = /^\d+\.\d+\.\d+$/.test(a) ? b : a;
      assert.equal(e.message, `BadOptions: ${JSON.stringify(bad)} is not a release version (${VERSION_WORDS})`);
      return true;
    });
  }
});

test('compareVersions agrees with verify/ on every version of tests/release_versions.json', () => {
  const sign = (/** @type {number[]} */ a, /** @type {number[]} */ b) => {
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
    return 0;
  };
  const rows = FIXTURES.versions;
  const accepted = rows.filter((r) => r.key !== null);
  assert.ok(accepted.length >= 20 && rows.length - accepted.length >= 20, 'the table has both kinds');
  for (const a of accepted) {
    for (const b of accepted) assert.equal(compareVersions(a.version, b.version), sign(a.key, b.key), `${a.version} vs ${b.version}`);
  }
  for (const r of rows.filter((r) => r.key === null)) {
    for (const [a, b] of [[r.version, '1.0.0'], ['1.0.0', r.version]]) {
      assert.throws(() => compareVersions(a, b), { code: 'BadOptions', message: `BadOptions: ${JSON.stringify(r.version)} is not a release version (${VERSION_WORDS})` }, r.version);
    }
  }
});

test('trustRootId is the SHA-256 of the sorted key ids, one per line', async () => {
  const keys = [{ keyid: 'b' }, { keyid: 'a' }, { keyid: 'c' }];
  assert.equal(await trustRootId({ keys }), sha256('a\nb\nc'));
  assert.equal(await trustRootId({ keys: [{ keyid: 'x' }] }), sha256('x'));
  assert.equal(await trustRootId({}), sha256(''));
});

function memoryFile() {
  const dir = mkdtempSync(join(tmpdir(), 'trl-floor-'));
  return { dir, file: join(dir, 'versions.json') };
}

const TRUST = { keys: [{ keyid: ALICE }] };
const ROOT_ID = sha256(ALICE);

test('the version floor: remembered per trust root, written only when newer', async () => {
  const { dir, file } = memoryFile();
  const o = { trustedKeys: TRUST, versionFile: file };
  assert.deepEqual(await checkVersionFloor(o, { version: '1.2.0' }), { floor: null, remembered: null });
  assert.deepEqual(JSON.parse(readFileSync(file, 'utf-8')), { [ROOT_ID]: '1.2.0' });
  assert.equal(readFileSync(file, 'utf-8'), `{\n "${ROOT_ID}": "1.2.0"\n}\n`);
  assert.deepEqual(await checkVersionFloor(o, { version: '1.3.0' }), { floor: '1.2.0', remembered: '1.2.0' });
  assert.deepEqual(await checkVersionFloor(o, { version: '1.3.0' }), { floor: '1.3.0', remembered: '1.3.0' });
  await assert.rejects(checkVersionFloor(o, { version: '1.2.9' }), (/** @type {any} */ e) => {
    assert.equal(e.message, 'Rollback: release 1.2.9 is older than 1.3.0 (the newest release this page accepted before); pass allowDowngrade: true to accept it');
    assert.deepEqual(e.detail, { version: '1.2.9', floor: '1.3.0', remembered: '1.3.0' });
    return true;
  });
  // a downgrade allowed is not remembered over the newer one
  assert.deepEqual(await checkVersionFloor({ ...o, allowDowngrade: true }, { version: '1.0.0' }), { floor: '1.3.0', remembered: '1.3.0' });
  assert.deepEqual(JSON.parse(readFileSync(file, 'utf-8')), { [ROOT_ID]: '1.3.0' });
  // another trust root has its own floor; the file keeps both
  const other = { keys: [{ keyid: BOB }] };
  assert.deepEqual(await checkVersionFloor({ ...o, trustedKeys: other }, { version: '0.1.0' }), { floor: null, remembered: null });
  assert.deepEqual(JSON.parse(readFileSync(file, 'utf-8')), { [ROOT_ID]: '1.3.0', [sha256(BOB)]: '0.1.0' });
  assert.deepEqual(readdirSync(dir), ['versions.json']); // the temporary file was renamed
});

test('the version floor: minVersion, and the higher of it and the remembered one', async () => {
  const { file } = memoryFile();
  const o = { trustedKeys: TRUST, versionFile: file, minVersion: '2.0.0' };
  await assert.rejects(checkVersionFloor(o, { version: '1.9.9' }), (/** @type {any} */ e) => {
    assert.equal(e.message, 'Rollback: release 1.9.9 is older than 2.0.0 (minVersion); pass allowDowngrade: true to accept it');
    assert.deepEqual(e.detail, { version: '1.9.9', floor: '2.0.0', remembered: null });
    return true;
  });
  assert.equal(existsSync(file), false);
  assert.deepEqual(await checkVersionFloor(o, { version: '2.0.0' }), { floor: '2.0.0', remembered: null });
  assert.deepEqual(await checkVersionFloor({ ...o, minVersion: '1.0.0' }, { version: '2.0.0' }), { floor: '2.0.0', remembered: '2.0.0' });
  assert.deepEqual(await checkVersionFloor({ ...o, minVersion: '3.0.0', allowDowngrade: true }, { version: '2.5.0' }), { floor: '3.0.0', remembered: '2.0.0' });
  assert.deepEqual(JSON.parse(readFileSync(file, 'utf-8')), { [ROOT_ID]: '2.5.0' });
  await assert.rejects(checkVersionFloor({ ...o, minVersion: '2.5.0' }, { version: '2.4.0' }), { message: /\(the newest release this page accepted before\)/ });
});

test('the version floor: a remembered value that is not a version is ignored; bad files refused', async () => {
  const { file } = memoryFile();
  writeFileSync(file, JSON.stringify({ [ROOT_ID]: 'junk', other: '9.9.9' }));
  const o = { trustedKeys: TRUST, versionFile: file };
  assert.deepEqual(await checkVersionFloor(o, { version: '0.0.1' }), { floor: null, remembered: null });
  assert.deepEqual(JSON.parse(readFileSync(file, 'utf-8')), { [ROOT_ID]: '0.0.1', other: '9.9.9' });
  writeFileSync(file, JSON.stringify({ [ROOT_ID]: 7 }));
  assert.deepEqual(await checkVersionFloor(o, { version: '0.0.1' }), { floor: null, remembered: null });
  writeFileSync(file, '{not json');
  await assert.rejects(checkVersionFloor(o, { version: '1.0.0' }), (/** @type {any} */ e) => {
    assert.equal(e.code, 'BadOptions');
    assert.ok(e.message.startsWith(`BadOptions: versionFile ${file} is not readable JSON (`), e.message);
    return true;
  });
  for (const version of ['1.0', 1, undefined, 'v1.0.0']) {
    await assert.rejects(checkVersionFloor(o, { version }), (/** @type {any} */ e) => {
      assert.equal(e.message, `BadManifest: the manifest's version ${JSON.stringify(version)} is not a release version (${VERSION_WORDS})`);
      return true;
    });
  }
});

test('the version floor: a minVersion that is not a release version is BadOptions; pre-releases sort first', async () => {
  const o = { trustedKeys: TRUST };
  for (const minVersion of ['1.0', 'v1.0.0', '1.0.0-rc1', '']) {
    await assert.rejects(checkVersionFloor({ ...o, minVersion }, { version: '1.0.0' }), {
      code: 'BadOptions',
      message: `BadOptions: minVersion ${JSON.stringify(minVersion)} is not a release version (${VERSION_WORDS})`,
    });
  }
  assert.deepEqual(await checkVersionFloor({ ...o, minVersion: null }, { version: '1.0.0' }), { floor: null, remembered: null });
  await assert.rejects(checkVersionFloor({ ...o, minVersion: '1.0.0' }, { version: '1.0.0rc1' }), { code: 'Rollback' });
  assert.deepEqual(await checkVersionFloor({ ...o, minVersion: '1.0.0rc1' }, { version: '1.0.0' }), { floor: '1.0.0rc1', remembered: null });
  assert.deepEqual(await checkVersionFloor({ ...o, minVersion: '1.0.0rc1' }, { version: '1.0.0rc1' }), { floor: '1.0.0rc1', remembered: null });
});

test('the version floor in node without a versionFile remembers nothing', async () => {
  const o = { trustedKeys: TRUST, minVersion: '1.0.0' };
  assert.deepEqual(await checkVersionFloor(o, { version: '1.0.0' }), { floor: '1.0.0', remembered: null });
  assert.deepEqual(await checkVersionFloor({ trustedKeys: TRUST }, { version: '0.0.1' }), { floor: null, remembered: null });
  await assert.rejects(checkVersionFloor(o, { version: '0.9.0' }), { code: 'Rollback' });
});
