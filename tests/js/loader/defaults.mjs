// Step 1 of loader.js (the signed manifest) with the loader's own defaults: each case passes
// only what it names (baseUrl, trustedKeys, model, and its `options`), never allowDevKey or
// now unless the case is about them; `clock` (epoch seconds) replaces Date.now for the case.
// Prints [{ name, code, message }] (code null: load got past step 1 or did not fail).
import { readFileSync } from 'node:fs';

const { loader, cases } = JSON.parse(readFileSync(process.argv[2], 'utf-8'));
const { load } = await import(loader);
const realNow = Date.now;
const out = [];
for (const c of cases) {
  if (c.clock !== undefined) Date.now = () => c.clock * 1000;
  let lm = null;
  try {
    lm = await load({ ...c.options, baseUrl: c.base, trustedKeys: c.trustedKeys, model: c.model });
    out.push({ name: c.name, code: null, message: 'loaded' });
  } catch (e) {
    out.push({ name: c.name, code: e.code || null, message: String(e.message || e) });
  } finally {
    Date.now = realNow;
    if (lm) await lm.close();
  }
}
process.stdout.write(JSON.stringify(out));
