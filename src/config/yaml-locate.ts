import { readFileSync } from 'node:fs';
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Node } from 'yaml';
import type { ConfigIssue } from './schema-validate.js';

/** `policies[0].nodes[2].config["x y"]` → `['policies', 0, 'nodes', 2, 'config', 'x y']`. */
export function pathSegments(path: string): (string | number)[] {
  const segments: (string | number)[] = [];
  const token = /(?:^|\.)([^.[\]"]+)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]/g;
  for (const m of path.matchAll(token)) {
    if (m[1] !== undefined) segments.push(m[1]);
    else if (m[2] !== undefined) segments.push(Number(m[2]));
    else if (m[3] !== undefined) segments.push(JSON.parse(m[3]) as string);
  }
  return segments;
}

/**
 * Gives each issue without a position the line and column of the deepest
 * part of its key path present in `text` (the key itself for an unknown key,
 * its parent for a missing one), so the CLI can print `file:line:column`.
 * Text that does not parse is returned unchanged: its syntax error already
 * carries a position.
 */
export function locateIssues(text: string, issues: readonly ConfigIssue[]): ConfigIssue[] {
  if (issues.every((i) => i.line !== undefined || i.path === '')) return [...issues];
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter });
  if (doc.errors.length > 0) return [...issues];
  return issues.map((issue) => {
    if (issue.line !== undefined || issue.path === '') return issue;
    const offset = offsetOf(doc.contents, pathSegments(issue.path));
    if (offset === undefined) return issue;
    const { line, col } = lineCounter.linePos(offset);
    return { ...issue, line, column: col };
  });
}

/** Source offset of the deepest node on `segments`: a mapping key's own position, a sequence item's start. */
function offsetOf(root: unknown, segments: readonly (string | number)[]): number | undefined {
  let at: unknown = root;
  let offset = rangeStart(root);
  for (const segment of segments) {
    if (isMap(at)) {
      const pair = at.items.find((p) => isScalar(p.key) && String(p.key.value) === String(segment));
      if (pair === undefined) break;
      offset = rangeStart(pair.key) ?? offset;
      at = pair.value;
    } else if (isSeq(at) && typeof segment === 'number') {
      const item = at.items[segment];
      if (item === undefined) break;
      offset = rangeStart(item) ?? offset;
      at = item;
    } else break;
  }
  return offset;
}

function rangeStart(node: unknown): number | undefined {
  return (node as Node | null)?.range?.[0];
}

/**
 * `file:line:column: path: message` per issue (line and column when the key
 * can be found in the file), the form editors and terminals link to.
 */
export function formatFileIssues(
  file: string,
  issues: readonly ConfigIssue[],
  transform: (text: string) => string = (text) => text,
): string[] {
  return locateFileIssues(file, issues, transform).map((i) => formatLocatedIssue(file, i));
}

/** One located issue as `file:line:column: path: message`. */
export function formatLocatedIssue(file: string, i: ConfigIssue): string {
  const at = i.line === undefined ? file : `${file}:${i.line}:${i.column ?? 1}`;
  // Compiler messages often restate the path; print it once.
  const path = i.path === '' || i.message.includes(i.path) ? '' : `${i.path}: `;
  return `${at}: ${path}${i.message}`;
}

/** `issues` with line and column found in `file` (after `transform`); unchanged when the file cannot be read. */
export function locateFileIssues(
  file: string,
  issues: readonly ConfigIssue[],
  transform: (text: string) => string = (text) => text,
): readonly ConfigIssue[] {
  let text: string | undefined;
  try {
    text = transform(readFileSync(file, 'utf8'));
  } catch {
    text = undefined;
  }
  return text === undefined ? issues : locateIssues(text, issues);
}
