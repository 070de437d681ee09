import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ADMIN_ERROR_STATUS } from '../../src/core/errors.js';

/**
 * docs/admin-api.md#error-codes lists every `error` code the Admin API answers, with its status:
 * the page, the catalogue in src/core/errors.ts and the codes the Admin sources answer must agree.
 */

const root = join(import.meta.dirname, '../..');

/** `code → status` from the table between the page's admin-error-codes markers. */
function documentedCodes(): Map<string, number> {
  const page = readFileSync(join(root, 'docs/admin-api.md'), 'utf8');
  const begin = page.indexOf('<!-- admin-error-codes:begin -->');
  const end = page.indexOf('<!-- admin-error-codes:end -->');
  assert.ok(begin !== -1 && end > begin, 'docs/admin-api.md has the admin-error-codes markers');
  const out = new Map<string, number>();
  for (const line of page.slice(begin, end).split('\n')) {
    const row = /^\| `([a-z_]+)` \| (\d{3}) \|/.exec(line);
    if (row === null) continue;
    assert.ok(!out.has(row[1]!), `${row[1]} is listed once`);
    out.set(row[1]!, Number(row[2]));
  }
  return out;
}

/**
 * The codes a source text answers: the first argument of `adminError`, `adminErrorReply` and
 * `adminErrorBody`, and any `error: '<code>'` literal built by hand.
 */
function codesIn(text: string): Set<string> {
  const out = new Set<string>();
  const patterns = [
    /\badminError(?:Reply|Body)?\(\s*'([a-z_]+)'/g,
    /\berror:\s*'([a-z_]+)'/g,
    /\bADMIN_ERROR_STATUS\.([a-z_]+)/g,
  ];
  for (const pattern of patterns) for (const m of text.matchAll(pattern)) out.add(m[1]!);
  return out;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(dir, f));
}

/** `code → files` over src/admin and the debug sandbox, whose errors `POST /api/debug/sandbox` answers. */
function answeredCodes(): Map<string, string[]> {
  const files = [...tsFiles(join(root, 'src/admin')), join(root, 'src/debug/sandbox.ts')];
  const out = new Map<string, string[]>();
  for (const file of files) {
    for (const code of codesIn(readFileSync(file, 'utf8'))) {
      const list = out.get(code) ?? [];
      list.push(file.slice(root.length + 1));
      out.set(code, list);
    }
  }
  return out;
}

test('the scanner finds codes in each form an Admin error is built', () => {
  const sample = [
    "throw adminError('in_use', { message });",
    "return adminErrorReply('unauthorized', undefined, CHALLENGE);",
    "body: adminErrorBody('too_many_failed_logins', { message })",
    "throw new AdminError(418, { error: 'teapot' });",
    'status: ADMIN_ERROR_STATUS.store_timeout,',
    'throw badRequest(`not a code: ${x}`);',
  ].join('\n');
  assert.deepEqual([...codesIn(sample)].sort(), [
    'in_use',
    'store_timeout',
    'teapot',
    'too_many_failed_logins',
    'unauthorized',
  ]);
});

test('docs/admin-api.md lists exactly the catalogue of src/core/errors.ts, with the same statuses', () => {
  const documented = Object.fromEntries([...documentedCodes()].sort());
  const catalogue = Object.fromEntries(Object.entries(ADMIN_ERROR_STATUS).sort());
  assert.deepEqual(documented, catalogue);
});

test('every error code the Admin API answers is listed in docs/admin-api.md#error-codes', () => {
  const documented = documentedCodes();
  const unlisted = [...answeredCodes()]
    .filter(([code]) => !documented.has(code))
    .map(([code, files]) => `${code} (${files.join(', ')})`);
  assert.deepEqual(unlisted, [], 'answered by src/admin but missing from the page');
});

test('every code listed in docs/admin-api.md#error-codes is still answered by the sources', () => {
  const answered = answeredCodes();
  const stale = [...documentedCodes().keys()].filter((code) => !answered.has(code));
  assert.deepEqual(stale, [], 'listed on the page but answered nowhere');
});
