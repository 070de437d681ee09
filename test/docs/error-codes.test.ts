/** docs/error-codes.md and the error catalog say the same thing: every code, its status and its `error`. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ERROR_CODES, NodeError, customErrorCode } from '../../src/core/errors.js';

const page = readFileSync(fileURLToPath(new URL('../../docs/error-codes.md', import.meta.url)), 'utf8');
const rows = new Map(
  [...page.matchAll(/^\| `([A-Z0-9_]+)` \| (\d{3}) \| `([a-z_]+)` \| (.+) \|$/gm)].map((m) => [
    m[1]!,
    { status: Number(m[2]), error: m[3]!, meaning: m[4]!.trim() },
  ]),
);

test('error codes: every catalog code has a row in docs/error-codes.md with its status and error', () => {
  for (const [code, known] of Object.entries(ERROR_CODES)) {
    const row = rows.get(code);
    assert.ok(row, `docs/error-codes.md has no row for ${code}`);
    assert.deepEqual(
      { status: row.status, error: row.error },
      known,
      `the row for ${code} disagrees with the catalog`,
    );
    assert.ok(row.meaning.length > 10, `the row for ${code} does not say when it is raised`);
  }
});

test('error codes: the docs list no code the catalog does not have', () => {
  const stale = [...rows.keys()].filter((code) => !(code in ERROR_CODES));
  assert.deepEqual(stale, []);
});

test('error codes: a node error takes its status and error from the catalog; a custom code falls back to 500', () => {
  const timeout = new NodeError('UPSTREAM_TIMEOUT', 'slow');
  assert.deepEqual([timeout.status, timeout.error], [504, 'gateway_timeout']);
  const custom = new NodeError(customErrorCode('MY_PLUGIN_FAILED'), 'mine');
  assert.deepEqual([custom.code, custom.status, custom.error], ['MY_PLUGIN_FAILED', 500, 'internal_error']);
});
