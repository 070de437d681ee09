/**
 * F33 (shared/reports/operator-review.md): with Redis down the log said only `node failed: failed
 * to limit count: the counter store failed`, and a Bearer token sent to /api/* was logged as
 * `admin login failed user "(undecodable)"`. These tests run the real CLI and read its JSON log.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { spawnGateway, type GatewayProcess } from '../support/gateway-process.js';
import { request } from '../support/http.js';
import { skipWithoutRedis, startRedis, type RedisServer } from '../support/redis.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const cleanups: (() => Promise<unknown> | void)[] = [];
after(async () => {
  for (const done of cleanups.reverse()) await done();
});

const PASSWORD = 'f33-admin-password';

type Line = Record<string, unknown>;
const lines = (p: GatewayProcess): Line[] =>
  p
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Line);

/** Starts the CLI on port 0 (data plane and admin) and reads the ports back from its log. */
async function start(gatewayYaml: string): Promise<{ p: GatewayProcess; data: string; admin: string }> {
  const dir = tempDir('switchyard-f33-');
  cleanups.push(() => dir.remove());
  const system = join(dir.path, 'system.yaml');
  const gateway = join(dir.path, 'gateway.yaml');
  writeFileSync(
    system,
    [
      'listener: { bind: 127.0.0.1, port: 0 }',
      `admin: { bind: 127.0.0.1, port: 0, username: admin, password: "${PASSWORD}" }`,
      'timeouts: { shutdown_timeout_seconds: 2 }',
      '',
    ].join('\n'),
  );
  writeFileSync(gateway, gatewayYaml);
  const p = spawnGateway(['--system-config', system, '--gateway-config', gateway]);
  cleanups.push(() => p.stop('SIGKILL'));
  const portOf = (msg: string) => lines(p).find((l) => l.msg === msg)?.port;
  await waitFor(
    () => portOf('admin API listening') !== undefined && portOf('data plane listening') !== undefined,
    {
      timeoutMs: 90_000,
      what: `the gateway listening\n${p.output()}`,
    },
  );
  return {
    p,
    data: `http://127.0.0.1:${String(portOf('data plane listening'))}`,
    admin: `http://127.0.0.1:${String(portOf('admin API listening'))}`,
  };
}

const limited = (redisUrl: string) => `
stores:
  - { name: counters, type: redis, url: "${redisUrl}" }
routes:
  - { name: r, match: { path: /x }, policy: p }
policies:
  - name: p
    nodes:
      - { id: listener, type: listener }
      - { id: quota, type: limit-count, config: { count: 100, time_window: 60, policy: redis, store: counters } }
      - { id: m, type: mocking, config: { response_example: ok } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: quota.in }
      - { from: quota.success, to: m.in }
      - { from: quota.limited, to: client.in }
      - { from: m.success, to: client.in }
`;

test(
  'F33: with Redis down, the node-failed log line names the store, the address and the cause (ECONNREFUSED)',
  { skip: skipWithoutRedis() },
  async () => {
    const redis: RedisServer = await startRedis();
    cleanups.push(() => redis.stop());
    const { p, data } = await start(limited(redis.url));
    assert.equal((await request(`${data}/x`)).status, 200);
    await redis.stop();

    const failed = () => lines(p).filter((l) => l.code === 'RATE_LIMIT_UNAVAILABLE');
    const address = `127.0.0.1:${redis.port}`;
    // The first request after the outage may meet the closing connection; a later one meets the refusal.
    await waitFor(
      async () => {
        assert.equal((await request(`${data}/x`)).status, 500);
        return failed().some((l) => String(l.msg).includes('ECONNREFUSED'));
      },
      { timeoutMs: 30_000, what: 'a log line with ECONNREFUSED' },
    );
    for (const line of failed()) {
      assert.equal(line.store, 'counters', JSON.stringify(line));
      assert.match(
        String(line.msg),
        /^node failed: failed to limit count: the counter store failed: store 'counters': /,
      );
      assert.ok(String(line.msg).includes(address), `the address is named: ${String(line.msg)}`);
      assert.equal(typeof line.cause, 'string');
    }
    const refused = failed().find((l) => String(l.msg).includes('ECONNREFUSED'));
    assert.ok(String(refused?.cause).includes(`ECONNREFUSED ${address}`), String(refused?.cause));
  },
);

test('F33: a Bearer token sent to /api/* is logged as "bearer token not accepted here", never as an undecodable user', async () => {
  const { p, admin } = await start(limited('redis://127.0.0.1:1'));
  const token = 'metrics-token-that-must-not-be-logged';
  const res = await request(`${admin}/api/routes`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(res.status, 401);
  const basicGarbage = await request(`${admin}/api/routes`, { headers: { authorization: 'Basic %%%' } });
  assert.equal(basicGarbage.status, 401);
  await waitFor(() => lines(p).filter((l) => String(l.msg).startsWith('admin login failed')).length >= 2, {
    what: 'two failed-login lines',
  });
  const [bearer, basic] = lines(p).filter((l) => String(l.msg).startsWith('admin login failed'));
  assert.equal(
    bearer?.msg,
    'admin login failed: bearer token not accepted here (the Admin API takes HTTP Basic credentials)',
  );
  assert.equal(bearer.scheme, 'bearer');
  assert.equal(bearer.user, undefined);
  // A malformed Basic header is still an undecodable user name.
  assert.equal(basic?.msg, 'admin login failed');
  assert.equal(basic.user, '(undecodable)');
  assert.ok(!p.output().includes(token), 'the token is never logged');
});
