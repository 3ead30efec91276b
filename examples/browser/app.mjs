// The example page: everything an integrator writes is the four marked lines.
// `tinyrustlm-release serve` provides /config.json (trusted keys, model URL and SHA-256).
import { load } from './bundle/js/loader.js';

/** @type {(id: string) => any} */
const $ = (id) => document.getElementById(id);

async function main() {
  const config = await (await fetch('./config.json')).json();
  const started = performance.now();
  const lm = await load({ // (1) verify, probe, choose, self-test, admit the model
    baseUrl: config.bundle,
    trustedKeys: config.trustedKeys,
    allowDevKey: config.allowDevKey,
    model: config.model,
    onProgress: ({ phase, loaded, total }) => {
      $('progress').max = total || 1;
      $('progress').value = loaded;
      $('phase').textContent = `${phase} ${loaded} / ${total} bytes`;
    },
  });
  $('lane').textContent = lm.receipt.module.artifact_id;
  $('receipt').textContent = JSON.stringify(lm.receipt, null, 2);
  $('status').textContent = `ready in ${Math.round(performance.now() - started)} ms`;
  $('go').disabled = false;
  $('form').addEventListener('submit', async (event) => {
    event.preventDefault();
    $('go').disabled = true;
    $('stop').disabled = false;
    $('tokens').textContent = '';
    await lm.prefill($('prompt').value); // (2) the prompt
    const t0 = performance.now();
    let n = 0;
    for await (const t of lm.decode({ maxTokens: 64 })) { // (3) stream tokens
      $('tokens').textContent += t.text || `⟨${t.token}⟩`; // (4) show them
      n += 1;
      $('speed').textContent = `${n} tokens, ${(n / ((performance.now() - t0) / 1000)).toFixed(1)} tokens/s`;
    }
    $('stop').disabled = true;
    $('go').disabled = false;
    $('status').textContent += ' · done';
  });
  $('stop').addEventListener('click', () => lm.cancel());
  // ?prompt=TEXT generates right away (a link that shows a run, and what the tests load)
  const prompt = new URLSearchParams(location.search).get('prompt');
  if (prompt !== null) {
    $('prompt').value = prompt;
    $('form').requestSubmit();
  }
}

main().catch((e) => {
  $('status').textContent = `${e.code || 'error'}: ${e.message}`;
  $('status').className = 'error';
});
