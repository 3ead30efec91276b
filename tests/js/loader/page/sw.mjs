// The service-worker page: runs the cases once the page is cross-origin isolated (after the
// worker's reload), or after WAIT_MS without it (then the results say so).
const WAIT_MS = 15000;

if (globalThis.crossOriginIsolated === true) {
  await import('./run.mjs');
} else {
  setTimeout(() => import('./run.mjs'), WAIT_MS);
}
