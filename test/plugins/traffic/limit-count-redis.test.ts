/** limit-count and workflow with `policy: redis | kvstore` against a real redis-server. */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { closeAllStores } from '../../../src/stores/index.js';
import { freePort } from '../../support/free-port.js';
import { spawnGateway, waitForHttp, type GatewayProcess } from '../../support/gateway-process.js';
import { request } from '../../support/http.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { skipWithoutRedis, startRedis, type RedisServer } from '../../support/redis.js';
import { tempDir } from '../../support/temp-dir.js';

const skip = skipWithoutRedis();
let redis: RedisServer;
const gateways: RunningGateway[] = [];
const processes: GatewayProcess[] = [];
const dirs: { remove(): void }[] = [];

before(async () => {
  if (skip === false) redis = await startRedis();
});

after(async () => {
  await Promise.all(processes.map((p) => p.stop()));
  await Promise.all(gateways.map((g) => g.stop()));
  await closeAllStores();
  for (const dir of dirs) dir.remove();
  await redis?.stop();
});

/** One route through a limit node (YAML lines under `nodes:`) to a mocking answer. */
const limitedYaml = (url: string, limitNode: string, extraPorts: string[] = []) => `
stores:
  - { name: main, type: redis, url: "${url}", connect_timeout_ms: 500, connect_budget_ms: 1000 }
routes:
  - { name: ready, match: { path: /ready }, policy: ready }
  - { name: r, match: { path: /* }, policy: p }
policies:
  - name: ready
    nodes:
      - { id: listener, type: listener }
      - { id: ok, type: mocking, config: { response_example: ready, content_type: text/plain } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: ok.in }
      - { from: ok.success, to: client.in }
  - name: p
    nodes:
      - { id: listener, type: listener }
${limitNode}
      - { id: ok, type: mocking, config: { response_example: ok, content_type: text/plain } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: limit.in }
      - { from: limit.success, to: ok.in }
      - { from: limit.limited, to: client.in }
${extraPorts.map((p) => `      - { from: limit.${p}, to: client.in }`).join('\n')}
      - { from: ok.success, to: client.in }
`;

const limitCountNode = (extra: string) =>
  `      - { id: limit, type: limit-count, config: { count: 3, time_window: 60, policy: redis, store: main, rejected_code: 429${extra} } }`;

async function statuses(url: string, n: number, headers: Record<string, string> = {}): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await request(url, { headers })).status);
  return out;
}

test(
  'limit-count redis: count requests pass, then 429; the quota headers come from the store',
  { skip },
  async () => {
    const gw = await startGateway(limitedYaml(redis.url, limitCountNode(", key: '$http_x_user'")));
    gateways.push(gw);
    const first = await request(`${gw.url}/a`, { headers: { 'x-user': 'alice' } });
    assert.equal(first.status, 200);
    assert.equal(first.headers['x-ratelimit-limit'], '3');
    assert.equal(first.headers['x-ratelimit-remaining'], '2');
    assert.equal(first.headers['x-ratelimit-reset'], '60');
    assert.deepEqual(await statuses(`${gw.url}/a`, 3, { 'x-user': 'alice' }), [200, 200, 429]);
    assert.deepEqual(await statuses(`${gw.url}/a`, 1, { 'x-user': 'bob' }), [200], 'another key');
  },
);

test('limit-count kvstore: policy kvstore is the same backend and its window resets', { skip }, async () => {
  const gw = await startGateway(
    limitedYaml(
      redis.url,
      `      - { id: limit, type: limit-count, config: { count: 1, time_window: 1, policy: kvstore, store: main, key: reset-test, key_type: constant } }`,
    ),
  );
  gateways.push(gw);
  assert.deepEqual(await statuses(`${gw.url}/a`, 2), [200, 503]);
  // The key's own TTL ends the window; poll rather than sleep a fixed time.
  const deadline = Date.now() + 5000;
  let status = 503;
  while (status !== 200 && Date.now() < deadline) status = (await request(`${gw.url}/a`)).status;
  assert.equal(status, 200);
});

test(
  'limit-count redis: two gateway processes sharing one Redis enforce one limit exactly',
  { skip },
  async () => {
    const N = 5;
    const gatewayYaml = limitedYaml(
      redis.url,
      `      - { id: limit, type: limit-count, config: { count: ${N}, time_window: 60, policy: redis, store: main, key: shared, key_type: constant, rejected_code: 429 } }`,
    );
    const urls: string[] = [];
    for (let i = 0; i < 2; i++) {
      const dir = tempDir();
      dirs.push(dir);
      const port = await freePort();
      writeFileSync(
        join(dir.path, 'system.yaml'),
        `listener: { bind: 127.0.0.1, port: ${port} }\nlogging: { level: info }\ntimeouts: { shutdown_timeout_seconds: 2 }\n`,
      );
      writeFileSync(join(dir.path, 'gateway.yaml'), gatewayYaml);
      processes.push(
        spawnGateway([
          '--system-config',
          join(dir.path, 'system.yaml'),
          '--gateway-config',
          join(dir.path, 'gateway.yaml'),
        ]),
      );
      urls.push(`http://127.0.0.1:${port}`);
    }
    try {
      await Promise.all(urls.map((u) => waitForHttp(`${u}/ready`, 30000)));
    } catch (err) {
      const states = processes.map((p) => `exit ${String(p.child.exitCode)}: ${p.output()}`);
      throw new Error(`${(err as Error).message}\n${states.join('\n')}`, { cause: err });
    }
    const answers = await Promise.all(
      Array.from({ length: 4 * N }, (_, i) => request(`${urls[i % 2] ?? ''}/x`).then((r) => r.status)),
    );
    assert.equal(answers.filter((s) => s === 200).length, N, `answers: ${answers.join(',')}`);
    assert.equal(answers.filter((s) => s === 429).length, 3 * N);
  },
);

test(
  'limit-count redis: with Redis stopped, allow_degradation false fails with RATE_LIMIT_UNAVAILABLE; true lets requests through',
  { skip },
  async () => {
    // The error port is wired to the client so the node's own error body is what the caller sees.
    const closed = await startGateway(
      limitedYaml(redis.url, limitCountNode(', key: closed-key, key_type: constant'), ['error']),
    );
    const open = await startGateway(
      limitedYaml(redis.url, limitCountNode(', key: open-key, key_type: constant, allow_degradation: true')),
    );
    gateways.push(closed, open);
    assert.equal((await request(`${closed.url}/a`)).status, 200, 'Redis up');
    assert.equal((await request(`${open.url}/a`)).status, 200, 'Redis up');
    await redis.stop();
    try {
      const failed = await request(`${closed.url}/a`);
      assert.equal(failed.status, 500);
      assert.deepEqual(JSON.parse(failed.body), {
        error: 'internal_error',
        message: 'failed to limit count: the counter store failed',
      });
      const degraded = await request(`${open.url}/a`);
      assert.equal(degraded.status, 200);
      assert.equal(degraded.body, 'ok');
      assert.equal(degraded.headers['x-ratelimit-limit'], undefined, 'no quota is known while degraded');
    } finally {
      await redis.start();
    }
    const deadline = Date.now() + 5000;
    let status = 0;
    while (status !== 200 && Date.now() < deadline) status = (await request(`${closed.url}/a`)).status;
    assert.equal(status, 200, 'counting resumes once Redis is back');
  },
);

test(
  'workflow redis: a nested limit-count with policy redis counts in the store and fails closed with RATE_LIMIT_ERROR',
  { skip },
  async () => {
    const node = `      - id: limit
        type: workflow
        config:
          rules:
            - actions: [["limit-count", { count: 2, time_window: 60, policy: redis, store: main, key: wf, key_type: constant, rejected_code: 429 }]]`;
    const a = await startGateway(limitedYaml(redis.url, node, ['denied', 'error']));
    const b = await startGateway(limitedYaml(redis.url, node, ['denied', 'error']));
    gateways.push(a, b);
    assert.equal((await request(`${a.url}/x`)).status, 200);
    assert.equal((await request(`${b.url}/x`)).status, 200);
    assert.equal((await request(`${a.url}/x`)).status, 429, 'both gateways count in one window');
    await redis.stop();
    try {
      const failed = await request(`${b.url}/x`);
      assert.equal(failed.status, 500);
      assert.deepEqual(JSON.parse(failed.body), {
        error: 'internal_error',
        message: 'workflow limit-count: the counter store failed',
      });
    } finally {
      await redis.start();
    }
  },
);
