// A node:test reporter that prints, at the end of a run, the test files that took longest (wall
// time from the start of a file's first test to the end of its last) — the files to split or slim
// when `npm test` grows past its budget (CONTRIBUTING.md, "Tests"). Files are queued all at once,
// so only finished tests count: a test started `duration_ms` before its result arrived.
const SHOWN = 15;

export default async function* fileTimings(source) {
  const spans = new Map();
  for await (const event of source) {
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
      file: file.replace(`${process.cwd()}/`, ''),
      seconds: (last - first) / 1000,
    }))
    .sort((a, b) => b.seconds - a.seconds)
    .slice(0, SHOWN);
  if (rows.length === 0) return;
  yield `\n# slowest test files (wall seconds, first to last report):\n`;
  for (const row of rows) yield `#   ${row.seconds.toFixed(1).padStart(6)}  ${row.file}\n`;
}
