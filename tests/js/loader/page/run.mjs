// Chromium side of tests/loader: run /cases.json with the shared runner, POST the results.
import { runCases } from './runner.mjs';

async function main() {
  const cases = await (await fetch('./cases.json')).json();
  return { cross_origin_isolated: globalThis.crossOriginIsolated === true, results: await runCases(cases) };
}

main().then(
  (result) => fetch('/result', { method: 'POST', body: JSON.stringify(result) }),
  (e) => fetch('/result', { method: 'POST', body: JSON.stringify({ error: String(e.stack || e) }) }),
);
