#!/usr/bin/env node
// Node 20's test runner does not expand globs: collect test/**/*.test.ts here and hand them over.
// Extra arguments (e.g. a subset of files or --test-name-pattern) are passed through.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { buildTestTree } from './test-tree.mjs';

function collect(dir) {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return collect(path);
      return name.endsWith('.test.ts') ? [path] : [];
    });
}

const args = process.argv.slice(2);
const explicit = args.filter((a) => !a.startsWith('--'));
const flags = args.filter((a) => a.startsWith('--'));
// The browser files take 25–75 s each, so they start first: queued last (alphabetically), they
// ran four at a time after everything else had finished and made the run's tail.
const slowFirst = (list) => [
  ...list.filter((f) => f.startsWith(join('test', 'ui'))),
  ...list.filter((f) => !f.startsWith(join('test', 'ui'))),
];
const files = explicit.length > 0 ? explicit : slowFirst(collect('test'));
// Build the editor and dist/ once, before files run concurrently: each build script is a no-op when
// its output is fresh, but two test files starting a stale build at the same moment would race.
for (const script of ['scripts/build-ui.mjs', 'scripts/build.mjs']) {
  const built = spawnSync(process.execPath, [script], { stdio: 'inherit' });
  if (built.status !== 0) process.exit(built.status ?? 1);
}
const concurrency = process.env.TEST_CONCURRENCY ?? '4';
// The tests run compiled (scripts/test-tree.mjs) unless SWITCHYARD_TEST_TSX=1 asks for the sources
// through tsx, or esbuild is missing.
const tree = process.env.SWITCHYARD_TEST_TSX === '1' ? undefined : await buildTestTree();
const targets =
  tree === undefined ? files : files.map((file) => join(tree, relative('.', file)).replace(/\.ts$/, '.js'));
const loader = tree === undefined ? ['--import', 'tsx'] : ['--enable-source-maps'];
const result = spawnSync(
  process.execPath,
  [
    ...loader,
    '--test',
    `--test-concurrency=${concurrency}`,
    '--test-timeout=180000',
    // The usual report on stdout, and the slowest files listed on stderr at the end.
    `--test-reporter=${process.stdout.isTTY ? 'spec' : 'tap'}`,
    '--test-reporter-destination=stdout',
    '--test-reporter=./scripts/test-file-timings.mjs',
    '--test-reporter-destination=stderr',
    ...flags,
    ...targets,
  ],
  // A gateway a test spawns runs the build made above — what `npm start` runs — unless a source is
  // newer (bin/switchyard.js then runs the sources, so an edit during a run is never masked).
  // Starting from dist/ costs ~1 s of CPU instead of ~3.4 s through tsx, and tests spawn hundreds.
  // SWITCHYARD_FROM_SOURCE=1 forces the sources.
  { stdio: 'inherit' },
);
process.exit(result.status ?? 1);
