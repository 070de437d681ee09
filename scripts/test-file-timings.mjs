// A node:test reporter that prints, at the end of a run, the test files that took longest (wall
// time from the start of a file's first test to the end of its last) — the files to split or slim
// when `npm test` grows past its budget (CONTRIBUTING.md, "Tests"). Files are queued all at once,
// so only finished tests count: a test started `duration_ms` before its result arrived.
// Failed tests are listed again after it, with the first lines of their error, so the last lines of a
// long CI log say what failed.
// With SWITCHYARD_TEST_TIMINGS=json it writes one JSON object instead — every file's seconds and
// every failure — which scripts/run-tests.mjs merges over its lanes into one list.
import { join } from 'node:path';

const SHOWN = 15;
const root = join(import.meta.dirname, '..');

/** The repository path of a test file, also when it ran compiled (scripts/test-tree.mjs). */
const sourceName = (file) =>
  file
    .replace(/^file:\/\//, '')
    .replace(/^.*\/switchyard-test-tree\/\d+\/(.*)\.js$/, '$1.ts')
    .replace(`${process.cwd()}/`, '')
    .replace(`${root}/`, '');

export default async function* fileTimings(source) {
  const spans = new Map();
  const failures = [];
  // The last lines each file wrote to stderr: a file that fails as a whole (it would not load, or
  // its process exited) reports only "test failed", and the reason is there.
  const stderr = new Map();
  for await (const event of source) {
    if (event.type === 'test:stderr' && typeof event.data.file === 'string') {
      const lines = [...(stderr.get(event.data.file) ?? []), ...String(event.data.message).split('\n')];
      stderr.set(event.data.file, lines.filter((line) => line.trim() !== '').slice(-20));
    }
    if (event.type === 'test:fail') {
      const error = event.data.details?.error;
      // A suite failing because of its subtests adds nothing to the subtests' own lines.
      if (error?.failureType !== 'subtestsFailed') {
        const cause = error?.cause ?? error;
        let lines = String(cause?.message ?? cause ?? '')
          .split('\n')
          .filter((line) => line.trim() !== '');
        const file = String(event.data.file ?? '');
        if (error?.code === 'ERR_TEST_FAILURE' && lines.join('') === 'test failed' && stderr.has(file)) {
          const said = stderr.get(file);
          const first = said.findIndex((line) => /Error\b/.test(line));
          lines = said.slice(first === -1 ? 0 : first);
        }
        const message = lines.slice(0, 3).join(' / ').slice(0, 400);
        const test = event.data.name === file ? sourceName(file) : event.data.name;
        failures.push({ file: sourceName(file), test, message });
      }
    }
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const file = event.data?.file;
    if (typeof file !== 'string') continue;
    const now = Date.now();
    const began = now - (event.data.details?.duration_ms ?? 0);
    const span = spans.get(file);
    if (span === undefined) spans.set(file, { first: began, last: now });
    else {
      span.first = Math.min(span.first, began);
      span.last = Math.max(span.last, now);
    }
  }
  const rows = [...spans.entries()]
    .map(([file, { first, last }]) => ({
      file: sourceName(file),
      seconds: (last - first) / 1000,
    }))
    .sort((a, b) => b.seconds - a.seconds);
  if (process.env.SWITCHYARD_TEST_TIMINGS === 'json') {
    yield `${JSON.stringify({ files: rows, failures })}\n`;
    return;
  }
  if (rows.length > 0) {
    yield `\n# slowest test files (wall seconds, first to last report):\n`;
    for (const row of rows.slice(0, SHOWN)) yield `#   ${row.seconds.toFixed(1).padStart(6)}  ${row.file}\n`;
  }
  if (failures.length > 0) {
    yield `\n# ${failures.length} failed test(s):\n`;
    for (const { file, test, message } of failures) yield `# FAILED ${file}: ${test}\n#        ${message}\n`;
  }
}
