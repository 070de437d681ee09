import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { ensureBuilt, packedFiles, repoRoot } from './build.js';

let files: string[] = [];

before(() => {
  ensureBuilt();
  files = packedFiles();
});

test('npm pack: ships no test files, benchmarks or TypeScript sources', () => {
  const unwanted = files.filter(
    (f) =>
      f.startsWith('test/') ||
      f.startsWith('bench/') ||
      f.startsWith('src/') ||
      /\.test\.[cm]?[jt]s$/.test(f) ||
      f.startsWith('ui/src/'),
  );
  assert.deepEqual(unwanted, []);
});

test('npm pack: ships the compiled gateway with its plugin manifest and precompiled validators', () => {
  for (const path of [
    'bin/switchyard.js',
    'dist/cli.js',
    'dist/gateway.js',
    'dist/build-info.json',
    'dist/plugins/manifest.json',
    'dist/validators/index.json',
    'dist/lua/worker.js',
  ]) {
    assert.ok(files.includes(path), `${path} is in the package`);
  }
  assert.ok(!files.some((f) => f.startsWith('dist/') && f.endsWith('.ts')), 'no TypeScript under dist/');
});

test('npm pack: ships the built web editor, the shipped config, docs and examples', () => {
  assert.ok(files.includes('ui/dist/index.html'), 'ui/dist/index.html');
  assert.ok(
    files.some((f) => f.startsWith('ui/dist/') && f.endsWith('.js')),
    'the editor bundle',
  );
  for (const path of ['config/system.yaml', 'config/gateway.yaml', 'README.md', 'package.json']) {
    assert.ok(files.includes(path), path);
  }
  assert.ok(
    files.some((f) => f.startsWith('docs/plugins/')),
    'docs/plugins',
  );
  assert.ok(
    files.some((f) => f.startsWith('examples/')),
    'examples',
  );
  if (existsSync(join(repoRoot, 'LICENSE'))) assert.ok(files.includes('LICENSE'), 'LICENSE');
});

test('npm pack: ships the scripts that prepare and prestart run, and nothing else of scripts/', () => {
  assert.deepEqual(files.filter((f) => f.startsWith('scripts/')).sort(), [
    'scripts/build-ui.mjs',
    'scripts/build.mjs',
  ]);
});
