// Runs loader test cases the same way in node (drive.mjs) and in Chromium (page/run.mjs).
// A case: { name, loader (URL of js/loader.js), options (passed to load, minus the parts
// resolved here), base (bundle URL), keys (URL of a trusted-keys file), model {url, sha256},
// prompt, maxTokens, cancelPrefillAt, cancelDecodeAt, prefillChunk, repeat }.
// Result: { name, lane, receipt, tokens, error {code, message, attempts}, stats (what the
// loader did during this case), loadMs, firstTokenMs }.

async function json(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  return r.json();
}

async function runOnce(c, loader) {
  const out = { name: c.name };
  const before = loader.loaderStats();
  const t0 = performance.now();
  let lm = null;
  try {
    lm = await loader.load({
      ...c.options,
      baseUrl: c.base,
      trustedKeys: await json(c.keys),
      model: c.model,
    });
    out.loadMs = performance.now() - t0;
    out.lane = lm.receipt.module.artifact_id;
    out.receipt = lm.receipt;
    if (c.prompt !== undefined) {
      const tokens = [];
      const prompt = [256, ...new TextEncoder().encode(c.prompt)];
      let fed = 0;
      if (c.cancelPrefillAt !== undefined) {
        // cancel once `cancelPrefillAt` tokens are in, then feed the rest: the session must
        // have stood exactly at its last committed token
        const first = await lm.prefill(prompt, { onProgress: (n) => n >= c.cancelPrefillAt && lm.cancel() });
        out.prefillCancelled = first;
        fed = first.committed;
      }
      const rest = await lm.prefill(prompt.slice(fed));
      if (rest.cancelled) throw new Error('an uncancelled prefill reported a cancel');
      for await (const t of lm.decode({ maxTokens: c.maxTokens })) {
        if (tokens.length === 0) {
          out.firstTokenMs = performance.now() - t0;
          out.firstTokenSinceStartMs = performance.now(); // browser: since navigation start
        }
        tokens.push(t.token);
        if (tokens.length === c.cancelDecodeAt) lm.cancel();
      }
      if (c.cancelDecodeAt !== undefined) {
        out.tokensBeforeCancel = tokens.length;
        for await (const t of lm.decode({ maxTokens: c.maxTokens - tokens.length })) tokens.push(t.token);
      }
      out.tokens = tokens;
      out.memoryUnchanged = lm.rt.memory.buffer.byteLength === lm.memoryBytes;
    }
  } catch (e) {
    out.error = { code: e.code || null, message: String(e.message || e), attempts: (e.detail && e.detail.attempts) || null };
  } finally {
    if (lm) await lm.close();
  }
  out.elapsedMs = performance.now() - t0;
  const after = loader.loaderStats();
  out.stats = { instantiations: after.instantiations - before.instantiations, modelLoads: after.modelLoads - before.modelLoads, live: after.live };
  return out;
}

export async function runCases(cases) {
  const results = [];
  for (const c of cases) {
    const loader = await import(c.loader);
    for (let i = 0; i < (c.repeat || 1); i++) results.push(await runOnce(c, loader));
  }
  return results;
}
