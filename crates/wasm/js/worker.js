// Worker entry of the threads lane (node worker_threads and browser Workers).
// role 'leader': instantiate first, then serve tr_* calls posted by the host.
// role 'worker': prove the module hash, take stack region `id`, then loop in
// tr_worker_main(id) until the pool shuts down or fails.
import { isNode, sha256Hex } from './host.js';

/** @type {any} */
const port = isNode ? (await import('node:worker_threads')).parentPort : self;
const post = (m) => port.postMessage(m);
const onMessage = (fn) => (isNode ? port.on('message', fn) : port.addEventListener('message', (e) => fn(e.data)));

/** @type {any} */
let exportsOf = null;

async function start(init) {
  const sha256 = await sha256Hex(init.bytes);
  if (sha256 !== init.sha256) {
    post({ type: 'refused', error: `module hash ${sha256} != ${init.sha256}` });
    return;
  }
  const imports = { [init.memoryModule]: { [init.memoryName]: init.memory } };
  const { instance } = /** @type {any} */ (await WebAssembly.instantiate(init.bytes, imports));
  /** @type {any} */
  const ex = instance.exports;
  // Thread-local storage, judged from the module's own TLS exports (the lane links them and
  // verify requires them whenever the bytes hold a TLS base): never assume "no export, no
  // TLS" — rustc 1.96 exports none of them by itself, and a worker whose TLS base stays 0
  // would share address 0 with every other thread.
  const tls = ex.__tls_base && ex.__tls_size && ex.__tls_align && typeof ex.__wasm_init_tls === 'function';
  if (!tls) {
    post({ type: 'refused', error: 'module exports no __wasm_init_tls/__tls_base/__tls_size/__tls_align: this host cannot give each thread its own thread-local storage' });
    return;
  }
  if (init.role === 'leader') {
    // The leader instantiates first: its start function placed the static TLS block.
    if (ex.__tls_size.value !== 0 && ex.__tls_base.value === 0) {
      post({ type: 'refused', error: 'the leader has no thread-local storage block (TLS base 0)' });
      return;
    }
    exportsOf = ex;
    post({ type: 'ready', sha256 });
    return;
  }
  const stackTop = ex.tr_worker_stack_top(init.id);
  if (stackTop === 0 || !ex.__stack_pointer) {
    post({ type: 'refused', error: `no stack for worker ${init.id}` });
    return;
  }
  // This worker's TLS block sits at the top of its own stack region; the stack grows down
  // from just below it (16-byte aligned, as the C ABI wants).
  const size = ex.__tls_size.value >>> 0;
  const align = Math.max(ex.__tls_align.value >>> 0, 1);
  const block = size === 0 ? stackTop : Math.floor((stackTop - size) / align) * align;
  const top = Math.floor(block / 16) * 16;
  ex.__stack_pointer.value = top;
  if (size !== 0) ex.__wasm_init_tls(block);
  post({ type: 'ack', id: init.id, sha256 });
  // Let the ack leave before this thread blocks inside wasm.
  await new Promise((r) => setTimeout(r, 0));
  try {
    const code = ex.tr_worker_main(init.id);
    post({ type: 'exit', id: init.id, code });
  } catch (e) {
    ex.__stack_pointer.value = top;
    ex.tr_worker_failed(init.id);
    post({ type: 'failed', id: init.id, error: String(e) });
  }
}

onMessage((m) => {
  if (m.type === 'call') {
    try {
      const f = exportsOf[m.name];
      if (typeof f !== 'function') throw new Error(`module has no export ${m.name}`);
      post({ type: 'result', seq: m.seq, value: f(...m.args) });
    } catch (e) {
      post({ type: 'result', seq: m.seq, error: String(e) });
    }
    return;
  }
  start(m).catch((e) => post({ type: 'refused', error: String(e) }));
});
