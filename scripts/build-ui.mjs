#!/usr/bin/env node
// Builds the web editor into ui/dist when it is missing or older than its sources.
// `npm start` runs this first (prestart), so a fresh clone serves the editor after `npm ci`;
// the UI tests run it too. `--force` rebuilds regardless.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const ui = join(import.meta.dirname, '..', 'ui');
const index = join(ui, 'dist', 'index.html');

/** The newest modification time under `path` (a file or a folder). */
function newest(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(stat.mtimeMs, ...readdirSync(path).map((name) => newest(join(path, name))));
}

const sources = ['src', 'index.html', 'vite.config.ts', 'tsconfig.json']
  .map((name) => join(ui, name))
  .filter((path) => existsSync(path));
const stale =
  process.argv.includes('--force') ||
  !existsSync(index) ||
  statSync(index).mtimeMs < Math.max(...sources.map(newest));

if (stale) {
  let vite;
  try {
    vite = await import('vite');
  } catch {
    // Installed without devDependencies: the admin listener serves its placeholder page instead.
    console.warn('switchyard: vite is not installed, so the web editor was not built (ui/dist)');
    process.exit(0);
  }
  const started = Date.now();
  await vite.build({ configFile: join(ui, 'vite.config.ts'), logLevel: 'warn' });
  console.log(`switchyard: built the web editor into ui/dist in ${Date.now() - started} ms`);
}
