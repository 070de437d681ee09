/** Every docs page a source comment names exists, and so does the section its #anchor points at. */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|tsx|mjs)$/.test(entry.name) ? [path] : [];
  });
}

/** GitHub's heading slug: lower case, punctuation dropped, spaces to dashes. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

const anchorsOf = new Map<string, Set<string>>();
function anchors(page: string): Set<string> {
  let found = anchorsOf.get(page);
  if (found === undefined) {
    const text = readFileSync(join(root, page), 'utf8');
    const seen = new Map<string, number>();
    found = new Set<string>();
    for (const match of text.matchAll(/^#{1,6} (.+)$/gm)) {
      const base = slug(match[1] ?? '');
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      found.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const match of text.matchAll(/<a (?:name|id)="([^"]+)"/g)) found.add(match[1] ?? '');
    anchorsOf.set(page, found);
  }
  return found;
}

test('docs links in src/ comments: every named page and #anchor exists', () => {
  const broken: string[] = [];
  for (const file of [...sourceFiles(join(root, 'src')), ...sourceFiles(join(root, 'scripts'))]) {
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/\bdocs\/[A-Za-z0-9_./-]+\.md(#[A-Za-z0-9_-]+)?/g)) {
      const [page, anchor] = match[0].split('#') as [string, string | undefined];
      const where = relative(root, file);
      if (!existsSync(join(root, page))) broken.push(`${where}: ${page} does not exist`);
      else if (anchor !== undefined && !anchors(page).has(anchor))
        broken.push(`${where}: ${page} has no section #${anchor}`);
    }
  }
  assert.deepEqual(broken, []);
});
