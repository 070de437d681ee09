/**
 * The yaml library re-renders a whole document from its tree, so lines whose value did not change
 * can still change form (`[GET, POST]` becomes `[ GET, POST ]`, aligned values lose their
 * padding, a comment its distance). `keepUnchangedLines` puts the file's own line back wherever
 * the rendered line differs from it in whitespace only (F22): an Admin write changes only the lines
 * of what it changed. The caller checks that the result still reads back as the new config.
 */

/** Past this many changed lines (after whitespace), the rendered text is taken as it is. */
const MAX_CHANGED_LINES = 1000;

/** A line compared without its whitespace, the indentation excepted (it is structure in YAML). */
function shape(line: string): string {
  const indent = /^[ \t]*/.exec(line)?.[0] ?? '';
  return indent + line.slice(indent.length).replace(/\s+/g, '');
}

/**
 * `rendered` with every line that differs from its counterpart in `original` only in whitespace
 * replaced by the original line, and the blank lines the rendering collapsed kept;
 * undefined when the two differ in too many lines to align them cheaply.
 */
export function keepUnchangedLines(original: string, rendered: string): string | undefined {
  const a = original.split('\n');
  const b = rendered.split('\n');
  const pairs = alignLines(a.map(shape), b.map(shape));
  if (pairs === undefined) return undefined;
  const out: string[] = [];
  let i = 0;
  let j = 0;
  for (const [ai, bj] of [...pairs, [a.length, b.length] as const]) {
    const deleted = a.slice(i, ai);
    const inserted = b.slice(j, bj);
    out.push(...inserted);
    // Blank lines the rendering collapsed (`\n\n\n` → `\n\n`) end the run it replaced: keep them.
    for (let extra = trailingBlanks(deleted) - trailingBlanks(inserted); extra > 0; extra--) out.push('');
    if (ai < a.length) out.push(a[ai]!);
    i = ai + 1;
    j = bj + 1;
  }
  return out.join('\n');
}

function trailingBlanks(lines: readonly string[]): number {
  let count = 0;
  while (count < lines.length && lines[lines.length - 1 - count]!.trim() === '') count++;
  return count;
}

/**
 * The matching lines of `a` and `b` (index pairs in order) by Myers' O(ND) diff over the lines
 * between their common head and tail; undefined past MAX_CHANGED_LINES differences.
 */
function alignLines(a: readonly string[], b: readonly string[]): [number, number][] | undefined {
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (
    tail < a.length - head &&
    tail < b.length - head &&
    a[a.length - 1 - tail] === b[b.length - 1 - tail]
  )
    tail++;
  const pairs: [number, number][] = [];
  for (let k = 0; k < head; k++) pairs.push([k, k]);
  const middle = myers(a.slice(head, a.length - tail), b.slice(head, b.length - tail));
  if (middle === undefined) return undefined;
  for (const [x, y] of middle) pairs.push([x + head, y + head]);
  for (let k = tail; k > 0; k--) pairs.push([a.length - k, b.length - k]);
  return pairs;
}

function myers(a: readonly string[], b: readonly string[]): [number, number][] | undefined {
  const n = a.length;
  const m = b.length;
  const max = Math.min(n + m, MAX_CHANGED_LINES);
  const offset = max + 1;
  let v = new Int32Array(2 * max + 3);
  /** `v` as it was before each round d, for the walk back. */
  const trace: Int32Array[] = [];
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice());
    const next = v;
    for (let k = -d; k <= d; k += 2) {
      let x =
        k === -d || (k !== d && next[offset + k - 1]! < next[offset + k + 1]!)
          ? next[offset + k + 1]!
          : next[offset + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      next[offset + k] = x;
      if (x >= n && y >= m) return walkBack(trace, offset, n, m, a, b);
    }
    v = next;
  }
  return undefined;
}

function walkBack(
  trace: readonly Int32Array[],
  offset: number,
  n: number,
  m: number,
  a: readonly string[],
  b: readonly string[],
): [number, number][] {
  const pairs: [number, number][] = [];
  let x = n;
  let y = m;
  for (let d = trace.length - 1; d >= 0; d--) {
    const v = trace[d]!;
    const k = x - y;
    const down = k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!);
    const prevK = down ? k + 1 : k - 1;
    const prevX = d === 0 ? 0 : v[offset + prevK]!;
    const prevY = d === 0 ? 0 : prevX - prevK;
    while (x > prevX && y > prevY && a[x - 1] === b[y - 1]) {
      x--;
      y--;
      pairs.push([x, y]);
    }
    if (d === 0) break;
    x = prevX;
    y = prevY;
  }
  return pairs.reverse();
}
