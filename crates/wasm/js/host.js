// TinyRustLM lane host: instantiate any lane in node (>= 18) or a browser.
// ES module, no dependencies; ships in the bundle beside the .wasm files.
//
//   const rt = await instantiate({ bytes, workers: 2 });
//   const ptr = await rt.call('tr_alloc', n); rt.bytes(ptr, n).set(data);
//   ...; await rt.close();
//
// Lanes without imports (scalar, simd128) run in the calling thread. A module
// importing a shared memory (simd128-threads) runs as one leader instance
// plus N worker instances, each in its own Worker over that one memory: the
// leader serves every tr_* call (it may block in memory.atomic.wait32, which a
// browser main thread must not do), workers loop in tr_worker_main(id). Each
// instance first proves it holds the module the host hashed.
//
// The shared memory is the host's to size: the module declares a small minimum
// (what it needs without a model) and the wasm32 maximum; the host creates it
// with initial == maximum (never grown) at the model's memory plan, which a
// `planner` instance of the same module answers before that memory exists.

/** A host-side failure; `code` is the TrResult code when the runtime gave one. */
export class HostError extends Error {
  /**
   * @param {string} message
   * @param {number} [code]
   */
  constructor(message, code = 0) {
    super(message);
    this.name = 'HostError';
    this.code = code;
  }
}

/** TrResult codes the host itself produces or acts on (crates/core/src/result.rs). */
export const TR_OK = 0;
export const TR_OUT_OF_MEMORY = 9;
export const TR_CANCELLED = 15;
export const TR_WORKER_FAILURE = 16;
/** An argument of a tr_* export: i32 as a number, i64 (handles, sizes) as a bigint. */
/** @typedef {number | bigint} WasmArg */
/** The memory a module imports (`memoryImport`). */
/** @typedef {{ module: string, name: string, initial: number, maximum: number | null, shared: boolean }} MemoryImport */
/**
 * A message between the host and a worker (worker.js): `type` says which fields it carries
 * (ready/ack/refused: sha256, error; result: seq, value or error; failed/exit: id, error, code).
 * @typedef {{ type: string, seq?: number, value?: number, error?: string, sha256?: string, id?: number, code?: number }} WorkerMessage
 */
/**
 * One worker as node's worker_threads and browser Workers both give it.
 * @typedef {{ post(m: object): void, onMessage(fn: (m: WorkerMessage) => void): void, onDeath(fn: (why: string) => void): void, terminate(): Promise<number> | void }} Port
 */
/** A lane's runtime, whichever way it runs: every tr_* call goes through `call`. */
/** @typedef {LocalRuntime | ThreadedRuntime} Runtime */

export const isNode = typeof process === 'object' && process.versions != null && process.versions.node != null;

/** Bytes of a Wasm page. */
export const PAGE = 65536;

/**
 * Hex SHA-256 of `bytes` (WebCrypto: browsers and node >= 18).
 * @param {Uint8Array | ArrayBuffer} bytes
 */
export async function sha256Hex(bytes) {
  // BufferSource: TypeScript's Uint8Array may view a SharedArrayBuffer, which WebCrypto refuses
  // when it runs; the loader hashes downloads and copies, never shared memory
  const digest = await globalThis.crypto.subtle.digest('SHA-256', /** @type {BufferSource} */ (bytes));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * The unsigned LEB128 at `at`: [value, the offset after it].
 * @param {Uint8Array} bytes
 * @param {number} at
 * @returns {[number, number]}
 */
function leb(bytes, at) {
  let value = 0;
  let shift = 0;
  for (;;) {
    if (at >= bytes.length || shift > 28) throw new HostError(`bad LEB128 at offset ${at}`);
    const b = bytes[at++];
    value += (b & 0x7f) * 2 ** shift;
    shift += 7;
    if ((b & 0x80) === 0) return [value, at];
  }
}

/**
 * The memory a module imports, read from its import section:
 * `{ module, name, initial, maximum, shared }`, or null when it imports none.
 * The host must create exactly this memory before instantiation.
 * @param {Uint8Array | ArrayBuffer} bytes
 * @returns {MemoryImport | null}
 */
export function memoryImport(bytes) {
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  if (u8.length < 8 || u8[0] !== 0 || u8[1] !== 0x61 || u8[2] !== 0x73 || u8[3] !== 0x6d) {
    throw new HostError('not a wasm module (bad magic at offset 0)');
  }
  const text = new TextDecoder();
  let at = 8;
  while (at < u8.length) {
    const id = u8[at++];
    let size = 0;
    [size, at] = leb(u8, at);
    const end = at + size;
    if (end > u8.length) throw new HostError(`section ${id} at offset ${at} runs past the end`);
    if (id === 2) {
      let count = 0;
      [count, at] = leb(u8, at);
      for (let i = 0; i < count; i++) {
        const names = [];
        for (let k = 0; k < 2; k++) {
          let len = 0;
          [len, at] = leb(u8, at);
          names.push(text.decode(u8.subarray(at, at + len)));
          at += len;
        }
        const kind = u8[at++];
        if (kind === 0x02) {
          const flags = u8[at++];
          let initial = 0;
          /** @type {number | null} */
          let maximum = null;
          [initial, at] = leb(u8, at);
          if (flags & 1) [maximum, at] = leb(u8, at);
          return { module: names[0], name: names[1], initial, maximum, shared: (flags & 2) !== 0 };
        }
        if (kind === 0x00) [, at] = leb(u8, at); // function: type index
        else if (kind === 0x01) { at += 1; const f = u8[at++]; [, at] = leb(u8, at); if (f & 1) [, at] = leb(u8, at); } // table
        else if (kind === 0x03) at += 2; // global: valtype, mutability
        else throw new HostError(`unknown import kind ${kind} at offset ${at - 1}`);
      }
      return null;
    }
    at = end;
  }
  return null;
}

// ---- one message port shape over node worker_threads and browser Workers ----

/**
 * @param {URL | string} url
 * @returns {Promise<Port>}
 */
async function spawnWorker(url) {
  if (isNode) {
    const { Worker } = await import('node:worker_threads');
    const w = new Worker(url);
    return {
      post: (m) => w.postMessage(m),
      onMessage: (fn) => w.on('message', fn),
      onDeath: (fn) => {
        w.on('error', (e) => fn(String(e)));
        w.on('exit', (c) => fn(`exited with code ${c}`));
      },
      terminate: () => w.terminate(),
    };
  }
  const w = new Worker(url, { type: 'module' });
  return {
    post: (m) => w.postMessage(m),
    onMessage: (fn) => w.addEventListener('message', (e) => fn(e.data)),
    onDeath: (fn) => w.addEventListener('error', (e) => fn(String(e.message || e))),
    terminate: () => w.terminate(),
  };
}

/**
 * The first message of `port` that `predicate` accepts, or a HostError after `timeoutMs` or
 * when the worker dies.
 * @param {Port} port
 * @param {(m: WorkerMessage) => boolean} predicate
 * @param {string} what
 * @param {number} timeoutMs
 * @returns {Promise<WorkerMessage>}
 */
function nextMessage(port, predicate, what, timeoutMs) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new HostError(`${what}: no answer within ${timeoutMs} ms`, TR_WORKER_FAILURE)), timeoutMs);
    port.onMessage((m) => {
      if (predicate(m)) {
        clearTimeout(timer);
        resolve(m);
      }
    });
    port.onDeath((why) => {
      clearTimeout(timer);
      reject(new HostError(`${what}: worker died (${why})`, TR_WORKER_FAILURE));
    });
  });
}

// ---- single-threaded lanes ----

class LocalRuntime {
  /**
   * @param {WebAssembly.Instance} instance
   * @param {string} sha256
   * @param {WebAssembly.Memory} [memory] the memory it imports (a planner's); else its export
   */
  constructor(instance, sha256, memory) {
    this.instance = instance;
    this.exports = instance.exports;
    this.memory = memory ?? /** @type {WebAssembly.Memory} */ (instance.exports.memory);
    this.sha256 = sha256;
    this.workers = 0;
  }

  /**
   * @param {string} name
   * @param {...WasmArg} args
   * @returns {Promise<number>} every tr_* export returns an i32 (or nothing)
   */
  async call(name, ...args) {
    const f = this.exports[name];
    if (typeof f !== 'function') throw new HostError(`module has no export ${name}`);
    return f(...args);
  }

  /**
   * @param {number} ptr
   * @param {number} len
   */
  bytes(ptr, len) {
    return new Uint8Array(this.memory.buffer, ptr, len);
  }

  cancel() {
    // Calls run to completion on this thread: there is nothing in flight to cancel.
  }

  async close() {}
}

// ---- the threads lane ----

class ThreadedRuntime {
  /**
   * @param {WebAssembly.Memory} memory
   * @param {string} sha256
   * @param {Port} leader
   * @param {Port[]} workers
   */
  constructor(memory, sha256, leader, workers) {
    this.memory = memory;
    this.sha256 = sha256;
    this.leader = leader;
    this.workerPorts = workers;
    this.workers = workers.length;
    /** @type {string[]} */
    this.failures = [];
    this.seq = 0;
    /** @type {Map<number, { resolve: (value: number) => void, reject: (error: Error) => void }>} */
    this.pending = new Map();
    this.cancelPtr = 0;
    this.closing = false;
    /** @type {string | null} why the leader is gone: every later call fails at once (never hangs) */
    this.dead = null;
    leader.onMessage((m) => {
      if (m.type !== 'result' || m.seq === undefined) return;
      const p = this.pending.get(m.seq);
      this.pending.delete(m.seq);
      if (p === undefined) return; // no call of this runtime's has that number
      if (m.error !== undefined) p.reject(new HostError(`leader: ${m.error}`, TR_WORKER_FAILURE));
      else p.resolve(/** @type {number} */ (m.value));
    });
    leader.onDeath((why) => {
      if (!this.closing) this.failAll(`leader died (${why})`);
    });
    workers.forEach((w, id) => {
      w.onMessage((m) => {
        if (m.type === 'failed') this.failures.push(`worker ${id}: ${m.error}`);
      });
      w.onDeath((why) => {
        if (!this.closing) this.failures.push(`worker ${id}: ${why}`);
      });
    });
  }

  /**
   * Opens the pool of this runtime's workers (in their wasm loop since their ack).
   * @param {number} livenessMs
   * @param {number | null} leaderSpin
   */
  async startPool(livenessMs, leaderSpin) {
    const code = await this.call('tr_pool_start', this.workers, livenessMs, leaderSpin ?? 0);
    if (code !== 0) throw new HostError(`tr_pool_start(${this.workers}) returned ${code}`, code);
    this.cancelPtr = await this.call('tr_cancel_epoch_ptr');
  }

  /** @param {string} why */
  failAll(why) {
    this.dead = why;
    for (const p of this.pending.values()) p.reject(new HostError(why, TR_WORKER_FAILURE));
    this.pending.clear();
  }

  /**
   * @param {string} name
   * @param {...WasmArg} args
   * @returns {Promise<number>} every tr_* export returns an i32 (or nothing)
   */
  call(name, ...args) {
    const seq = ++this.seq;
    return new Promise((resolve, reject) => {
      if (this.dead !== null) return reject(new HostError(this.dead, TR_WORKER_FAILURE));
      this.pending.set(seq, { resolve, reject });
      this.leader.post({ type: 'call', seq, name, args });
    });
  }

  /**
   * @param {number} ptr
   * @param {number} len
   */
  bytes(ptr, len) {
    return new Uint8Array(this.memory.buffer, ptr, len);
  }

  /** Bump the cancellation epoch; the in-flight operation stops at its next check. */
  cancel() {
    if (this.cancelPtr) Atomics.add(new Int32Array(this.memory.buffer), this.cancelPtr >>> 2, 1);
  }

  /**
   * Worker `id` dies now (fault injection: a killed worker must never hang the leader).
   * @param {number} id
   */
  kill(id) {
    return this.workerPorts[id].terminate();
  }

  /** The leader dies now (fault injection: calls in flight and every later one must fail). */
  killLeader() {
    return this.leader.terminate();
  }

  /** Failures reported by workers so far (a trap or an unexpected exit), oldest first. */
  workerFailures() {
    return [...this.failures];
  }

  async close() {
    this.closing = true;
    try {
      await this.call('tr_pool_shutdown');
    } catch {
      // a failed pool has nothing left to stop
    }
    await Promise.all([this.leader, ...this.workerPorts].map((p) => p.terminate()));
  }
}

const WORKER_URL = new URL('./worker.js', import.meta.url);

/**
 * The pages of the shared memory a host creates for a module importing `mem` to hold
 * `planBytes` (a memory plan's peak): the plan page-rounded, never below the module's declared
 * minimum (what it needs without a model: static data, worker stacks, the self-test), and a
 * HostError above its declared maximum.
 * @param {MemoryImport} mem
 * @param {number | null} planBytes null: no model, the minimum
 */
export function sharedMemoryPages(mem, planBytes) {
  if (!mem.shared || mem.maximum === null) throw new HostError(`imported memory must be shared with a declared maximum (got ${JSON.stringify(mem)})`);
  const pages = Math.max(mem.initial, Math.ceil((planBytes ?? 0) / PAGE));
  if (pages > mem.maximum) throw new HostError(`a memory plan of ${planBytes} bytes needs ${pages} pages, over the ${mem.maximum} the module declares`);
  return pages;
}

/**
 * A shared memory of exactly `pages` pages: initial == maximum, so it never grows (the
 * engine reserves it whole, and nothing can ask for more).
 * @param {number} pages
 */
export function fixedSharedMemory(pages) {
  return new WebAssembly.Memory({ initial: pages, maximum: pages, shared: true });
}

/**
 * A planner: the module instantiated on this thread over a fresh shared memory of its declared
 * minimum, used only to ask what needs no model loaded (tr_model_prefix_bytes, tr_plan_header)
 * before the lane's own memory exists, then dropped. The same bytes (hashed by the caller) and
 * the same compiled code (`module`, when the caller compiled it), so the plan is this lane's
 * own; no worker starts and nothing blocks (a plan takes no lock but the allocator's, never
 * contended). A module that owns its memory is simply instantiated.
 * @param {Uint8Array | ArrayBuffer} bytes
 * @param {WebAssembly.Module | null} [module] `bytes` compiled
 * @returns {Promise<LocalRuntime>}
 */
export async function planner(bytes, module = null) {
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  // BufferSource: module bytes never view shared memory
  const compiled = module ?? (await WebAssembly.compile(/** @type {BufferSource} */ (u8)));
  const mem = memoryImport(u8);
  if (mem === null) return new LocalRuntime(await WebAssembly.instantiate(compiled, {}), '');
  const memory = fixedSharedMemory(sharedMemoryPages(mem, null));
  const instance = await WebAssembly.instantiate(compiled, { [mem.module]: { [mem.name]: memory } });
  return new LocalRuntime(instance, '', memory);
}

/**
 * Instantiate a lane from its module bytes.
 *   sha256       expected hex SHA-256 of `bytes` (e.g. from the signed manifest); refused if different
 *   workers      threads lane only: number of worker instances (>= 1)
 *   livenessMs   threads lane only: a worker silent for this long fails the pool
 *   leaderSpin   threads lane only: polls before the leader blocks on a barrier (default: the
 *                module's short budget; a large one only pays on a machine with a free core
 *                for the leader besides one per worker)
 *   startupMs    bound on each worker's start and hash acknowledgement
 *   memory       threads lane only: the shared memory to import, already created by the caller
 *                (fixedSharedMemory: initial == maximum, within the import's declared limits)
 *   planBytes    threads lane only, without `memory`: the memory plan's peak the shared memory
 *                is created for (sharedMemoryPages; null: the module's declared minimum, enough
 *                for its self-test but no model)
 * @param {{ bytes: Uint8Array | ArrayBuffer, sha256?: string | null, workers?: number, livenessMs?: number, leaderSpin?: number | null, startupMs?: number, workerUrl?: URL | string, memory?: WebAssembly.Memory | null, planBytes?: number | null }} options
 * @returns {Promise<Runtime>}
 */
export async function instantiate({ bytes, sha256: expected = null, workers = 1, livenessMs = 5000, leaderSpin = null, startupMs = 30000, workerUrl = WORKER_URL, memory: given = null, planBytes = null }) {
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  const sha256 = await sha256Hex(u8);
  if (expected !== null && expected !== sha256) {
    throw new HostError(`module SHA-256 ${sha256} is not the expected ${expected}`);
  }
  const mem = memoryImport(u8);
  if (mem === null) {
    // BufferSource: as in sha256Hex, module bytes never view shared memory
    const { instance } = await WebAssembly.instantiate(/** @type {BufferSource} */ (u8), {});
    return new LocalRuntime(instance, sha256);
  }
  const pages = sharedMemoryPages(mem, planBytes); // shared, with a declared maximum
  if (!(workers >= 1)) throw new HostError('the threads lane needs at least one worker');
  if (!isNode && globalThis.crossOriginIsolated !== true) {
    // SharedArrayBuffer and wasm threads are only available to cross-origin isolated pages
    throw new HostError('the threads lane needs a cross-origin isolated context (COOP + COEP)');
  }
  const memory = given ?? fixedSharedMemory(pages);
  const size = memory.buffer.byteLength;
  if (size < mem.initial * PAGE || size > /** @type {number} */ (mem.maximum) * PAGE) {
    throw new HostError(`shared memory is ${size} bytes, outside the ${mem.initial}..${mem.maximum} pages the module imports`);
  }
  const init = { bytes: u8, memory, sha256, memoryModule: mem.module, memoryName: mem.name };

  const started = [];
  try {
    // The leader instantiates first: its start function initialises the data
    // segments of the shared memory exactly once.
    const leader = await spawnWorker(workerUrl);
    started.push(leader);
    const ready = nextMessage(leader, (m) => m.type === 'ready' || m.type === 'refused', 'leader start', startupMs);
    leader.post({ ...init, role: 'leader' });
    const lr = await ready;
    if (lr.type === 'refused' || lr.sha256 !== sha256) throw new HostError(`leader refused the module: ${lr.error || lr.sha256}`);

    const ports = [];
    const acks = [];
    for (let id = 0; id < workers; id++) {
      const w = await spawnWorker(workerUrl);
      started.push(w);
      acks.push(nextMessage(w, (m) => m.type === 'ack' || m.type === 'refused', `worker ${id} start`, startupMs));
      w.post({ ...init, role: 'worker', id });
      ports.push(w);
    }
    // every worker proves it holds the bytes the host hashed before the pool opens
    for (const [id, ack] of (await Promise.all(acks)).entries()) {
      if (ack.type === 'refused' || ack.sha256 !== sha256) throw new HostError(`worker ${id} refused the module: ${ack.error || ack.sha256}`, TR_WORKER_FAILURE);
    }
    const rt = new ThreadedRuntime(memory, sha256, leader, ports);
    await rt.startPool(livenessMs, leaderSpin);
    return rt;
  } catch (e) {
    await Promise.all(started.map((p) => p.terminate()));
    throw e;
  }
}
