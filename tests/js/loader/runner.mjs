// Runs loader test cases the same way in node (drive.mjs) and in Chromium (page/run.mjs).
// A case: { name, loader (URL of js/loader.js), options (passed to load, minus the parts
// resolved here), base (bundle URL), keys (URL of a trusted-keys file), model {url, sha256},
// prompt, maxTokens, cancelPrefillAt, cancelDecodeAt, prefillChunk, repeat, measureMemory }.
// Result: { name, lane, receipt, tokens, error {code, message, attempts}, stats (what the
// loader did during this case), loadMs, firstTokenMs, memory }.

async function json(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  return r.json();
}

/** @param {Uint8Array} bytes */
function flipLastBit(bytes) {
  bytes[bytes.length - 1] ^= 1;
}

/**
 * Memory beside the plan, phase by phase (CONTRACT.md §5), through the loader: loading in place
 * (the loader's own mark, `lm.loadMemory`), a prompt that fills the session's context but for
 * `decode` tokens (prefilled as the loader prefills), then `decode` tokens of steady decode.
 */
async function measureMemory(lm, { decode }) {
  const activation = await lm.memorySince(); // the session and its windows; prefill starts here
  const prompt = [256, ...Array.from({ length: lm.context - decode - 1 }, (_, i) => 32 + (i % 90))];
  const fed = await lm.prefill(prompt);
  const prefill = await lm.memorySince();
  const tokens = [];
  for await (const t of lm.decode({ maxTokens: decode })) tokens.push(t.token);
  const steady = await lm.memorySince();
  return {
    context: lm.context, workers: lm.plan.workers, plan: lm.plan, load: lm.loadMemory, activation, prefill, decode: steady,
    committed: fed.committed, decoded: tokens.length, memoryUnchanged: lm.rt.memory.buffer.byteLength === lm.memoryBytes,
  };
}

async function runOnce(c, loader) {
  const out = { name: c.name };
  if (c.poisonCache) {
    // browser: replace Cache API entries of the loader's store (fetch.js CACHE_NAME, keyOf)
    // with bytes of the same size and one bit flipped: a hit judged on its size would pass
    const cache = await caches.open('tinyrustlm-cas-v1');
    out.poisoned = [];
    for (const sha of c.poisonCache) {
      const key = new URL(`/.tinyrustlm-cas/sha256/${sha}`, location.href).href;
      const entry = await cache.match(key);
      if (entry === undefined) continue;
      const bytes = new Uint8Array(await entry.arrayBuffer());
      flipLastBit(bytes);
      await cache.put(key, new Response(bytes));
      out.poisoned.push({ sha, size: bytes.length });
    }
  }
  /** @type {any} */
  let heap = null;
  const memory = /** @type {any} */ (globalThis.performance).memory;
  if (c.measureHeap && memory) {
    // Chromium (--enable-precise-memory-info): JS heap sampled while load() runs
    heap = { before: memory.usedJSHeapSize, peak: 0, samples: 0 };
    const sample = () => {
      heap.peak = Math.max(heap.peak, memory.usedJSHeapSize);
      heap.samples++;
    };
    heap.timer = setInterval(sample, 1);
    heap.sample = sample;
    heap.modelEvents = 0;
  }
  if (c.poisonFile) {
    // node only: poison cached files before this load, each with one bit flipped and its size
    // kept (a hit judged on its size would pass): the last byte's, or byte `poisonAt`'s
    const { existsSync, readFileSync, writeFileSync } = await import('node:fs');
    out.poisoned = [];
    for (const path of c.poisonFile) {
      if (!existsSync(path)) continue; // not cached (an earlier case failed): the assertions say so
      const bytes = new Uint8Array(readFileSync(path));
      if (c.poisonAt === undefined) flipLastBit(bytes);
      else bytes[c.poisonAt] ^= 1;
      writeFileSync(path, bytes);
      out.poisoned.push({ path, size: bytes.length });
    }
  }
  const before = loader.loaderStats();
  const t0 = performance.now();
  let lm = null;
  const progress = [];
  try {
    lm = await loader.load({
      ...c.options,
      baseUrl: c.base,
      trustedKeys: await json(c.keys),
      model: c.model,
      ...(c.progress || heap
        ? {
            onProgress: (p) => {
              if (c.progress) progress.push(p);
              if (heap) heap.sample(); // per downloaded chunk: while the model streams in
            },
          }
        : {}),
    });
    out.loadMs = performance.now() - t0;
    if (heap) {
      heap.sample();
      clearInterval(heap.timer);
      out.heap = { before: heap.before, peak: heap.peak, samples: heap.samples };
    }
    out.lane = lm.receipt.module.artifact_id;
    out.receipt = lm.receipt;
    out.plan = lm.plan;
    if (c.measureMemory) out.memory = await measureMemory(lm, c.measureMemory);
    if (c.killWorkerAt !== undefined) {
      // worker 0 killed once `killWorkerAt` tokens are in: the prefill fails typed, and the lane
      // is in the page's failure record for the next load()
      /** @type {Promise<void> | null} */
      let killed = null;
      const prompt = [256, ...new TextEncoder().encode(c.prompt)];
      const kill = (n) => {
        if (n >= c.killWorkerAt && killed === null) killed = lm.rt.kill(0);
      };
      out.killed = await lm.prefill(prompt, { onProgress: kill }).then(
        (v) => ({ ok: true, value: v }),
        (e) => ({ ok: false, name: e.name, code: e.code ?? null, detail: e.detail ?? null }),
      );
      await killed;
      out.record = loader.laneFailureRecord();
    } else if (c.prompt !== undefined) {
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
    const { attempts = null, ...detail } = e.detail || {};
    out.error = { code: e.code || null, message: String(e.message || e), attempts, detail };
  } finally {
    if (lm) await lm.close();
  }
  if (c.forgetLaneFailures) loader.forgetLaneFailures();
  if (c.progress) out.progress = progress;
  if (globalThis.process) out.maxRssBytes = globalThis.process.resourceUsage().maxRSS * 1024;
  out.elapsedMs = performance.now() - t0;
  const after = loader.loaderStats();
  out.stats = {
    instantiations: after.instantiations - before.instantiations, modelLoads: after.modelLoads - before.modelLoads, live: after.live,
    storeBytesRead: after.storeBytesRead - before.storeBytesRead, modelBytesHashed: after.modelBytesHashed - before.modelBytesHashed, cacheRestarts: after.cacheRestarts - before.cacheRestarts,
  };
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
