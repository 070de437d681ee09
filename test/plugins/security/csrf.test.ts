import assert from 'node:assert/strict';
import { test } from 'node:test';
import { csrf } from '../../../src/plugins/security/csrf.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { assertSchemaRejects } from '../../support/node-run.js';
import { responseJson } from '../../support/assertions.js';

const NAME = 'featherbit-csrf-token';

/** Issues a token through a GET and returns it as the browser would store it. */
function issueToken(config: Record<string, unknown> = { key: 'secret' }): string {
  const ctx = requestContext({ method: 'GET' });
  assert.equal(instantiate(csrf, config).run(ctx), 'success');
  const cookie = (ctx.response.headers['set-cookie'] as string[])[0]!;
  return cookie.slice(cookie.indexOf('=') + 1, cookie.indexOf(';'));
}

function unsafe(header?: string, cookie?: string, method = 'POST') {
  const headers: Record<string, string> = { host: 'gw' };
  if (header !== undefined) headers[NAME] = header;
  if (cookie !== undefined) headers.cookie = `${NAME}=${cookie}`;
  return requestContext({ method, headers });
}

test('csrf: a safe method passes and receives a token cookie', () => {
  const ctx = requestContext({ method: 'GET' });
  assert.equal(instantiate(csrf, { key: 'secret' }).run(ctx), 'success');
  const cookies = ctx.response.headers['set-cookie'] as string[];
  assert.equal(cookies.length, 1);
  assert.match(cookies[0]!, new RegExp(`^${NAME}=[A-Za-z0-9+/=]+; Path=/; SameSite=Lax; Max-Age=7200$`));
});

test('csrf: an unsafe method with matching, valid header and cookie tokens passes', () => {
  const token = issueToken();
  const ctx = unsafe(token, token, 'DELETE');
  assert.equal(instantiate(csrf, { key: 'secret' }).run(ctx), 'success');
  assert.ok(ctx.response.headers['set-cookie']);
});

test('csrf: each failure is denied with 401 and its reason', () => {
  const node = instantiate(csrf, { key: 'secret' });
  const token = issueToken();
  const forged = issueToken({ key: 'other' });
  const cases: [ReturnType<typeof unsafe>, string][] = [
    [unsafe(), 'no csrf token in headers'],
    [unsafe(token), 'no csrf cookie'],
    [unsafe(token, issueToken()), 'csrf token mismatch'],
    [unsafe(forged, forged), 'Failed to verify the csrf token signature'],
    [unsafe('nonsense', 'nonsense'), 'Failed to verify the csrf token signature'],
  ];
  for (const [ctx, reason] of cases) {
    assert.equal(node.run(ctx), 'denied', reason);
    assert.equal(ctx.response.status, 401);
    assert.deepEqual(responseJson(ctx), { error_msg: reason });
  }
});

test('csrf: an expired token is refused; expires 0 never expires and sets a session cookie', () => {
  const old = Buffer.from(JSON.stringify({ random: 'r', expires: 1, sign: 'x' })).toString('base64');
  assert.equal(instantiate(csrf, { key: 'secret', expires: 10 }).run(unsafe(old, old)), 'denied');
  const forever = issueToken({ key: 'secret', expires: 0 });
  const ctx = unsafe(forever, forever);
  assert.equal(instantiate(csrf, { key: 'secret', expires: 0 }).run(ctx), 'success');
  assert.doesNotMatch((ctx.response.headers['set-cookie'] as string[])[0]!, /Max-Age/);
});

test('csrf: phase response only issues the cookie, even for unsafe methods; name is configurable', () => {
  const ctx = unsafe(undefined, undefined, 'POST');
  assert.equal(instantiate(csrf, { key: 'secret', phase: 'response', name: 'x-csrf' }).run(ctx), 'success');
  assert.match((ctx.response.headers['set-cookie'] as string[])[0]!, /^x-csrf=/);
});

test('csrf: config rejections — missing or empty key, negative expires, bad phase, bad name', () => {
  assertSchemaRejects(() => instantiate(csrf, {}), 'key');
  assertSchemaRejects(() => instantiate(csrf, { key: '' }), 'key');
  assertSchemaRejects(() => instantiate(csrf, { key: 'k', expires: -1 }), 'expires');
  assertSchemaRejects(() => instantiate(csrf, { key: 'k', phase: 'later' }), 'phase');
  assertSchemaRejects(() => instantiate(csrf, { key: 'k', name: 'bad name' }), 'name');
});
