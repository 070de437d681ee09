#!/usr/bin/env node
// Runs the compiled build (dist/, made by `npm ci`'s prepare step or `npm run build`) when it is
// at least as new as every source, else the TypeScript sources through tsx's loader, so a stale
// build never runs. SWITCHYARD_FROM_SOURCE=1 forces the sources (the test runner sets it), =0 the
// build (benchmarks of the build).
// See docs/deployment.md.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const src = join(root, 'src');

/** The newest mtime of `dir` and everything under it (a folder's moves when an entry is added or removed). */
function newest(dir) {
  let latest = statSync(dir).mtimeMs;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

function useBuild() {
  let builtAt;
  try {
    builtAt = JSON.parse(readFileSync(join(root, 'dist', 'build-info.json'), 'utf8')).builtAt;
  } catch {
    return false;
  }
  // An installed package ships dist/ without src/.
  if (!existsSync(src)) return true;
  if (process.env.SWITCHYARD_FROM_SOURCE === '1') return false;
  if (process.env.SWITCHYARD_FROM_SOURCE === '0') return true;
  return typeof builtAt === 'number' && newest(src) < builtAt;
}

let main;
if (useBuild()) {
  ({ main } = await import('../dist/cli.js'));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../src/cli.ts'));
}
const code = await main(process.argv.slice(2));
// Let buffered log lines reach stdout before exiting.
setImmediate(() => process.exit(code));
