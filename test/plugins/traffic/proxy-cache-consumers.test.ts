/**
 * proxy-cache behind key-auth and limit-count: what an entry holds (F5) and what the key
 * must name so one consumer's answer is not served to another (F34). Both backends.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { closeAllStores } from '../../../src/stores/index.js';
import { request, type SimpleResponse } from '../../support/http.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { startOrigin, type Origin } from '../../support/origins.js';
import { skipWithoutRedis, startRedis, type RedisServer } from '../../support/redis.js';

const noRedis = skipWithoutRedis();
let redis: RedisServer | undefined;
let origin: Origin;
const gateways: RunningGateway[] = [];

before(async () => {
  if (noRedis === false) redis = await startRedis();
  // The answer names the consumer key-auth forwarded, and carries one header of the origin's own.
  origin = await startOrigin((req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'x-origin': 'yes' });
    res.end(`${req.url ?? ''} for ${String(req.headers['x-consumer-username'])}`);
  });
});

after(async () => {
  await Promise.all(gateways.map((g) => g.stop()));
  await closeAllStores();
  await origin?.close();
  await redis?.stop();
});

const DEFAULT_KEY = '["$request_method", "$host", "$uri"]';
const CONSUMER_KEY = '["$request_method", "$host", "$uri", "$consumer_name"]';

/**
 * listener → key-auth → limit-count (10 per consumer, headers on) → lookup → upstream → store →
 * a response-rewrite naming the consumer (after the store half: not part of the entry).
 * A request with `x-peek: 1` goes to a policy holding only a lookup of the same namespace, with
 * no limit node: what it answers on a hit is exactly what the entry holds.
 */
function gatewayYaml(id: string, backend: 'local' | 'redis', cacheKey: string): string {
  const where = backend === 'redis' ? 'policy: redis, store: main' : 'policy: local';
  return `
${redis === undefined ? '' : `stores:\n  - { name: main, type: redis, url: "${redis.url}" }`}
consumers:
  - { name: alice, credentials: { key-auth: { key: alice-key } } }
  - { name: bob, credentials: { key-auth: { key: bob-key } } }
routes:
  - { name: peek, match: { path: /items/*, headers: { x-peek: "1" } }, policy: peek }
  - { name: items, match: { path: /items/* }, policy: items }
policies:
  - name: items
    nodes:
      - { id: listener, type: listener }
      - { id: auth, type: key-auth, config: { use_consumers: true } }
      - { id: quota, type: limit-count, config: { count: 10, time_window: 60, key: $consumer_name, policy: local } }
      - { id: lookup, type: proxy-cache, config: { phase: lookup, id: ${id}, ${where}, cache_key: ${cacheKey} } }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${origin.port} }] } }
      - { id: store, type: proxy-cache, config: { phase: store, id: ${id}, ${where}, cache_key: ${cacheKey} } }
      - { id: tag, type: response-rewrite, config: { headers: { set: { x-served-to: "{{message.consumer.name}}" } } } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: auth.in }
      - { from: auth.denied, to: client.in }
      - { from: auth.success, to: quota.in }
      - { from: quota.limited, to: client.in }
      - { from: quota.success, to: lookup.in }
      - { from: lookup.hit, to: client.in }
      - { from: lookup.success, to: up.in }
      - { from: up.success, to: store.in }
      - { from: store.success, to: tag.in }
      - { from: store.hit, to: client.in }
      - { from: tag.success, to: client.in }
  - name: peek
    nodes:
      - { id: listener, type: listener }
      - { id: lookup, type: proxy-cache, config: { phase: lookup, id: ${id}, ${where}, cache_key: ${DEFAULT_KEY} } }
      - { id: none, type: mocking, config: { response_status: 404, content_type: text/plain, response_example: not cached } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: lookup.in }
      - { from: lookup.hit, to: client.in }
      - { from: lookup.success, to: none.in }
      - { from: none.success, to: client.in }
`;
}

async function gateway(id: string, backend: 'local' | 'redis', cacheKey = DEFAULT_KEY): Promise<string> {
  const running = await startGateway(gatewayYaml(id, backend, cacheKey));
  gateways.push(running);
  return running.url;
}

const as = (url: string, key: string, extra: Record<string, string> = {}): Promise<SimpleResponse> =>
  request(url, { headers: { 'x-api-key': key, ...extra } });

/** Cache status, remaining quota and body, in one string to compare. */
const seen = (r: SimpleResponse): string =>
  `${String(r.headers['switchyard-cache-status'])} remaining=${String(r.headers['x-ratelimit-remaining'])} ${r.body}`;

const quotaHeaders = (headers: object): string[] =>
  Object.keys(headers).filter((n) => /^x-ratelimit-/i.test(n));

for (const backend of ['local', 'redis'] as const) {
  const skip = backend === 'redis' ? noRedis : false;

  test(
    `F5: proxy-cache ${backend}: a hit carries the quota headers of the consumer asking, and the entry holds none`,
    { skip },
    async () => {
      const id = `quota-${backend}`;
      const url = await gateway(id, backend);
      assert.equal(seen(await as(`${url}/items/1`, 'alice-key')), 'MISS remaining=9 /items/1 for alice');
      // Bob spends two of his own ten first, so his remaining differs from the one alice's miss had.
      assert.equal(seen(await as(`${url}/items/warm`, 'bob-key')), 'MISS remaining=9 /items/warm for bob');
      assert.equal(seen(await as(`${url}/items/warm`, 'bob-key')), 'HIT remaining=8 /items/warm for bob');

      // The default key names no consumer: bob is served alice's answer (F34), with his own quota.
      const bobs = await as(`${url}/items/1`, 'bob-key');
      assert.equal(seen(bobs), 'HIT remaining=7 /items/1 for alice');
      assert.equal(bobs.headers['x-served-to'], undefined, 'a node after the store half is not replayed');
      assert.equal(bobs.headers['x-ratelimit-limit'], '10');
      assert.equal(bobs.headers['x-origin'], 'yes', "the upstream's own headers are replayed");
      assert.equal(seen(await as(`${url}/items/1`, 'alice-key')), 'HIT remaining=8 /items/1 for alice');

      const peek = await as(`${url}/items/1`, 'alice-key', { 'x-peek': '1' });
      assert.equal(peek.headers['switchyard-cache-status'], 'HIT');
      assert.equal(peek.headers['x-origin'], 'yes');
      assert.equal(peek.headers['content-type'], 'text/plain');
      assert.deepEqual(quotaHeaders(peek.headers), [], 'the entry holds no quota header');
      assert.equal(peek.headers['x-served-to'], undefined);
      assert.equal(origin.requests.filter((r) => r.url === '/items/1').length >= 1, true);

      if (backend === 'redis' && redis !== undefined) {
        const raw = new Redis(redis.url, { lazyConnect: true });
        try {
          await raw.connect();
          const keys = await raw.keys(`sy:cache:${id}\u0001*`);
          assert.equal(keys.length, 2, `one entry per uri: ${keys.join(', ')}`);
          for (const key of keys) {
            const entry = JSON.parse((await raw.get(key)) ?? 'null') as { h: Record<string, unknown> };
            assert.equal(entry.h['x-origin'], 'yes');
            assert.deepEqual(quotaHeaders(entry.h), [], `stored headers: ${JSON.stringify(entry.h)}`);
            assert.equal(entry.h['x-served-to'], undefined);
          }
        } finally {
          raw.disconnect();
        }
      }
    },
  );

  test(
    `F34: proxy-cache ${backend}: with $consumer_name in cache_key, alice's entry is not served to bob`,
    { skip },
    async () => {
      const url = await gateway(`per-consumer-${backend}`, backend, CONSUMER_KEY);
      const before = origin.requests.filter((r) => r.url === '/items/mine').length;
      assert.equal(
        seen(await as(`${url}/items/mine`, 'alice-key')),
        'MISS remaining=9 /items/mine for alice',
      );
      assert.equal(seen(await as(`${url}/items/mine`, 'bob-key')), 'MISS remaining=9 /items/mine for bob');
      assert.equal(seen(await as(`${url}/items/mine`, 'bob-key')), 'HIT remaining=8 /items/mine for bob');
      assert.equal(seen(await as(`${url}/items/mine`, 'alice-key')), 'HIT remaining=8 /items/mine for alice');
      assert.equal(
        origin.requests.filter((r) => r.url === '/items/mine').length - before,
        2,
        'one upstream answer per consumer',
      );
    },
  );
}
