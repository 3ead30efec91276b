// TinyRustLM loader: its typed errors and its counters (shared by every room of the loader).

/**
 * A refusal or failure; `code` is stable (README, "The loader"; types: loader.d.ts
 * `LoaderErrorCode`), `detail` names the evidence.
 */
export class LoaderError extends Error {
  /** @type {'LoaderError'} */
  name = 'LoaderError';

  /**
   * @param {import('./loader.js').LoaderErrorCode} code
   * @param {string} message
   * @param {Record<string, unknown>} [detail] the evidence, by code
   */
  constructor(code, message, detail = {}) {
    super(`${code}: ${message}`);
    this.code = code;
    this.detail = detail;
  }
}

/** A failure that makes the loader try the next lane (steps 4-6 after the integrity checks). */
export class LaneFailure extends Error {
  /**
   * @param {string} step
   * @param {import('./loader.js').LoaderErrorCode} code
   * @param {string} message
   */
  constructor(step, code, message) {
    super(message);
    this.step = step;
    this.code = code;
  }
}

/**
 * What `${e.message || e}` says of a caught value: anything can be thrown (an Error, a
 * DOMException, a string), and every refusal quotes the engine's own words.
 * @param {unknown} e
 */
export function messageOf(e) {
  const message = typeof e === 'object' && e !== null && 'message' in e ? e.message : undefined;
  return `${message || e}`;
}

// What this module has done so far (tests assert that a refusal instantiated nothing, and that a
// cached load reads its entries once and hashes the model once).
export const stats = { instantiations: 0, live: 0, modelLoads: 0, storeBytesRead: 0, modelBytesHashed: 0, cacheRestarts: 0 };

/**
 * A copy of the loader's counters: module instantiations started, runtimes alive, models loaded,
 * bytes read from the content-addressed store, bytes of a model hashed, loads restarted from the
 * network because the model's cached copy was poisoned.
 */
export function loaderStats() {
  return { ...stats };
}

/**
 * Lanes that failed while running in this page (or node process): artifact id -> what failed.
 * A worker that dies mid-run records its lane here, and the next `load()` skips it
 * (`LaneFailed`, unless `retryFailedLanes`), so it falls back to the next lane.
 * @type {Map<string, { code: import('./loader.js').LoaderErrorCode, detail: string }>}
 */
const laneFailures = new Map();

/**
 * @param {string} artifactId
 * @param {import('./loader.js').LoaderErrorCode} code
 * @param {string} detail
 */
export function recordLaneFailure(artifactId, code, detail) {
  if (!laneFailures.has(artifactId)) laneFailures.set(artifactId, { code, detail }); // the first failure is the cause
}

/** A copy of the lane failure record: { artifact id: { code, detail } }. */
export function laneFailureRecord() {
  return Object.fromEntries([...laneFailures].map(([id, f]) => [id, { ...f }]));
}

/** Forgets every recorded lane failure (the next load tries every lane again). */
export function forgetLaneFailures() {
  laneFailures.clear();
}
