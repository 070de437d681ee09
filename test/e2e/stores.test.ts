import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { parseGatewayConfig } from '../../src/config/gateway.js';
import { ConfigRejected } from '../../src/config/schema-validate.js';
import { Gateway } from '../../src/gateway.js';
import { parseSystemConfig } from '../../src/config/system.js';
import { silentLogger } from '../../src/core/logger.js';
import { openConnectionCount } from '../../src/stores/index.js';
import { read, startAdmin, type AdminHarness } from '../admin/harness.js';
import { request } from '../support/http.js';
import { startGateway } from '../support/in-process.js';
import { skipWithoutRedis, startRedis, type RedisServer } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

const reply = (id: string, body: string, status = 200): string =>
  `{ id: ${id}, type: mocking, config: { response_example: '${body}', response_status: ${status}, content_type: text/plain } }`;

/** GET/PUT/DELETE /kv/<key> and GET /count/<key> over store nodes on store `main`. */
const KV_YAML = `
stores:
  - name: main
    type: redis
    url: \${REDIS_URL}
routes:
  - { name: kv-get, match: { path: /kv/*, methods: [GET] }, policy: kv-get }
  - { name: kv-put, match: { path: /kv/*, methods: [PUT] }, policy: kv-put }
  - { name: kv-del, match: { path: /kv/*, methods: [DELETE] }, policy: kv-del }
  - { name: count, match: { path: /count/* }, policy: count }
policies:
  - name: kv-get
    nodes:
      - { id: in, type: listener }
      - { id: get, type: store-get, config: { store: main, key: '{{request.path}}', name: v } }
      - ${reply('found', '{{message.v}}')}
      - ${reply('missing', 'miss', 404)}
      - { id: out, type: client }
    edges:
      - { from: in.out, to: get.in }
      - { from: get.success, to: found.in }
      - { from: get.miss, to: missing.in }
      - { from: found.success, to: out.in }
      - { from: missing.success, to: out.in }
      - { from: get.error, to: out.in }
  - name: kv-put
    nodes:
      - { id: in, type: listener }
      - { id: set, type: store-set, config: { store: main, key: '{{request.path}}', value: '{{request.body}}' } }
      - ${reply('ok', 'stored', 201)}
      - { id: out, type: client }
    edges:
      - { from: in.out, to: set.in }
      - { from: set.success, to: ok.in }
      - { from: ok.success, to: out.in }
  - name: kv-del
    nodes:
      - { id: in, type: listener }
      - { id: del, type: store-delete, config: { store: main, key: '{{request.path}}' } }
      - ${reply('ok', 'deleted')}
      - { id: out, type: client }
    edges:
      - { from: in.out, to: del.in }
      - { from: del.success, to: ok.in }
      - { from: ok.success, to: out.in }
  - name: count
    nodes:
      - { id: in, type: listener }
      - { id: incr, type: store-incr, config: { store: main, key: '{{request.path}}', ttl_seconds: 1, name: n } }
      - ${reply('ok', '{{message.n}}')}
      - { id: out, type: client }
    edges:
      - { from: in.out, to: incr.in }
      - { from: incr.success, to: ok.in }
      - { from: ok.success, to: out.in }
`;

describe('stores end to end', { skip: skipWithoutRedis() }, () => {
  let redis: RedisServer;
  let raw: Redis;
  let h: AdminHarness;

  before(async () => {
    redis = await startRedis();
    raw = new Redis(redis.url);
    h = await startAdmin({ gatewayYaml: KV_YAML, env: { REDIS_URL: redis.url } });
  });
  after(async () => {
    await h.stop();
    raw.disconnect();
    await redis.stop();
  });

  test('E2E-STORE-10: store-get miss 404, store-set, hit, store-delete, miss again', async () => {
    assert.equal((await request(`${h.data}/kv/a`)).status, 404);
    const put = await request(`${h.data}/kv/a`, { method: 'PUT', body: 'value-a' });
    assert.equal(put.status, 201);
    const hit = await request(`${h.data}/kv/a`);
    assert.equal(hit.status, 200);
    assert.equal(hit.body, 'value-a');
    assert.equal(await raw.get('sy:kv:/kv/a'), 'value-a');
    assert.equal((await request(`${h.data}/kv/a`, { method: 'DELETE' })).status, 200);
    assert.equal((await request(`${h.data}/kv/a`)).status, 404);
  });

  test('E2E-STORE-11: the templated key is rendered per request', async () => {
    await request(`${h.data}/kv/x`, { method: 'PUT', body: 'X' });
    await request(`${h.data}/kv/y`, { method: 'PUT', body: 'Y' });
    assert.equal((await request(`${h.data}/kv/x`)).body, 'X');
    assert.equal((await request(`${h.data}/kv/y`)).body, 'Y');
  });

  test('E2E-STORE-12: store-incr counts 1, 2, then 1 once the pinned TTL ran out', async () => {
    assert.equal((await request(`${h.data}/count/c`)).body, '1');
    assert.equal((await request(`${h.data}/count/c`)).body, '2');
    await waitFor(async () => (await raw.exists('sy:kv:/count/c')) === 0, { what: 'the counter to expire' });
    assert.equal((await request(`${h.data}/count/c`)).body, '1');
  });

  test('E2E-STORE-13: upstream → store-set → client validates with empty buffering', async () => {
    const res = await h.call('POST', '/api/policies/validate', {
      name: 'record',
      nodes: [
        { id: 'in', type: 'listener' },
        { id: 'up', type: 'upstream', config: { targets: [{ host: '127.0.0.1', port: 9 }] } },
        {
          id: 'rec',
          type: 'store-set',
          config: { store: 'main', key: 'last', value: '{{response.status}}' },
        },
        { id: 'out', type: 'client' },
      ],
      edges: [
        { from: 'in.out', to: 'up.in' },
        { from: 'up.success', to: 'rec.in' },
        { from: 'rec.success', to: 'out.in' },
      ],
    });
    const { body } = await read(res);
    assert.equal(res.status, 200);
    assert.deepEqual((body as { valid: boolean; buffering: unknown[] }).valid, true);
    assert.deepEqual((body as { buffering: unknown[] }).buffering, []);
  });

  test('stores: POST /api/stores/:name/ping reports latency and version; unknown store 404', async () => {
    const { status, body } = await read(await h.call('POST', '/api/stores/main/ping'));
    assert.equal(status, 200);
    const ping = body as { status: string; latency_ms: number; version: string };
    assert.equal(ping.status, 'ok');
    assert.equal(typeof ping.latency_ms, 'number');
    assert.match(ping.version, /^\d+\.\d+/);
    assert.equal((await h.call('POST', '/api/stores/nope/ping')).status, 404);
  });

  test('stores: a store outage answers 503 STORE_ERROR on the data plane and 502 on ping', async () => {
    await redis.stop();
    try {
      const res = await request(`${h.data}/kv/a`);
      assert.equal(res.status, 503);
      assert.equal((JSON.parse(res.body) as { error: string }).error, 'service_unavailable');
      assert.equal((await h.call('POST', '/api/stores/main/ping')).status, 502);
    } finally {
      await redis.start();
    }
    await waitFor(async () => (await request(`${h.data}/kv/a`)).status === 404, {
      what: 'the store to return',
    });
  });

  test('stores: a reload that keeps the store keeps its connection', async () => {
    const before = openConnectionCount();
    const res = await h.call('POST', '/api/routes', {
      name: 'extra',
      match: { path: '/extra' },
      policy: 'kv-get',
    });
    assert.equal(res.status, 201);
    assert.equal(openConnectionCount(), before);
    assert.equal((await request(`${h.data}/extra`)).status, 404);
  });
});

describe('stores: compile-time checks', () => {
  test('stores: shutdown closes the store connections of the running configuration', async () => {
    const base = openConnectionCount();
    const gw = await startGateway(
      'stores: [{ name: s, type: redis, url: "redis://127.0.0.1:6398", key_prefix: shutdown }]\n',
    );
    assert.equal(openConnectionCount(), base + 1);
    await gw.stop();
    assert.equal(openConnectionCount(), base);
  });

  test('stores: an unknown store name fails compilation at the node', () => {
    const yaml = `
routes: [{ name: r, match: { path: /a }, policy: p }]
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: get, type: store-get, config: { store: ghost, key: k, name: v } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: get.in }
      - { from: get.success, to: out.in }
      - { from: get.miss, to: out.in }
`;
    try {
      Gateway.create(
        {
          system: parseSystemConfig('listener: { bind: 127.0.0.1, port: 0 }\n'),
          logger: silentLogger,
          env: {},
        },
        parseGatewayConfig(yaml),
      );
      assert.fail('expected a rejection');
    } catch (err) {
      assert.ok(err instanceof ConfigRejected, String(err));
      const issue = err.issues.find((i) => i.path === 'policies[0].nodes[1].config.store');
      assert.ok(issue, JSON.stringify(err.issues));
      assert.match(issue.message, /unknown store 'ghost'/);
    }
  });
});
