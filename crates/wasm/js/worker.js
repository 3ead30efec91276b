// Worker entry of the threads lane (node worker_threads and browser Workers).
// role 'leader': instantiate first, then serve tr_* calls posted by the host.
// role 'worker': prove the module hash, take stack region `id`, then loop in
// tr_worker_main(id) until the pool shuts down or fails.
import { isNode, sha256Hex } from './host.js';

/**
 * What the host posts: the module to start (host.js `instantiate`), then calls to serve.
 * @typedef {{ type?: undefined, role: 'leader' | 'worker', id: number, bytes: Uint8Array, sha256: string, memory: WebAssembly.Memory, memoryModule: string, memoryName: string }} Init
 * @typedef {{ type: 'call', seq: number, name: string, args: import('./host.js').WasmArg[] }} Call
 */
/**
 * The exports a worker uses: the runtime's worker entry points and the TLS/stack globals the
 * lane links (any other export is served by name to the host's calls).
 * @typedef {{ __tls_base?: WebAssembly.Global, __tls_size?: WebAssembly.Global, __tls_align?: WebAssembly.Global, __stack_pointer?: WebAssembly.Global, __wasm_init_tls?: (block: number) => void, tr_worker_stack_top: (id: number) => number, tr_worker_main: (id: number) => number, tr_worker_failed: (id: number) => void, [name: string]: unknown }} WorkerExports
 */

// any: node's parentPort (on) or the worker's global scope (addEventListener; the lint's lib is
// the page's, which has no worker scope), one of the two by `isNode`
/** @type {any} */
const port = isNode ? (await import('node:worker_threads')).parentPort : self;
const post = (/** @type {object} */ m) => port.postMessage(m);
const onMessage = (/** @type {(m: Init | Call) => void} */ fn) => (isNode ? port.on('message', fn) : port.addEventListener('message', (/** @type {MessageEvent<Init | Call>} */ e) => fn(e.data)));

/** @type {WorkerExports | null} */
let exportsOf = null;

/** @param {Init} init */
async function start(init) {
  const sha256 = await sha256Hex(init.bytes);
  if (sha256 !== init.sha256) {
    post({ type: 'refused', error: `module hash ${sha256} != ${init.sha256}` });
    return;
  }
  const imports = { [init.memoryModule]: { [init.memoryName]: init.memory } };
  // BufferSource: the module's bytes as posted (a copy), never a view of the shared memory
  const { instance } = await WebAssembly.instantiate(/** @type {BufferSource} */ (init.bytes), imports);
  const ex = /** @type {WorkerExports} */ (instance.exports);
  // Thread-local storage, judged from the module's own TLS exports (the lane links them and
  // verify requires them whenever the bytes hold a TLS base): never assume "no export, no
  // TLS" — rustc 1.96 exports none of them by itself, and a worker whose TLS base stays 0
  // would share address 0 with every other thread.
  const tlsBase = ex.__tls_base;
  const tlsSize = ex.__tls_size;
  const tlsAlign = ex.__tls_align;
  const initTls = ex.__wasm_init_tls;
  if (!(tlsBase && tlsSize && tlsAlign && typeof initTls === 'function')) {
    post({ type: 'refused', error: 'module exports no __wasm_init_tls/__tls_base/__tls_size/__tls_align: this host cannot give each thread its own thread-local storage' });
    return;
  }
  if (init.role === 'leader') {
    // The leader instantiates first: its start function placed the static TLS block.
    if (tlsSize.value !== 0 && tlsBase.value === 0) {
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
  const size = tlsSize.value >>> 0;
  const align = Math.max(tlsAlign.value >>> 0, 1);
  const block = size === 0 ? stackTop : Math.floor((stackTop - size) / align) * align;
  const top = Math.floor(block / 16) * 16;
  ex.__stack_pointer.value = top;
  if (size !== 0) initTls(block);
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
    const call = /** @type {Call} */ (m);
    try {
      if (exportsOf === null) throw new Error(`call ${call.name} before the leader started`);
      const f = exportsOf[call.name];
      if (typeof f !== 'function') throw new Error(`module has no export ${call.name}`);
      post({ type: 'result', seq: call.seq, value: f(...call.args) });
    } catch (e) {
      post({ type: 'result', seq: call.seq, error: String(e) });
    }
    return;
  }
  start(/** @type {Init} */ (m)).catch((e) => post({ type: 'refused', error: String(e) }));
});
