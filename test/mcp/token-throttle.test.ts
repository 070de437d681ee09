import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { READ_TOKEN, startMcp, type McpHarness } from './harness.js';

const LIST_TOOLS = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });

/** One MCP POST with `token` from `localAddress`; the status and Retry-After it got. */
function post(
  endpoint: string,
  token: string | undefined,
  localAddress = '127.0.0.1',
): Promise<{ status: number; retryAfter: string | undefined }> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  };
  if (token !== undefined) headers['authorization'] = `Bearer ${token}`;
  return new Promise((resolve, reject) => {
    const req = httpRequest(endpoint, { method: 'POST', headers, localAddress, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] }));
    });
    req.on('error', reject);
    req.end(LIST_TOOLS);
  });
}

describe('mcp: wrong bearer tokens are throttled like admin logins', () => {
  let h: McpHarness;
  before(async () => {
    h = await startMcp({ admin: 'login_throttle: { max_failures: 3, lock_seconds: 60 }' });
  });
  after(() => h.stop());

  test('mcp M1: guessing tokens locks the address (429 + Retry-After, even the right token); others unaffected', async () => {
    assert.equal((await post(h.endpoint, READ_TOKEN)).status, 200);
    assert.equal((await post(h.endpoint, undefined)).status, 401, 'no token is not a guess');
    assert.equal((await post(h.endpoint, undefined)).status, 401);
    assert.equal((await post(h.endpoint, 'guess-1')).status, 401);
    assert.equal((await post(h.endpoint, 'guess-2')).status, 401);
    const third = await post(h.endpoint, 'guess-3');
    assert.equal(third.status, 429);
    assert.ok(Number(third.retryAfter) > 0);
    const right = await post(h.endpoint, READ_TOKEN);
    assert.equal(right.status, 429, 'the right token from a locked address is refused');
    assert.equal((await post(h.endpoint, READ_TOKEN, '127.0.0.2')).status, 200, 'another address');
  });
});
