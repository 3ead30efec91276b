// Chromium side of tests/js/loader: run /cases.json with the shared runner, POST the results.
import { runCases } from './runner.mjs';

async function main() {
  const cases = await (await fetch('./cases.json')).json();
  let evalBlocked = false;
  try {
    new Function('return 1')(); // a control: under the strict CSP page this must throw
  } catch {
    evalBlocked = true;
  }
  return { cross_origin_isolated: globalThis.crossOriginIsolated === true, eval_blocked: evalBlocked, results: await runCases(cases) };
}

main().then(
  (result) => fetch('/result', { method: 'POST', body: JSON.stringify(result) }),
  (e) => fetch('/result', { method: 'POST', body: JSON.stringify({ error: String(e.stack || e) }) }),
);
