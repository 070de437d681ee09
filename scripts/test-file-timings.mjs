// A node:test reporter that prints, at the end of a run, the test files that took longest (wall
// time from the start of a file's first test to the end of its last) — the files to split or slim
// when `npm test` grows past its budget (CONTRIBUTING.md, "Tests"). Files are queued all at once,
// so only finished tests count: a test started `duration_ms` before its result arrived.
// Failed tests are listed again after it, with the first lines of their error, so the last lines of a
// long CI log say what failed.
const SHOWN = 15;

/** The repository path of a test file, also when it ran compiled (scripts/test-tree.mjs). */
const sourceName = (file) =>
  file.replace(`${process.cwd()}/`, '').replace(/^.*\/switchyard-test-tree\/\d+\/(.*)\.js$/, '$1.ts');

export default async function* fileTimings(source) {
  const spans = new Map();
  const failures = [];
  for await (const event of source) {
    if (event.type === 'test:fail') {
      const error = event.data.details?.error;
      // A suite failing because of its subtests adds nothing to the subtests' own lines.
      if (error?.failureType !== 'subtestsFailed') {
        const cause = error?.cause ?? error;
        const message = String(cause?.message ?? cause ?? '')
          .split('\n')
          .filter((line) => line.trim() !== '')
          .slice(0, 3)
          .join(' / ')
          .slice(0, 400);
        const file = sourceName(String(event.data.file ?? ''));
        failures.push(`# FAILED ${file}: ${event.data.name}\n#        ${message}\n`);
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
    .sort((a, b) => b.seconds - a.seconds)
    .slice(0, SHOWN);
  if (rows.length > 0) {
    yield `\n# slowest test files (wall seconds, first to last report):\n`;
    for (const row of rows) yield `#   ${row.seconds.toFixed(1).padStart(6)}  ${row.file}\n`;
  }
  if (failures.length > 0) {
    yield `\n# ${failures.length} failed test(s):\n`;
    for (const line of failures) yield line;
  }
}
