/**
 * Log lines an operator needs to answer "who did what" (docs/logging.md):
 * an admin write names the user and the resource, a failed login names the
 * user and client but never the password, and a node failure carries the
 * client address and the request id. A real `switchyard` process, JSON logs.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { logLines, spawnedConfig, startSpawned, type SpawnedConfig } from './spawned.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { waitFor } from '../support/wait.js';

const SYSTEM = `
listener: { bind: 127.0.0.1, port: @DATA_PORT@ }
logging: { level: info, format: json }
admin: { bind: 127.0.0.1, port: @ADMIN_PORT@, username: ops, password: right-password }
`;

const GATEWAY = `
routes:
  - { name: boom, match: { path: /boom }, policy: boom-policy }
policies:
  - name: boom-policy
    nodes:
      - { id: in, type: listener }
      - { id: fn, type: serverless-pre-function, config: { functions: ['function execute(ctx) error("boom") end'] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: fn.in }
      - { from: fn.success, to: out.in }
`;

let config: SpawnedConfig;
let gw: GatewayProcess;
const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

before(async () => {
  config = await spawnedConfig(SYSTEM, GATEWAY);
  gw = await startSpawned(config);
});

after(async () => {
  await gw.stop();
  config.remove();
});

const line = async (msg: string | RegExp) => {
  let found: Record<string, unknown> | undefined;
  await waitFor(
    () => {
      found = logLines(gw.output()).find((l) =>
        typeof msg === 'string' ? l['msg'] === msg : msg.test(String(l['msg'])),
      );
      return found !== undefined;
    },
    { timeoutMs: 10_000, what: `log line ${String(msg)}` },
  );
  return found as Record<string, unknown>;
};

test('logs: an admin write names the user and the resource it changed', async () => {
  const res = await fetch(`http://127.0.0.1:${config.adminPort}/api/global-rules`, {
    method: 'GET',
    headers: { authorization: basic('ops', 'right-password') },
  });
  assert.equal(res.status, 200);
  const put = await fetch(`http://127.0.0.1:${config.adminPort}/api/routes/boom`, {
    method: 'PUT',
    headers: { authorization: basic('ops', 'right-password'), 'content-type': 'application/json' },
    body: JSON.stringify({ match: { path: '/boom' }, policy: 'boom-policy', description: 'audited' }),
  });
  assert.equal(put.status, 200);
  const entry = await line('admin write');
  assert.equal(entry['user'], 'ops');
  assert.equal(entry['method'], 'PUT');
  assert.equal(entry['resource'], '/api/routes/boom');
  assert.equal(
    logLines(gw.output()).filter((l) => l['msg'] === 'admin write').length,
    1,
    'reads are not logged as writes',
  );
});

test('logs: a failed admin login names the user and client, never the password', async () => {
  const res = await fetch(`http://127.0.0.1:${config.adminPort}/api/routes`, {
    headers: { authorization: basic('ops', 'Wrong-Guess-4711') },
  });
  assert.equal(res.status, 401);
  const entry = await line('admin login failed');
  assert.equal(entry['user'], 'ops');
  assert.equal(entry['client'], '127.0.0.1');
  assert.doesNotMatch(gw.output(), /Wrong-Guess-4711/);
});

test('logs: a node failure WARN carries the client address and the request id', async () => {
  const res = await fetch(`http://127.0.0.1:${config.dataPort}/boom`, {
    headers: { 'x-request-id': 'req-audit-42' },
  });
  assert.equal(res.status, 500);
  const entry = await line(/^node failed/);
  assert.equal(entry['node'], 'fn');
  assert.equal(entry['request_id'], 'req-audit-42');
  assert.equal(entry['client'], '127.0.0.1');
});
