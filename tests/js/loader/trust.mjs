// Step 1 of loader.js (verifySignedManifest: the trusted keys, the manifest's signatures
// counted against its rule) for each case of tests/js/loader/trust_table.py, with the case's
// manifest.json and manifest.sigstore.json handed over by the loader's own `fetch` option.
// Input: { loader (URL of js/loader.js), cases: [{ name, trustedKeys, manifest, signature
// (base64 bytes), now, allowDevKey }] }. Prints [{ name, code, message, keyids }]
// (code null: accepted, keyids the counted signers in envelope order).
import { readFileSync } from 'node:fs';

const { loader, cases } = JSON.parse(readFileSync(process.argv[2], 'utf-8'));
const { verifySignedManifest } = await import(loader);
const bytes = (b64) => Uint8Array.from(Buffer.from(b64, 'base64'));
const out = [];
for (const c of cases) {
  const files = { 'manifest.json': bytes(c.manifest), 'manifest.sigstore.json': bytes(c.signature) };
  const fetch = async (/** @type {URL} */ url) => {
    const name = url.pathname.split('/').pop();
    return name in files ? new Response(files[name]) : new Response('', { status: 404 });
  };
  try {
    const signed = await verifySignedManifest({ baseUrl: new URL('https://bundle.invalid/'), trustedKeys: c.trustedKeys, allowDevKey: c.allowDevKey, now: c.now, fetch });
    out.push({ name: c.name, code: null, message: 'accepted', keyids: signed.keyids });
  } catch (e) {
    out.push({ name: c.name, code: e.code || null, message: String(e.message || e), keyids: null });
  }
}
process.stdout.write(JSON.stringify(out));
