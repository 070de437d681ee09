import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../support/temp-dir.js';

/**
 * bin/switchyard.js runs dist/ only when the build is newer than every source, so neither a test
 * nor a user ever runs a stale build. A throwaway project holds the real bin script, a dist/cli.js
 * and a src/cli.ts that each say which one ran.
 */
const repo = fileURLToPath(new URL('../..', import.meta.url));
const dir = tempDir('switchyard-bin-');
const root = dir.path;
const HOUR = 3600_000;

function write(path: string, text: string): void {
  mkdirSync(join(root, path, '..'), { recursive: true });
  writeFileSync(join(root, path), text);
}

/** Sets the mtime of `paths` (relative to the project) to `at` ms since the epoch. */
function stamp(at: number, ...paths: string[]): void {
  for (const path of paths) utimesSync(join(root, path), at / 1000, at / 1000);
}

function run(env: Record<string, string> = {}): string {
  const result = spawnSync(process.execPath, [join(root, 'bin', 'switchyard.js')], {
    encoding: 'utf8',
    // Not the runner's SWITCHYARD_FROM_SOURCE: each test sets what it checks.
    env: { ...process.env, SWITCHYARD_FROM_SOURCE: '', ...env },
    timeout: 60_000,
  });
  assert.equal(result.status, 0, result.stderr);
  return result.stdout.trim();
}

const builtAt = Date.now() - HOUR;

function freshBuild(): void {
  write('dist/build-info.json', JSON.stringify({ builtAt }));
  stamp(builtAt - HOUR, 'src/cli.ts', 'src/engine/run.ts', 'src/engine', 'src');
}

before(() => {
  mkdirSync(join(root, 'bin'));
  copyFileSync(join(repo, 'bin', 'switchyard.js'), join(root, 'bin', 'switchyard.js'));
  writeFileSync(join(root, 'package.json'), JSON.stringify({ type: 'module' }));
  symlinkSync(join(repo, 'node_modules'), join(root, 'node_modules'));
  write('dist/cli.js', "export async function main() { console.log('dist'); return 0; }\n");
  write('src/cli.ts', "export async function main(): Promise<number> { console.log('source'); return 0; }\n");
  write('src/engine/run.ts', 'export const x: number = 1;\n');
});
after(() => dir.remove());

test('bin: runs the compiled build when it is newer than every source', () => {
  freshBuild();
  assert.equal(run(), 'dist');
});

test('bin: an edited source makes the build stale and the sources run', () => {
  freshBuild();
  stamp(builtAt + 1000, 'src/engine/run.ts');
  assert.equal(run(), 'source');
});

test('bin: a source file added or removed (its folder changes) makes the build stale', () => {
  freshBuild();
  write('src/engine/added.ts', 'export {};\n');
  stamp(builtAt - HOUR, 'src/engine/added.ts');
  assert.equal(run(), 'source', 'the folder mtime moved when the file was added');
  rmSync(join(root, 'src/engine/added.ts'));
  freshBuild();
  assert.equal(run(), 'dist');
});

test('bin: SWITCHYARD_FROM_SOURCE=1 (set by the test runner) runs the sources even with a fresh build', () => {
  freshBuild();
  assert.equal(run({ SWITCHYARD_FROM_SOURCE: '1' }), 'source');
});

test('bin: SWITCHYARD_FROM_SOURCE=0 runs the build even when a source is newer (benchmarks of the build)', () => {
  freshBuild();
  stamp(builtAt + 1000, 'src/engine/run.ts');
  assert.equal(run({ SWITCHYARD_FROM_SOURCE: '0' }), 'dist');
});

test('bin: without build-info.json (no build, or one cut short) the sources run', () => {
  freshBuild();
  rmSync(join(root, 'dist/build-info.json'));
  assert.equal(run(), 'source');
});

test('bin: an installed package (dist/ without src/) runs the build', () => {
  freshBuild();
  rmSync(join(root, 'src'), { recursive: true });
  try {
    assert.equal(run({ SWITCHYARD_FROM_SOURCE: '1' }), 'dist');
  } finally {
    write(
      'src/cli.ts',
      "export async function main(): Promise<number> { console.log('source'); return 0; }\n",
    );
    write('src/engine/run.ts', 'export const x: number = 1;\n');
  }
});
