// node drive.mjs CASES.json: runs the cases (runner.mjs) and prints one JSON array.
import { readFileSync } from 'node:fs';
import { runCases } from './runner.mjs';

const cases = JSON.parse(readFileSync(process.argv[2], 'utf-8'));
runCases(cases).then(
  (results) => {
    // exit only once written: a pipe takes 64 KiB at a time, and exit() drops the rest
    process.stdout.write(JSON.stringify(results), () => process.exit(0));
  },
  (e) => {
    process.stdout.write(JSON.stringify({ error: String(e.stack || e) }), () => process.exit(1));
  },
);
