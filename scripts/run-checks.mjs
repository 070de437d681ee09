#!/usr/bin/env node
// The static checks of `npm test` — tsc for the gateway, tsc for the editor, ESLint, Prettier and
// the layering check (docs/architecture.md) —
// run at the same time instead of one after another: each is single-threaded, so on a machine
// with two or more cores the four take about as long as the longest of them (or their CPU total
// divided by the cores) rather than their sum. Each tool's output is printed as a block when it
// ends, with its wall time; the exit status is non-zero when any of them failed.
// CHECK_CONCURRENCY caps how many run at once (default: all of them).
//   node scripts/run-checks.mjs            # what `npm run check` and `npm test` run
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The script behind a package's command in node_modules (what npx would run), run with this node. */
const bin = (pkg, name = pkg) => {
  const dir = join(import.meta.dirname, '..', 'node_modules', pkg);
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  return join(dir, typeof manifest.bin === 'string' ? manifest.bin : manifest.bin[name]);
};

// Longest first, so a cap on concurrency never leaves the slowest one for last.
const CHECKS = [
  { name: 'eslint .', argv: [bin('eslint'), '.'] },
  { name: 'tsc -p tsconfig.json', argv: [bin('typescript', 'tsc'), '-p', 'tsconfig.json', '--noEmit'] },
  { name: 'tsc -p ui/tsconfig.json', argv: [bin('typescript', 'tsc'), '-p', 'ui/tsconfig.json', '--noEmit'] },
  { name: 'prettier --check .', argv: [bin('prettier'), '--check', '.'] },
  { name: 'check-layers', argv: [join(import.meta.dirname, 'check-layers.mjs')] },
];

function run({ name, argv }) {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('close', (code, signal) => {
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      const ok = code === 0;
      process.stdout.write(`${ok ? 'ok  ' : 'FAIL'} ${name} (${seconds} s)\n`);
      if (!ok || output.trim() !== '') process.stdout.write(output.replace(/^/gm, '  ').trimEnd() + '\n');
      if (signal !== null) process.stdout.write(`  (killed by ${signal})\n`);
      resolve(ok);
    });
  });
}

const limit = Math.max(1, Number(process.env.CHECK_CONCURRENCY ?? CHECKS.length));
const queue = [...CHECKS];
const results = [];
const started = Date.now();
await Promise.all(
  Array.from({ length: Math.min(limit, queue.length) }, async () => {
    for (let check = queue.shift(); check !== undefined; check = queue.shift())
      results.push(await run(check));
  }),
);
const failed = results.filter((ok) => !ok).length;
process.stdout.write(
  `${failed === 0 ? 'all checks passed' : `${failed} check(s) failed`} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
);
process.exit(failed === 0 ? 0 : 1);
