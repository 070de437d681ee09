import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The repository itself, not the compiled test tree that links to it (scripts/test-tree.mjs):
 * `npm pack` does not follow the tree's links.
 */
export const repoRoot = dirname(realpathSync(fileURLToPath(new URL('../../package.json', import.meta.url))));

/**
 * Brings ui/dist and dist/ up to date with the sources, as `npm pack` (prepack) and `npm start`
 * (prestart) do; each script does nothing when its output is fresh.
 */
export function ensureBuilt(): void {
  for (const script of ['scripts/build-ui.mjs', 'scripts/build.mjs']) {
    const run = spawnSync(process.execPath, [script], { cwd: repoRoot, encoding: 'utf8', timeout: 150_000 });
    assert.equal(run.status, 0, `${script} failed:\n${run.stdout}${run.stderr}`);
  }
}

/** `npm pack --dry-run --json`: the files the published package would hold. */
export function packedFiles(): string[] {
  const run = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: repoRoot,
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(run.status, 0, run.stderr);
  const [manifest] = JSON.parse(run.stdout) as [{ files: { path: string }[] }];
  return manifest.files.map((f) => f.path);
}
