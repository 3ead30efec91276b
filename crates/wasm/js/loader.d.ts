// Types of the TinyRustLM loader's public API (the npm package's `types`; loader.js is the code).
// Checked two ways: every .js of the package is type-checked (`tsc --checkJs`) against these
// declarations where it names them, and a strict TypeScript consumer compiles against the packed
// tarball (tests/js/loader/test_package.py).

/** Every `LoaderError.code` (README, "The loader"). */
export type LoaderErrorCode =
  | 'BadOptions'
  | 'FetchFailed'
  | 'BoundExceeded'
  | 'TrustedKeysInvalid'
  | 'CryptoUnsupported'
  | 'HashSelfCheck'
  | 'MalformedSignature'
  | 'WrongPayloadType'
  | 'UntrustedKey'
  | 'KeyHintMismatch'
  | 'KeyExpired'
  | 'KeyNotYetValid'
  | 'KeyRevoked'
  | 'KeyNotAllowed'
  | 'DevelopmentKey'
  | 'DuplicateSignature'
  | 'SignatureThreshold'
  | 'SignatureInvalid'
  | 'PayloadMismatch'
  | 'BadManifest'
  | 'UnsupportedAbi'
  | 'KeyClassMismatch'
  | 'ManifestExpired'
  | 'Rollback'
  | 'ProbeTampered'
  | 'HashMismatch'
  | 'ModuleHashMismatch'
  | 'ModuleContract'
  | 'NoLaneLeft'
  | 'ModelTooLarge'
  | 'ModelInvalid'
  | 'UnsupportedModelTier'
  | 'MemoryBudget'
  | 'MemoryGrew'
  | 'RuntimeError'
  | 'WorkerFailure'
  | 'Closed'
  | 'CacheQuota'
  | 'CacheFailed'
  // recorded in a receipt's attempts (a lane skipped or failed, the next one tried)
  | 'LaneDisabled'
  | 'LaneDenied'
  | 'RelaxedSimdOff'
  | 'FeatureMissing'
  | 'NotIsolated'
  | 'LaneFailed'
  | 'CompileFailed'
  | 'InstantiateFailed'
  | 'ThreadsPrecondition'
  | 'SelfTestFailed'
  | 'SelfTestTimeout'
  | 'PathNotExecuted';

export class LoaderError extends Error {
  constructor(code: LoaderErrorCode, message: string, detail?: Record<string, any>);
  readonly name: 'LoaderError';
  readonly code: LoaderErrorCode;
  /** The evidence: url, limit, sha256, attempts, ... by code. */
  readonly detail: Record<string, any>;
}

/** A host-side failure (host.js); `code` is the runtime's TrResult when it gave one. */
export class HostError extends Error {
  constructor(message: string, code?: number);
  readonly code: number;
}

/** One trusted key (v1: no `not_before`). Dates are RFC 3339 with a zone, e.g. `2031-01-01T00:00:00Z`. */
export interface TrustedKeyEntry {
  keyid: string;
  public_key_pem: string;
  role: 'release' | 'development';
  /** The key counts until the second before this instant. */
  not_after: string;
  /** v2 only: the key counts from this instant on (inclusive). */
  not_before?: string | null;
}

/** A `tinyrustlm.trusted-keys.v1` document (as written by `tinyrustlm-release keygen`): threshold 1 of its keys. */
export interface TrustedKeysV1 {
  schema?: 'tinyrustlm.trusted-keys.v1';
  keys: TrustedKeyEntry[];
  signers?: 'one-key' | 'any-trusted-key';
}

/** Which keys may sign a document, and how many distinct ones must. */
export interface SigningRule {
  keyids: string[];
  threshold: number;
}

/**
 * A `tinyrustlm.trusted-keys.v2` trust policy (as written by `tinyrustlm-release trust-policy`):
 * the loader enforces `policy.manifest` (the provenance rule is checked, not used), the keys'
 * windows and `revoked`; a policy with `keyless` is refused (`TrustedKeysInvalid`).
 */
export interface TrustedKeysV2 {
  schema: 'tinyrustlm.trusted-keys.v2';
  keys: TrustedKeyEntry[];
  policy: { manifest: SigningRule; provenance: SigningRule };
  revoked?: Array<{ keyid: string; reason: string }>;
  keyless?: { identity: string; issuer: string; instance?: 'production' | 'staging' } | null;
}

export type TrustedKeys = TrustedKeysV1 | TrustedKeysV2;

/** Which download a progress event is about. */
export type ProgressPhase = 'manifest' | 'signature' | 'probes' | 'module' | 'model';

/** One progress event: per (phase, url), `loaded` never decreases and the last one equals `total`. */
export interface Progress {
  phase: ProgressPhase;
  loaded: number;
  total: number;
  url?: string;
}

/** The model: a URL with its declared size (the download's bound), or its bytes. */
export type ModelSource =
  | { url: string | URL; size: number; sha256: string; bytes?: undefined }
  | { bytes: Uint8Array | ArrayBuffer; sha256: string; url?: undefined; size?: number };

/** Sampler configuration of the session (abi.js `writeSessionConfig`). */
export interface SessionConfig {
  seed?: bigint | number;
  stream?: bigint | number;
  temperature?: number;
  topK?: number;
  topP?: number;
  repetitionPenalty?: number;
}

export interface LoadOptions {
  /** The trusted keys: a `tinyrustlm.trusted-keys.v1` object or a v2 trust policy (threshold co-signing). */
  trustedKeys: TrustedKeys;
  model: ModelSource;
  /** The bundle root (URL; in node also a path or file: URL, read from disk). Default: the folder above js/. */
  baseUrl?: string | URL;
  /** Resolves relative URLs (default: the page's location). */
  pageUrl?: string | URL;
  /** Count signatures by development keys (a local trial build). */
  allowDevKey?: boolean;
  /** Refuse (`Rollback`) a release older than this release version (MAJOR.MINOR.PATCH, optionally aN, bN or rcN). */
  minVersion?: string | null;
  /** Accept a release older than minVersion or the newest accepted before. */
  allowDowngrade?: boolean;
  /** Node: the JSON file remembering the newest accepted version per trust root. */
  versionFile?: string | null;
  /** Browser: remember the newest accepted version in IndexedDB (else localStorage; default true). */
  rememberVersion?: boolean;
  /** The content-addressed cache (Cache API; node: `cacheDir`). Default 'auto'. */
  cache?: 'auto' | 'none';
  /** Node: the folder of the content-addressed cache (no cache without it). */
  cacheDir?: string | null;
  onProgress?: ((progress: Progress) => void) | null;
  /** A cache write that failed (`CacheQuota`, `CacheFailed`); the load goes on from the network. */
  onCacheError?: ((error: LoaderError) => void) | null;
  /** Wasm lane ids never to select. */
  denyLanes?: string[];
  /** 'off': never select a lane that needs relaxed SIMD (skipped as `RelaxedSimdOff`), nor run the semantic probe; default 'auto'. */
  relaxedSimd?: 'auto' | 'off';
  /** Try lanes that failed while running in this page (a worker died: `WorkerFailure`) again; by default the next load skips them (`LaneFailed`). */
  retryFailedLanes?: boolean;
  /** Threads lane: worker count, 1..8 (default 2). */
  workers?: number;
  /** Bytes the runtime may use (default: 1 GiB; at most 4 GiB). The threads lane's shared memory is created at the model's plan within it. */
  memoryBudget?: number | null;
  /** Context length in tokens (0 = the model's maximum). */
  context?: number;
  session?: SessionConfig;
  /** Tokens per prefill call (default 16; threads lane 1). */
  prefillChunk?: number;
  startupMs?: number;
  livenessMs?: number;
  selfTestMs?: number;
  /** Threads lane: the worker entry (default: js/worker.js). */
  workerUrl?: string | URL;
  /** The fetch used for every download (default: the platform's); every download passes `{ signal }` (aborted when the loader stops reading: a bound, a refusal) and the model download `{ headers: { Range } }` when it resumes a body that broke off (a fetch that ignores it answers from byte 0, which is skipped). */
  fetch?: (url: URL, init?: { headers?: Record<string, string>; signal?: AbortSignal }) => Promise<Response>;
  /** The clock (epoch seconds) for expiry and key-window checks. */
  now?: number;
}

/**
 * The options once `load()` has filled in the defaults (loader.js `normalise`): what each step
 * reads; a step takes the part it uses.
 */
export interface ResolvedOptions {
  trustedKeys: TrustedKeys;
  model: ModelSource;
  baseUrl: URL;
  pageUrl: string | URL;
  allowDevKey: boolean;
  allowDowngrade: boolean;
  minVersion: string | null;
  versionFile: string | null;
  rememberVersion: boolean;
  cache: 'auto' | 'none';
  cacheDir: string | null;
  onProgress: ((progress: Progress) => void) | null;
  onCacheError: ((error: LoaderError) => void) | null;
  denyLanes: string[];
  relaxedSimd: 'auto' | 'off';
  retryFailedLanes: boolean;
  workers: number;
  memoryBudget: number | null;
  context: number;
  session: SessionConfig;
  prefillChunk?: number;
  startupMs: number;
  livenessMs: number;
  selfTestMs: number;
  workerUrl: URL | undefined;
  fetch: (url: URL, init?: { headers?: Record<string, string>; signal?: AbortSignal }) => Promise<Response>;
  now: number;
}

export type TestOutcome = 'pass' | 'fail' | 'not-run';

export interface LaneAttempt {
  artifact_id: string;
  outcome: 'selected' | 'failed' | 'skipped';
  step: string;
  error_code?: LoaderErrorCode | null;
  detail: string;
}

/** Where a file came from (receipt `fetched`). */
export interface FetchRecord {
  what: string;
  url: string;
  sha256: string;
  size: number;
  cache: 'off' | 'miss' | 'stored' | 'hit' | 'poisoned' | 'quota-exceeded' | 'write-failed';
}

/** `tinyrustlm.capability-receipt.v2` (manifests/schemas/tinyrustlm.capability-receipt.v2.json). */
export interface Receipt {
  schema: 'tinyrustlm.capability-receipt.v2';
  created_utc: string;
  runtime_semantics: number;
  abi_version: number;
  host_reported: { browser_brand: string; browser_version: string; os_family: string; architecture: string };
  module: { artifact_id: string; sha256: string; build_manifest_sha256: string; rustc: string; llvm: string; compile_features: string[] };
  observed: {
    cross_origin_isolated: boolean;
    feature_probes: Record<string, { validates: boolean; probe_sha256: string }>;
    workers_requested: number;
    workers_started: number;
    memory_mode: string;
    memory_bytes: number;
  };
  selection: { numerical_mode: string; kernel_set: string; quant_layouts: string[]; kv_format: string };
  self_test: {
    vector_set_sha256: string;
    scalar: TestOutcome;
    simd128: TestOutcome;
    atomics: TestOutcome;
    thread_participation: TestOutcome;
    tokenizer: TestOutcome;
    prng: TestOutcome;
    failed_test?: string;
  };
  executed_path_evidence: { scalar_kernel_calls: number; simd_kernel_calls: number; worker_ids_participating: number[] };
  attempts: LaneAttempt[];
  fetched: FetchRecord[];
  /** Relaxed SIMD: what the module admits (signed manifest), what its lane ran, what the engine chose. */
  relaxed_simd: {
    admitted: string[];
    /** instruction -> the relaxed lane's SIMD kernel calls (tr_path_counters). */
    executed: Record<string, number>;
    observed_semantics: RelaxedSemantics[];
  };
}

/** A semantic probe's finding: the allowed semantics of `instruction` whose result this engine gave. */
export interface RelaxedSemantics {
  instruction: string;
  probe_id: string;
  probe_version: number;
  probe_sha256: string;
  /** '<second operand: signed | unsigned | both unsigned>/<pair sum: wrap16 | saturate16 | exact32>', or 'unrecognized'. */
  semantics: string;
  /** The i32x4 lanes the engine gave. */
  result: number[];
}

/** A part of the memory plan (crates/core/src/memory.rs PART_NAMES). */
export type PlanPart =
  | 'weights' | 'metadata' | 'tokenizer' | 'kv' | 'activations' | 'logits' | 'decode_scratch'
  | 'stacks_tls' | 'transfer' | 'load_copy' | 'allocator';

/** The admission's memory plan (bytes), itemized, per lane and worker count. */
export interface Plan {
  peakPrefill: number;
  steadyDecode: number;
  /** While the model loads (with `load_copy` when the runtime copies it in). */
  peakLoad: number;
  /** The highest of the three peaks: what is compared with the budget. */
  peak: number;
  parts: Record<PlanPart, number>;
  largest: PlanPart;
  /** 0 on an unthreaded lane. */
  workers: number;
  /** min(memoryBudget or the default, 4 GiB for wasm32). */
  budget: number;
}

/**
 * One phase's memory beside the plan (CONTRACT.md §5): the allocator's high-water mark over the
 * static base, and the Wasm memory's size.
 */
export interface MemoryMeasured {
  /** The allocator's high-water mark in the phase (bytes live at its peak, as requested). */
  heapPeak: number;
  /** `__heap_base`: the module's data and stacks (the threads lane's worker regions too). */
  staticBase: number;
  /** staticBase + heapPeak: what the plan's peak of the phase is compared with. */
  highWater: number;
  /** The Wasm memory's size at the phase's end (unthreaded it only grows; threads: fixed). */
  memoryBytes: number;
}

export interface Token {
  token: number;
  text: string;
  done: boolean;
}

export interface PathCounters {
  scalar: number;
  simd: number;
  workers: number;
  participating: number[];
  /** Of the SIMD kernel calls, those of kernels that execute a relaxed instruction (0 on other lanes). */
  relaxed: number;
}

/** What a session's K/V is computed under (CONTRACT.md §11): any field that differs recomputes from scratch. */
export interface CacheIdentity {
  model_sha256: string;
  /** SHA-256 of the bytes that define byte tokenizer v1 (it has no file). */
  tokenizer_sha256: string;
  normalization_version: number;
  /** Null today: prompts are raw text (the field exists). */
  chat_template_sha256: string | null;
  numerical_mode: string;
  kv_layout_version: number;
  /** The lane's artifact id. */
  lane: string;
}

/** A turn's reuse: tokens kept from the cache, tokens prefilled, and why nothing was kept. */
export interface TurnResult {
  reused: number;
  recomputed: number;
  /** The identity field that differed ('unknown': a cancelled or failed call left the cache unknown), or null. */
  refused: string | null;
  committed: number;
  cancelled: boolean;
}

/** A runtime with one model and one session; linear memory fixed since activation. */
export class Loaded {
  private constructor();
  readonly receipt: Receipt;
  readonly plan: Plan;
  /** What loading the model in place measured, from admission to adoption (beside `plan.peakLoad`). */
  readonly loadMemory: MemoryMeasured;
  /** The kernel set that runs ('scalar-v1', 'simd128-v1', 'simd128-threads-v1'). */
  readonly lane: string;
  readonly threads: boolean;
  readonly context: number;
  readonly memoryBytes: number;
  /** Internals for harnesses (the conformance page): the host.js runtime and the ABI handles. */
  readonly rt: any;
  readonly model: bigint;
  readonly session: bigint;
  /** The artifact id of the lane (set by load(); a `WorkerFailure` records it as failed for the next load). */
  artifactId: string | null;
  /** Throws `MemoryGrew` when linear memory changed since activation. */
  checkMemory(): void;
  prefill(prompt: string | number[], options?: { onProgress?: ((committed: number, total: number) => void) | null }): Promise<{ committed: number; cancelled: boolean }>;
  decode(options?: { maxTokens?: number }): AsyncGenerator<Token, void, void>;
  /** The identity of the K/V this session computes (set by load()). */
  identity: CacheIdentity | null;
  /** The committed tokens (whose K/V the session holds). */
  committedTokens(): number[];
  /** One turn with KV prefix reuse: the exact-prefix rule under an equal cache identity; then decode() equals a fresh session's. */
  turn(prompt: string | number[], options?: { onProgress?: ((committed: number, total: number) => void) | null }): Promise<TurnResult>;
  cancel(): void;
  /** The memory of the phase since the previous call (the first: since the model loaded), then a new phase begins; allocates nothing. */
  memorySince(): Promise<MemoryMeasured>;
  pathCounters(): Promise<PathCounters>;
  close(): Promise<void>;
}

/** Verify, probe, choose, start (with fallback), admit the model and activate a session. */
export function load(options: LoadOptions): Promise<Loaded>;

/**
 * The loader's counters (since the module loaded): module instantiations started, runtimes alive,
 * models loaded, bytes read from the content-addressed store, bytes of a model hashed (a cached
 * model is hashed once, in place), loads restarted from the network because the model's cached
 * copy was poisoned (at most one per load).
 */
export function loaderStats(): { instantiations: number; live: number; modelLoads: number; storeBytesRead: number; modelBytesHashed: number; cacheRestarts: number };

/** Lanes that failed while running in this page (artifact id -> the failure); the next load skips them. */
export function laneFailureRecord(): Record<string, { code: LoaderErrorCode; detail: string }>;
/** Forgets every recorded lane failure. */
export function forgetLaneFailures(): void;

/** -1, 0 or 1: the order of two major.minor.patch versions. */
export function compareVersions(a: string, b: string): -1 | 0 | 1;

/** DSSE v1 pre-authentication encoding. */
export function pae(payloadType: string, payload: Uint8Array): Uint8Array;

export const SUPPORTED: {
  readonly schema: string;
  readonly runtimeSemantics: readonly number[];
  readonly abiVersions: readonly number[];
  /** model format_version -> kernel tier ('f32', 'int8'); a model of any other is UnsupportedModelTier */
  readonly modelTiers: Readonly<Record<number, string>>;
};
export const MANIFEST_PAYLOAD_TYPE: string;
export const RECEIPT_SCHEMA: 'tinyrustlm.capability-receipt.v2';
export const DEFAULT_MEMORY_BUDGET: number;
/** Bounds (bytes) of manifest.json and manifest.sigstore.json. */
export const MANIFEST_CAP: number;
export const SIGNATURE_CAP: number;
/** The Cache API cache the loader stores fetched files in (keyed by SHA-256). */
export const CACHE_NAME: string;

// The steps, for harnesses that run them one by one (the conformance page).
export function verifySignedManifest(options: { baseUrl: URL; trustedKeys: TrustedKeys; allowDevKey?: boolean; now: number; fetch: (url: URL) => Promise<Response>; onProgress?: ((p: Progress) => void) | null }): Promise<{ manifest: any; bytes: Uint8Array; sha256: string; keyid: string; keyids: string[]; keyClass: 'release' | 'development' }>;
export function checkVersionFloor(options: { trustedKeys: TrustedKeys; minVersion?: string | null; allowDowngrade?: boolean; versionFile?: string | null; rememberVersion?: boolean }, manifest: { version: string }): Promise<{ floor: string | null; remembered: string | null }>;
export function trustRootId(trustedKeys: TrustedKeys): Promise<string>;
export function runProbes(probes?: readonly any[], onProgress?: ((p: Progress) => void) | null): Promise<Record<string, { version: number; sha256: string; validates: boolean }>>;
export function runSemanticProbes(probes: Record<string, { validates: boolean }>, semantic?: readonly any[]): Promise<RelaxedSemantics[]>;
export function chooseLanes(manifest: any, probes: Record<string, { validates: boolean }>, options?: { denyLanes?: string[]; relaxedSimd?: 'auto' | 'off'; isolation?: boolean; failed?: Record<string, { code: string; detail: string }> }): { candidates: any[]; attempts: LaneAttempt[] };
export function startLane(options: any, artifact: any, signed: any, store?: any, head?: any, modules?: Map<string, any> | null): Promise<any>;
export function selfTest(rt: any, timeoutMs: number): Promise<{ overall: number; categories: Record<string, TestOutcome>; failedTest: string | null; testIds: string[] }>;
export function threadsPreconditions(options: any, artifact: any, bytes: Uint8Array, sha256: string): Promise<any>;
export function buildReceipt(parts: any): Promise<Receipt>;
export function cacheIdentity(parts: { modelSha256: string; tier: string | null; lane: string }): Promise<CacheIdentity>;
export function identityMismatch(cached: CacheIdentity | null, current: CacheIdentity | null): string | null;
export function reusablePrefix(committed: readonly number[], prompt: readonly number[]): number;
export const IDENTITY_FIELDS: readonly (keyof CacheIdentity)[];
