#!/usr/bin/env node
// Runs the compiled build (dist/, made by `npm ci`'s prepare step or `npm run build`) when it is
// at least as new as every source, else the TypeScript sources through tsx's loader, so a stale
// build never runs. SWITCHYARD_FROM_SOURCE=1 forces the sources (the test runner sets it), =0 the
// build (benchmarks of the build).
// See docs/deployment.md.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

// Every signal the gateway handles is caught from here, its first line: until src/cli.ts hands one
// over to the listener that acts on it (once the gateway can: a SIGHUP reloads after start), it is
// queued, so it never takes its default action (exit; the inspector for SIGUSR1). docs/deployment.md#signals
const HANDLED = ['SIGHUP', 'SIGUSR1', 'SIGTERM', 'SIGINT'];
const arrived = [];
const queue = (signal) => arrived.push(signal);
for (const signal of HANDLED) process.on(signal, queue);
const earlySignals = {
  /** Stops queueing `signals`; returns those of them that arrived meanwhile, in order. */
  take(signals) {
    for (const signal of signals) process.off(signal, queue);
    const taken = arrived.filter((s) => signals.includes(s));
    const kept = arrived.filter((s) => !signals.includes(s));
    arrived.splice(0, arrived.length, ...kept);
    return taken;
  },
};

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
const code = await main(process.argv.slice(2), earlySignals);
// Let buffered log lines reach stdout before exiting.
setImmediate(() => process.exit(code));
