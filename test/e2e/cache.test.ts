/** The local response cache end to end: COMPAT E2E-CACHE-01, -03, -04, -05 and the pair rules. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { request } from '../support/http.js';
import { startOrigin, type Origin } from '../support/origins.js';
import { read, startAdmin, type AdminHarness } from '../admin/harness.js';

let origin: Origin;
let h: AdminHarness;
let served = 0;

/** A lookup → upstream → store policy for `id`, plus a purge half on POST. */
const cachedPolicy = (name: string, id: string, port: number) => `
  - name: ${name}
    nodes:
      - { id: listener, type: listener }
      - { id: is-write, type: condition, config: { conditions: [["request_method", "==", "POST"]] } }
      - { id: lookup, type: proxy-cache, config: { phase: lookup, id: ${id} } }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }] } }
      - { id: store, type: proxy-cache, config: { phase: store, id: ${id}, cache_ttl: 60 } }
      - { id: write, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }] } }
      - { id: drop, type: proxy-cache, config: { phase: purge, id: ${id} } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: is-write.in }
      - { from: is-write.false, to: lookup.in }
      - { from: is-write.true, to: write.in }
      - { from: lookup.success, to: up.in }
      - { from: lookup.hit, to: client.in }
      - { from: up.success, to: store.in }
      - { from: store.success, to: client.in }
      - { from: store.hit, to: client.in }
      - { from: write.success, to: drop.in }
      - { from: drop.success, to: client.in }
      - { from: drop.hit, to: client.in }
`;

before(async () => {
  origin = await startOrigin((req, res) => {
    served++;
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`${req.method ?? ''} ${req.url ?? ''} #${served}`);
  });
  h = await startAdmin({
    gatewayYaml: `
routes:
  - { name: products, match: { path: /products/* }, policy: products }
policies:${cachedPolicy('products', 'products', origin.port)}`,
  });
});

after(async () => {
  await h.stop();
  await origin.close();
});

test('cache: E2E-CACHE-01 proxy-cache MISS then HIT; the upstream sees one request', async () => {
  const before = origin.requests.length;
  const miss = await request(`${h.data}/products/1`);
  assert.equal(miss.status, 200);
  assert.equal(miss.headers['switchyard-cache-status'], 'MISS');
  const hit = await request(`${h.data}/products/1`);
  assert.equal(hit.headers['switchyard-cache-status'], 'HIT');
  assert.equal(hit.body, miss.body);
  assert.equal(origin.requests.length - before, 1);
  const metrics = await (await h.call('GET', '/metrics')).text();
  assert.match(metrics, /gateway_cache_events_total\{backend="local",store="",event="hit"\} [1-9]/);
  assert.match(metrics, /gateway_cache_events_total\{backend="local",store="",event="miss"\} [1-9]/);
});

test('cache: E2E-CACHE-04 DELETE /api/cache/{id} purges this instance; an unknown id is 404', async () => {
  await request(`${h.data}/products/2`);
  assert.equal((await request(`${h.data}/products/2`)).headers['switchyard-cache-status'], 'HIT');
  const { status, body } = await read(await h.call('DELETE', '/api/cache/products'));
  assert.equal(status, 200);
  const purged = body as { id: string; purged: { backend: string; removed: number }[] };
  assert.equal(purged.id, 'products');
  assert.equal(purged.purged.length, 1);
  assert.equal(purged.purged[0]?.backend, 'local');
  assert.ok((purged.purged[0]?.removed ?? 0) >= 1);
  assert.equal((await request(`${h.data}/products/2`)).headers['switchyard-cache-status'], 'MISS');

  const unknown = await read(await h.call('DELETE', '/api/cache/prodcuts'));
  assert.equal(unknown.status, 404);
  assert.deepEqual(unknown.body, {
    error: 'not_found',
    message: "no proxy-cache pair with id 'prodcuts' in any policy",
  });
  assert.equal((await fetch(`${h.url}/api/cache/products`, { method: 'DELETE' })).status, 401);
});

test('cache: E2E-CACHE-05 a phase: purge node on the write path invalidates', async () => {
  await request(`${h.data}/products/3`);
  assert.equal((await request(`${h.data}/products/3`)).headers['switchyard-cache-status'], 'HIT');
  const write = await request(`${h.data}/products/3`, { method: 'POST', body: 'x' });
  assert.equal(write.status, 200);
  assert.equal((await request(`${h.data}/products/3`)).headers['switchyard-cache-status'], 'MISS');
});

test('cache: E2E-CACHE-03 validate proxy-cache redis without store → valid:false', async () => {
  const policy = {
    name: 'draft',
    nodes: [
      { id: 'in', type: 'listener' },
      { id: 'lookup', type: 'proxy-cache', config: { phase: 'lookup', id: 'x', policy: 'redis' } },
      { id: 'out', type: 'client' },
    ],
    edges: [
      { from: 'in.out', to: 'lookup.in' },
      { from: 'lookup.success', to: 'out.in' },
      { from: 'lookup.hit', to: 'out.in' },
    ],
  };
  const { status, body } = await read(await h.call('POST', '/api/policies/validate', policy));
  assert.equal(status, 200);
  const result = body as { valid: boolean; errors: string[] };
  assert.equal(result.valid, false);
  assert.match(result.errors.join('\n'), /store/);
});

const halvesPolicy = (lookup: Record<string, unknown>, store: Record<string, unknown> | undefined) => ({
  name: 'draft',
  nodes: [
    { id: 'in', type: 'listener' },
    { id: 'lookup', type: 'proxy-cache', config: { phase: 'lookup', ...lookup } },
    ...(store === undefined
      ? []
      : [{ id: 'store', type: 'proxy-cache', config: { phase: 'store', ...store } }]),
    { id: 'out', type: 'client' },
  ],
  edges: [
    { from: 'in.out', to: 'lookup.in' },
    { from: 'lookup.success', to: store === undefined ? 'out.in' : 'store.in' },
    { from: 'lookup.hit', to: 'out.in' },
    ...(store === undefined
      ? []
      : [
          { from: 'store.success', to: 'out.in' },
          { from: 'store.hit', to: 'out.in' },
        ]),
  ],
});

test('cache: validate reports a half without counterpart in cache_pairs and stays valid', async () => {
  const lone = await read(
    await h.call('POST', '/api/policies/validate', halvesPolicy({ id: 'solo' }, undefined)),
  );
  const result = lone.body as {
    valid: boolean;
    cache_pairs: { id: string; node: string; message: string }[];
  };
  assert.equal(result.valid, true);
  assert.deepEqual(
    result.cache_pairs.map(({ id, node }) => ({ id, node })),
    [{ id: 'solo', node: 'lookup' }],
  );
  const paired = await read(
    await h.call('POST', '/api/policies/validate', halvesPolicy({ id: 'duo' }, { id: 'duo' })),
  );
  assert.deepEqual((paired.body as { cache_pairs: unknown[] }).cache_pairs, []);
});

test('cache: halves that disagree on policy or store are rejected at compile time', async () => {
  await h.gateway.apply(
    (c) => ({
      ...c,
      stores: [{ name: 'main', type: 'redis', url: 'redis://127.0.0.1:1' }],
    }),
    'admin',
  );
  const mismatched = halvesPolicy({ id: 'mixed' }, { id: 'mixed', policy: 'redis', store: 'main' });
  const { body } = await read(await h.call('POST', '/api/policies/validate', mismatched));
  const result = body as { valid: boolean; errors: string[]; details: { path: string }[] };
  assert.equal(result.valid, false);
  assert.match(result.errors.join('\n'), /pair 'mixed'.*node 'store'.*'redis'.*node 'lookup'.*'local'/);
  assert.ok(result.details.some((d) => d.path.endsWith('config.policy')));
  const put = await h.call('PUT', '/api/policies/draft', mismatched);
  assert.equal(put.status, 400, 'a write with a mismatched pair is refused');
});
