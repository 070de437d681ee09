#!/usr/bin/env node
// Collects test/**/*.test.ts and hands them to node's test runner (run with the Node that runs this
// script: under npm, the Node 24 of node_modules/.bin), in two lanes that run at the same time:
//
//   unit  every file outside test/ui/ — no browser (`npm run test:unit`, TEST_CONCURRENCY_UNIT)
//   ui    the browser files, test/ui/** (`npm run test:ui`, TEST_CONCURRENCY_UI)
//
// `npm test` runs both (no --lane): the machine has two cores and the suite is CPU-bound, so the
// split keeps four files going at once as before — three unit files and one browser file (a
// browser file costs 6–15 s of CPU with its gateway and Chromium, a unit file mostly a few; the 14
// browser files one after another end well before the unit lane) — and the browser files no
// longer crowd each other at the start of one shared queue. A lane run alone gets the whole
// machine (unit 4, ui 2). Extra arguments (a subset of files,
// --test-name-pattern=…) are passed through; named files are sorted into their lanes by path.
//
// The whole unit lane (no files named) also runs the files that stand on Node and fengari
// internals (LANE_22 below) on Node 22, the oldest supported major, which `npm run setup` unpacks
// into node_modules/.cache/node22; beside the other lanes, at TEST_CONCURRENCY_22 (default 1).
// Without that Node the lane is skipped with a notice, except in CI (CI=true), where it is a
// failure. SWITCHYARD_NODE22_LANE=0 skips it; SWITCHYARD_NODE22_LANE=1 runs it for named files too
// (those of them that LANE_22 lists).
//
// The first lane's report streams to stdout (spec on a terminal, TAP otherwise); the others write
// TAP to a temporary folder, and every lane its file timings (scripts/test-file-timings.mjs). The
// run ends with one summary: the slowest files of all lanes, each lane's counts and its failures
// in full, the failed tests once more in one line each, the wall time, then
// `total: N passed, M failed`. The exit status is non-zero when any lane failed.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
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
const LANES = ['unit', 'ui'];

function collect(dir) {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return collect(path);
      return name.endsWith('.test.ts') ? [path] : [];
    });
}
/** A file's path from the repository root with forward slashes, for the lane patterns. */
const posix = (file) => relative('.', resolve(file)).split('\\').join('/');
const isUi = (file) => posix(file).startsWith('test/ui/');

const args = process.argv.slice(2);
const asked = new Set(args.filter((a) => a.startsWith('--lane=')).map((a) => a.slice('--lane='.length)));
const only = [...asked][0];
if (asked.size > 1 || (only !== undefined && !LANES.includes(only))) {
  process.stderr.write(
    `run-tests: --lane=${[...asked].join(',')}: one of ${LANES.join(', ')}, or none for both\n`,
  );
  process.exit(2);
}
const explicit = args.filter((a) => !a.startsWith('--'));
const flags = args.filter((a) => a.startsWith('--') && !a.startsWith('--lane='));
const stray = explicit.filter((f) => (only === 'unit' ? isUi(f) : only === 'ui' ? !isUi(f) : false));
if (stray.length > 0) {
  process.stderr.write(
    `run-tests: not in the ${only} lane (test/ui/** is the ui lane, the rest the unit lane): ${stray.join(' ')}\n`,
  );
  process.exit(2);
}
const files = explicit.length > 0 ? explicit : collect('test');
const laneFiles = {
  unit: only === 'ui' ? [] : files.filter((f) => !isUi(f)),
  ui: only === 'unit' ? [] : files.filter(isUi),
};
const together = laneFiles.unit.length > 0 && laneFiles.ui.length > 0;
const env = process.env;
const started = Date.now();
const concurrency = {
  unit: env.TEST_CONCURRENCY_UNIT ?? env.TEST_CONCURRENCY ?? (together ? '3' : '4'),
  ui: env.TEST_CONCURRENCY_UI ?? (together ? '1' : '2'),
};

// Build the editor and dist/ once, before files run concurrently: each build script is a no-op when
// its output is fresh, but two test files starting a stale build at the same moment would race.
for (const script of ['scripts/build-ui.mjs', 'scripts/build.mjs']) {
  const built = spawnSync(process.execPath, [script], { stdio: 'inherit' });
  if (built.status !== 0) process.exit(built.status ?? 1);
}
// The tests run compiled (scripts/test-tree.mjs; one tree for every lane) unless
// SWITCHYARD_TEST_TSX=1 asks for the sources through tsx, or esbuild is missing.
const tree = env.SWITCHYARD_TEST_TSX === '1' ? undefined : await buildTestTree();
const target = (file) => (tree === undefined ? file : join(tree, posix(file)).replace(/\.ts$/, '.js'));
const loader = tree === undefined ? ['--import', 'tsx'] : ['--enable-source-maps'];
const reports = mkdtempSync(join(tmpdir(), 'switchyard-test-reports-'));
process.once('exit', () => rmSync(reports, { recursive: true, force: true }));

/** Exit status, stderr and (when piped) stdout of one test-runner process; `live` relays both. */
function run(node, argv, options, live) {
  return new Promise((done) => {
    const child = spawn(node, argv, options);
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (d) => {
      process.stdout.write(d);
      stdout += d;
    });
    child.stderr?.on('data', (d) => {
      if (live) process.stderr.write(d);
      stderr = (stderr + d).slice(-65536);
    });
    child.on('error', (err) => (stderr += `${err.message}\n`));
    child.on('close', (code) => done({ code: code ?? 1, stdout, stderr }));
  });
}

const lanes = [];
/** Starts one lane: a test runner over `list` at `jobs` files at once; `live` streams its report. */
function start(name, node, version, list, jobs, live) {
  const tap = join(reports, `${name}.tap`);
  const timings = join(reports, `${name}.timings.json`);
  const began = Date.now();
  process.stdout.write(
    `# ${name} lane: ${list.length} files on node ${version}, ${jobs} at a time` +
      `${live ? '' : ' (its report comes at the end)'}\n`,
  );
  const done = run(
    node,
    [
      ...loader,
      '--test',
      `--test-concurrency=${jobs}`,
      '--test-timeout=180000',
      // The live lane's report is relayed from its stdout (and kept, to count from); a third
      // reporter would make node warn (MaxListenersExceededWarning) in the runner.
      `--test-reporter=${live && process.stdout.isTTY ? 'spec' : 'tap'}`,
      `--test-reporter-destination=${live ? 'stdout' : tap}`,
      '--test-reporter=./scripts/test-file-timings.mjs',
      `--test-reporter-destination=${timings}`,
      ...flags,
      ...list.map(target),
    ],
    // A gateway a test spawns runs the build made above — what `npm start` runs — unless a source
    // is newer (bin/switchyard.js then runs the sources, so an edit during a run is never masked).
    // Starting from dist/ costs ~1 s of CPU instead of ~3.4 s through tsx, and tests spawn
    // hundreds. SWITCHYARD_FROM_SOURCE=1 forces the sources.
    // Colors as on a terminal when the relayed report goes to one.
    {
      stdio: live ? ['inherit', 'pipe', 'pipe'] : ['ignore', 'ignore', 'pipe'],
      env: {
        ...env,
        SWITCHYARD_TEST_TIMINGS: 'json',
        ...(live && process.stdout.isTTY && env.NO_COLOR === undefined ? { FORCE_COLOR: '1' } : {}),
      },
    },
    live,
  ).then((result) => ({ ...result, seconds: (Date.now() - began) / 1000 }));
  lanes.push({ name, version, files: list.length, jobs, tap, timings, live, done });
}

let live = true;
for (const name of LANES) {
  if (laneFiles[name].length === 0) continue;
  start(name, process.execPath, process.version, laneFiles[name], concurrency[name], live);
  live = false;
}
const node22 = env.SWITCHYARD_NODE22_LANE;
if (laneFiles.unit.length > 0 && (node22 === '1' || (explicit.length === 0 && node22 !== '0'))) {
  const list = laneFiles.unit.filter((f) => LANE_22.some((re) => re.test(posix(f))));
  if (existsSync(NODE22)) {
    const version = spawnSync(NODE22, ['--version'], { encoding: 'utf8' }).stdout.trim();
    start('node22', NODE22, version, list, env.TEST_CONCURRENCY_22 ?? '1', false);
  } else if (env.CI === 'true') {
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

/** The summary counts of a report (TAP's `# pass N`, spec's `ℹ pass N`), or undefined without one. */
function counts(text) {
  // eslint-disable-next-line no-control-regex
  const plain = text.replace(/\x1b\[[0-9;]*m/g, '');
  const count = (word) => new RegExp(`^(?:#|ℹ) ${word} (\\d+)$`, 'm').exec(plain)?.[1];
  const [pass, fail, cancelled] = [count('pass'), count('fail'), count('cancelled')];
  if (pass === undefined || fail === undefined) return undefined;
  return { pass: Number(pass), fail: Number(fail) + Number(cancelled ?? 0), text: plain };
}
/** Each failed test's TAP lines, nested or not, with its error (a suite failed by its subtests is left out). */
function failures(text) {
  const lines = text.split('\n');
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    const head = /^(\s*)not ok \d+ - /.exec(lines[i]);
    if (head === null || / # TODO\b/.test(lines[i])) continue;
    const block = [lines[i]];
    const end = `${head[1]}  ...`;
    while (i + 1 < lines.length && lines[i] !== end) block.push(lines[++i]);
    if (!block.some((line) => line.includes("failureType: 'subtestsFailed'")))
      blocks.push(block.map((line) => line.slice(head[1].length)).join('\n'));
  }
  return blocks;
}
function timingsOf(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return { files: [], failures: [] };
  }
}

const results = [];
for (const lane of lanes) results.push({ ...lane, ...(await lane.done) });
const out = [];
const slowest = results
  .flatMap(({ name, timings }) => timingsOf(timings).files.map((row) => ({ ...row, name })))
  .sort((a, b) => b.seconds - a.seconds)
  .slice(0, 15);
if (slowest.length > 0) {
  out.push('', '# slowest test files (wall seconds, first to last report):');
  for (const row of slowest)
    out.push(`#   ${row.seconds.toFixed(1).padStart(6)}  ${row.file}  (${row.name})`);
}
let status = 0;
let passed = 0;
let failed = 0;
for (const { name, version, files: count, jobs, tap, live, code, stdout, stderr, seconds } of results) {
  const got = counts(live ? stdout : existsSync(tap) ? readFileSync(tap, 'utf8') : '');
  out.push(
    '',
    `# ${name} lane (node ${version}, ${count} files, ${jobs} at a time): ${got?.pass ?? 0} passed, ` +
      `${got?.fail ?? 0} failed in ${seconds.toFixed(0)} s (exit ${code})`,
  );
  for (const block of got === undefined ? [] : failures(got.text)) out.push(block.replace(/^/gm, '#   '));
  if (live && process.stdout.isTTY && (got?.fail ?? 0) > 0)
    out.push("#   (in full: the report's failing tests above)");
  // The process's own output when it died or failed without a failed test (a file that would not load).
  if ((got === undefined || code !== 0) && stderr.trim() !== '')
    out.push(stderr.trimEnd().replace(/^/gm, '#   '));
  if (got === undefined && code === 0) out.push('#   (no report: counted as a failure)');
  passed += got?.pass ?? 0;
  failed += got?.fail ?? 0;
  if (status === 0 && (code !== 0 || got === undefined)) status = code || 1;
}
const listed = results.flatMap(({ name, timings }) =>
  timingsOf(timings).failures.map((f) => ({ ...f, name })),
);
if (listed.length > 0) {
  out.push('', `# ${listed.length} failed test(s):`);
  for (const f of listed) out.push(`# FAILED ${f.file}: ${f.test}  (${f.name})`, `#        ${f.message}`);
}
out.push(
  `# wall time (builds, test tree, lanes): ${((Date.now() - started) / 1000).toFixed(0)} s`,
  `total: ${passed} passed, ${failed} failed`,
  '',
);
process.stdout.write(out.join('\n'));
process.exit(status);
