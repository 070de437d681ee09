#!/usr/bin/env node
// Collects test/**/*.test.ts and hands them to node's test runner (run with the Node that runs this
// script: under npm, the Node 24 of node_modules/.bin). Extra arguments (e.g. a subset of files or
// --test-name-pattern) are passed through.
//
// The whole suite (no files named) also runs the files that stand on Node and fengari internals
// (LANE_22 below) on Node 22, the oldest supported major, which `npm run setup` unpacks into
// node_modules/.cache/node22; concurrently with the main run, at TEST_CONCURRENCY_22 (default 1).
// Without that Node the lane is skipped with a notice, except in CI (CI=true), where it is a
// failure. SWITCHYARD_NODE22_LANE=0 skips it.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { buildTestTree } from './test-tree.mjs';

/** The files run on Node 22 too: the lean HTTP/1.1 server and client, Lua, workers, the internals probe. */
const LANE_22 = [
  /^test\/server\/lean[^/]*\.test\.ts$/,
  /^test\/outbound\/lean[^/]*\.test\.ts$/,
  /^test\/server\/internals-fallback\.test\.ts$/,
  /^test\/lua\//,
  /^test\/cluster\//,
];
const NODE22 = join('node_modules', '.cache', 'node22', 'package', 'bin', 'node');

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
const target = (file) =>
  tree === undefined ? file : join(tree, relative('.', file)).replace(/\.ts$/, '.js');
const targets = files.map(target);
const loader = tree === undefined ? ['--import', 'tsx'] : ['--enable-source-maps'];
const reports = mkdtempSync(join(tmpdir(), 'switchyard-test-reports-'));
process.once('exit', () => rmSync(reports, { recursive: true, force: true }));
const testArgs = (concurrency) => ['--test', `--test-concurrency=${concurrency}`, '--test-timeout=180000'];
/** Exit status and TAP summary counts of one test-runner process. */
function run(node, argv, options, onStdout) {
  return new Promise((resolve) => {
    const child = spawn(node, argv, options);
    let stderr = '';
    let tail = '';
    child.stderr?.on('data', (d) => (stderr += d));
    child.stdout?.on('data', (d) => {
      onStdout?.(d);
      tail = (tail + d).slice(-4096);
    });
    child.on('close', (code) => resolve({ code: code ?? 1, stderr, tail }));
  });
}
/** The summary counts of a report (TAP's `# pass N`, spec's `ℹ pass N`), or undefined without one. */
function countsIn(text) {
  // eslint-disable-next-line no-control-regex
  const plain = text.replace(/\x1b\[[0-9;]*m/g, '');
  const count = (word) => new RegExp(`^(?:#|ℹ) ${word} (\\d+)$`, 'm').exec(plain)?.[1];
  const [pass, fail] = [count('pass'), count('fail')];
  return pass === undefined || fail === undefined
    ? undefined
    : { pass: Number(pass), fail: Number(fail), text };
}
const counts = (file) => (existsSync(file) ? countsIn(readFileSync(file, 'utf8')) : undefined);

const lane = [];
if (explicit.length === 0 && process.env.SWITCHYARD_NODE22_LANE !== '0') {
  const laneFiles = files.filter((f) => LANE_22.some((re) => re.test(f.split('\\').join('/'))));
  if (existsSync(NODE22)) {
    const version = spawnSync(NODE22, ['--version'], { encoding: 'utf8' }).stdout.trim();
    const report = join(reports, 'node22.tap');
    process.stdout.write(
      `# node ${version} lane: ${laneFiles.length} files, beside the main run on node ${process.version}\n`,
    );
    lane.push({
      version,
      report,
      done: run(
        NODE22,
        [
          ...loader,
          ...testArgs(process.env.TEST_CONCURRENCY_22 ?? '1'),
          '--test-reporter=tap',
          `--test-reporter-destination=${report}`,
          ...flags,
          ...laneFiles.map(target),
        ],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      ),
    });
  } else if (process.env.CI === 'true') {
    process.stderr.write(
      `run-tests: ${NODE22} is missing (npm run setup installs it); CI runs the Node 22 lane\n`,
    );
    process.exit(1);
  } else {
    process.stderr.write(
      `run-tests: no ${NODE22} (npm run setup installs it): the Node 22 lane is skipped\n`,
    );
  }
}

const main = await run(
  process.execPath,
  [
    ...loader,
    ...testArgs(concurrency),
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
  // Its report is relayed (and its end kept, to count from for the closing line); colors as on a terminal.
  {
    stdio: ['inherit', 'pipe', 'inherit'],
    env:
      process.stdout.isTTY && process.env.NO_COLOR === undefined
        ? { ...process.env, FORCE_COLOR: '1' }
        : process.env,
  },
  (chunk) => process.stdout.write(chunk),
);
let status = main.code;
const mainCounts = countsIn(main.tail);
let passed = mainCounts?.pass ?? 0;
let failed = mainCounts?.fail ?? 0;
for (const { version, report, done } of lane) {
  const { code, stderr } = await done;
  const got = counts(report);
  process.stdout.write(
    `\n# node ${version} lane: ${got?.pass ?? 0} passed, ${got?.fail ?? 0} failed (exit ${code})\n`,
  );
  // Its failures in full (the main run's report is above); the process's own output when it died.
  for (const block of got?.text.split(/^(?=not ok |# Subtest: )/m) ?? [])
    if (block.startsWith('not ok ')) process.stdout.write(block.replace(/^/gm, '#   '));
  if ((got === undefined || code !== 0) && stderr.trim() !== '')
    process.stdout.write(`${stderr.trimEnd().replace(/^/gm, '#   ')}\n`);
  passed += got?.pass ?? 0;
  failed += got?.fail ?? 0;
  if (code !== 0 && status === 0) status = code;
}
if (lane.length > 0) process.stdout.write(`total: ${passed} passed, ${failed} failed\n`);
process.exit(status);
