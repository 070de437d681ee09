#!/usr/bin/env node
// Regenerates the screenshots of docs/editor.md (docs/editor/*.png) from the real editor:
//   node scripts/screenshots.mjs
// It builds ui/dist when stale, then runs test/ui/screenshots.ts (a throwaway gateway, headless Chromium).
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const run = (args, env = {}) => {
  const result = spawnSync(process.execPath, args, {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, ...env },
  });
  if (result.status !== 0) process.exit(result.status ?? 1);
};
run([join('scripts', 'build-ui.mjs')]);
run(['--import', 'tsx', join('test', 'ui', 'screenshots.ts')], { SWITCHYARD_FROM_SOURCE: '1' });
