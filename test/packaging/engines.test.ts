import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { test } from 'node:test';
import { repoRoot } from './build.js';

/** semver is what npm itself checks `engines` with (EBADENGINE); it is installed with npm's tools. */
const semver = createRequire(import.meta.url)('semver') as {
  minVersion(range: string): { version: string } | null;
  satisfies(version: string, range: string): boolean;
};

const readJson = <T>(file: string): T => JSON.parse(readFileSync(join(repoRoot, file), 'utf8')) as T;

test('F25: the oldest Node package.json engines admits satisfies the engines of every locked package (no EBADENGINE from npm ci)', () => {
  const engines = readJson<{ engines: { node: string } }>('package.json').engines.node;
  const oldest = semver.minVersion(engines)?.version;
  assert.ok(oldest !== undefined, `engines.node ${engines}`);
  const lock = readJson<{ packages: Record<string, { version?: string; engines?: unknown }> }>(
    'package-lock.json',
  );
  const refused: string[] = [];
  let checked = 0;
  for (const [path, pkg] of Object.entries(lock.packages)) {
    const node = (pkg.engines as { node?: unknown } | undefined)?.node;
    if (path === '' || typeof node !== 'string') continue;
    checked++;
    if (!semver.satisfies(oldest, node)) refused.push(`${path}@${pkg.version ?? '?'} needs node ${node}`);
  }
  assert.ok(checked > 0, 'the lock file declares engines');
  assert.deepEqual(refused, [], `engines.node ${engines} (oldest ${oldest}) is older than:`);
});
