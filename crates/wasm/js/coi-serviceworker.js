// TinyRustLM cross-origin isolation for static hosts (the coi-serviceworker pattern).
//
// A host that cannot send Cross-Origin-Opener-Policy / Cross-Origin-Embedder-Policy (GitHub
// Pages and the like) never gets a cross-origin isolated page, so never the threads lane. Copy
// this file next to the page (a service worker controls only its own folder and below) and
// load it first, as a classic script from the same origin:
//
//   <script src="coi-serviceworker.js"></script>
//
// In the page it registers itself as the service worker (also on a page the host already
// isolates: the worker keeps its files for offline use) and reloads once when the page is not
// yet isolated nor controlled; as the service worker it adds COOP `same-origin`, COEP `require-corp` and
// CORP `same-origin` to every same-origin response (cross-origin ones pass through unchanged),
// and keeps small same-origin files so the page loads offline (network first, then the copy).
// No blob:, no eval: it works under `script-src 'self'; worker-src 'self'`.

const HEADERS = Object.freeze({
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
  'Cross-Origin-Resource-Policy': 'same-origin',
});

const OFFLINE_CACHE = 'tinyrustlm-offline-v1';
const OFFLINE_MAX_BYTES = 4 << 20;

/**
 * The same response with the isolation headers (a same-origin, non-opaque one only).
 * @param {Response} response
 */
function isolatedResponse(response) {
  if (response.status === 0 || response.type === 'opaque' || response.type === 'opaqueredirect') return response;
  const headers = new Headers(response.headers);
  for (const [name, value] of Object.entries(HEADERS)) headers.set(name, value);
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}

/**
 * Offline use: a same-origin GET goes to the network, and a small successful answer (the page,
 * its scripts, the signed manifest; not the model, which the loader's own content-addressed
 * store keeps) is kept; when the network fails, the kept copy answers. The loader verifies
 * whatever it gets, so a kept copy is never trusted more than a fetched one.
 * @param {Request} request
 */
async function networkFirst(request) {
  if (request.method !== 'GET') return fetch(request);
  const cache = await caches.open(OFFLINE_CACHE);
  try {
    const response = await fetch(request);
    const length = Number(response.headers.get('content-length'));
    if (response.ok && response.type === 'basic' && length > 0 && length <= OFFLINE_MAX_BYTES) {
      await cache.put(request, response.clone()).catch(() => {}); // full storage: no copy
    }
    return response;
  } catch (error) {
    const kept = await cache.match(request, { ignoreSearch: request.mode === 'navigate' });
    if (kept) return kept;
    throw error;
  }
}

if (typeof window === 'undefined') {
  // ---- the service worker ----
  // any: the lint's lib is the page's ("dom"); the service worker scope ("webworker") cannot be
  // loaded beside it, so skipWaiting, clients and the events below have no declared types
  const sw = /** @type {any} */ (globalThis);
  sw.addEventListener('install', () => sw.skipWaiting());
  sw.addEventListener('activate', (/** @type {{ waitUntil(p: Promise<unknown>): void }} */ event) => event.waitUntil(sw.clients.claim()));
  sw.addEventListener('fetch', (/** @type {{ request: Request, respondWith(r: Promise<Response>): void }} */ event) => {
    const request = event.request;
    if (new URL(request.url).origin !== sw.location.origin) return; // the browser handles it
    if (request.cache === 'only-if-cached' && request.mode !== 'same-origin') return;
    event.respondWith(networkFirst(request).then(isolatedResponse));
  });
} else {
  // ---- the page: register, then (not yet isolated) reload once so the worker serves it ----
  (() => {
    const KEY = 'tinyrustlm.coi-reloaded';
    // A page the host already isolates (server-sent COOP/COEP) still registers the worker: it
    // is also what keeps the page's files for offline use. It only needs no reload.
    const isolated = window.crossOriginIsolated;
    if (isolated) window.sessionStorage.removeItem(KEY);
    if (!window.isSecureContext || !navigator.serviceWorker) return; // no worker here
    const script = /** @type {HTMLScriptElement | null} */ (document.currentScript);
    if (!script) return;
    navigator.serviceWorker.register(script.src).then(
      (registration) => {
        if (isolated) return;
        const reloadOnce = () => {
          if (window.sessionStorage.getItem(KEY)) return; // never a reload loop
          window.sessionStorage.setItem(KEY, '1');
          window.location.reload();
        };
        if (registration.active && !navigator.serviceWorker.controller) reloadOnce();
        navigator.serviceWorker.addEventListener('controllerchange', reloadOnce);
      },
      (error) => console.warn(`coi-serviceworker: registration failed (${error})`),
    );
  })();
}
