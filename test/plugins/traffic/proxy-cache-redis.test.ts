/** proxy-cache with `policy: redis | kvstore` against a real redis-server (COMPAT E2E-CACHE-02). */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { closeAllStores } from '../../../src/stores/index.js';
import { StoreResponseCache } from '../../../src/plugins/traffic/store-cache.js';
import { openStores } from '../../../src/stores/index.js';
import { read, startAdmin, type AdminHarness } from '../../admin/harness.js';
import { request } from '../../support/http.js';
import { startOrigin, type Origin } from '../../support/origins.js';
import { skipWithoutRedis, startRedis, type RedisServer } from '../../support/redis.js';

const skip = skipWithoutRedis();
let redis: RedisServer;
let origin: Origin;
const harnesses: AdminHarness[] = [];

before(async () => {
  if (skip !== false) return;
  redis = await startRedis();
  origin = await startOrigin((req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'x-origin': 'yes' });
    res.end(`fresh ${req.url ?? ''} #${origin.requests.length}`);
  });
});

after(async () => {
  await Promise.all(harnesses.map((h) => h.stop()));
  await closeAllStores();
  await origin?.close();
  await redis?.stop();
});

/** Two policies (two routes) caching into one namespace of the shared store; the key is the query `k`. */
const gatewayYaml = (url: string, port: number, policy = 'redis') => {
  const cached = (name: string) => `
  - name: ${name}
    nodes:
      - { id: listener, type: listener }
      - { id: lookup, type: proxy-cache, config: { phase: lookup, id: catalog, policy: ${policy}, store: main, cache_key: ["$arg_k"] } }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }] } }
      - { id: store, type: proxy-cache, config: { phase: store, id: catalog, policy: ${policy}, store: main, cache_key: ["$arg_k"], max_object_bytes: 64 } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: lookup.in }
      - { from: lookup.success, to: up.in }
      - { from: lookup.hit, to: client.in }
      - { from: up.success, to: store.in }
      - { from: store.success, to: client.in }
      - { from: store.hit, to: client.in }`;
  return `
stores:
  - { name: main, type: redis, url: "${url}", connect_timeout_ms: 500, connect_budget_ms: 1000 }
routes:
  - { name: a, match: { path: /a/* }, policy: policy-a }
  - { name: b, match: { path: /b/* }, policy: policy-b }
policies:${cached('policy-a')}${cached('policy-b')}
`;
};

async function gateway(policy = 'redis'): Promise<AdminHarness> {
  const h = await startAdmin({ gatewayYaml: gatewayYaml(redis.url, origin.port, policy) });
  harnesses.push(h);
  return h;
}

const status = (r: { headers: Record<string, unknown> }) => r.headers['switchyard-cache-status'];

test(
  'proxy-cache redis: an entry round-trips through the store, binary body and repeated headers intact',
  { skip },
  async () => {
    const issues: { path: string; message: string }[] = [];
    const stores = openStores([{ name: 'main', type: 'redis', url: redis.url }], { env: {} }, issues);
    try {
      const store = stores.get('main');
      assert.ok(store !== undefined, JSON.stringify(issues));
      const cache = new StoreResponseCache(store);
      const body = Buffer.from([0, 1, 2, 255, 254, 10, 13]);
      const entry = {
        status: 203,
        headers: { 'x-multi': ['a', 'b'], 'content-type': 'application/octet-stream' },
        body,
        storedAt: 42,
      };
      await cache.put('roundtrip\u0001k', entry, 60);
      assert.deepEqual(await cache.get('roundtrip\u0001k'), entry);
      assert.equal(await cache.get('roundtrip\u0001missing'), undefined);
      await store.set('cache:roundtrip\u0001bad', 'not json', 60);
      assert.equal(await cache.get('roundtrip\u0001bad'), 'invalid');
    } finally {
      stores.release();
    }
  },
);

test(
  'proxy-cache redis: E2E-CACHE-02 two policies share one cache entry by id + key + store',
  { skip },
  async () => {
    const h = await gateway();
    const miss = await request(`${h.data}/a/1?k=shared`);
    assert.equal(status(miss), 'MISS');
    const other = await request(`${h.data}/b/2?k=shared`);
    assert.equal(status(other), 'HIT', "policy-b serves policy-a's entry");
    assert.equal(other.body, miss.body);
    assert.equal(other.headers['x-origin'], 'yes');
    assert.equal(status(await request(`${h.data}/b/2?k=other`)), 'MISS', 'another key');
  },
);

test(
  'proxy-cache redis: two gateways naming one store share entries; kvstore is redis',
  { skip },
  async () => {
    const one = await gateway();
    const two = await gateway('kvstore');
    const miss = await request(`${one.data}/a/x?k=across`);
    assert.equal(status(miss), 'MISS');
    const hit = await request(`${two.data}/a/x?k=across`);
    assert.equal(status(hit), 'HIT');
    assert.equal(hit.body, miss.body);
  },
);

test(
  'proxy-cache redis: DELETE /api/cache/{id} on one gateway purges the store for every gateway',
  { skip },
  async () => {
    const one = await gateway();
    const two = await gateway();
    await request(`${one.data}/a/x?k=purge-me`);
    assert.equal(status(await request(`${two.data}/a/x?k=purge-me`)), 'HIT');
    const { status: code, body } = await read(await one.call('DELETE', '/api/cache/catalog'));
    assert.equal(code, 200);
    const purged = (body as { purged: { backend: string; store?: string; removed: number }[] }).purged;
    assert.equal(purged.length, 1, 'the two policies share one store backend: purged once');
    assert.equal(purged[0]?.backend, 'redis');
    assert.equal(purged[0]?.store, 'main');
    assert.ok((purged[0]?.removed ?? 0) >= 1);
    assert.equal(status(await request(`${two.data}/a/x?k=purge-me`)), 'MISS', 'purged cluster-wide');
  },
);

test('proxy-cache redis: an oversize body is served, skipped and counted', { skip }, async () => {
  const h = await gateway();
  const big = await request(`${h.data}/a/${'x'.repeat(80)}?k=big`);
  assert.equal(big.status, 200);
  assert.equal(status(big), 'MISS');
  assert.equal(status(await request(`${h.data}/a/${'x'.repeat(80)}?k=big`)), 'MISS', 'never stored');
  const metrics = await (await h.call('GET', '/metrics')).text();
  assert.match(metrics, /gateway_cache_events_total\{backend="redis",store="main",event="size_skip"\} [1-9]/);
});

test(
  'proxy-cache redis: with Redis stopped a lookup is a miss and the request is still served; purges report 502',
  { skip },
  async () => {
    const h = await gateway();
    await request(`${h.data}/a/outage?k=outage`);
    assert.equal(status(await request(`${h.data}/a/outage?k=outage`)), 'HIT');
    await redis.stop();
    try {
      const served = await request(`${h.data}/a/outage?k=outage`);
      assert.equal(served.status, 200);
      assert.match(served.body, /^fresh \/a\/outage/);
      assert.equal(status(served), 'MISS');
      const metrics = await (await h.call('GET', '/metrics')).text();
      assert.match(
        metrics,
        /gateway_cache_events_total\{backend="redis",store="main",event="backend_error"\} [1-9]/,
      );
      const purge = await read(await h.call('DELETE', '/api/cache/catalog'));
      assert.equal(purge.status, 502);
      const body = purge.body as { error: string; id: string; purged: unknown[]; message: string };
      assert.equal(body.error, 'cache_purge_failed');
      assert.equal(body.id, 'catalog');
      assert.deepEqual(body.purged, []);
      assert.match(body.message, /store 'main'/);
    } finally {
      await redis.start();
    }
  },
);
