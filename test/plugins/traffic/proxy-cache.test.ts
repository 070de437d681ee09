import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import type { Context } from '../../../src/core/context.js';
import { createGatewayScope } from '../../../src/observability/gateway-scope.js';
import type { GatewayScope } from '../../../src/core/plugin.js';
import { proxyCache } from '../../../src/plugins/traffic/proxy-cache.js';
import { LocalResponseCache } from '../../../src/plugins/traffic/local-cache.js';
import { GatewayMetrics } from '../../../src/observability/metrics.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { waitFor } from '../../support/wait.js';
import { cacheEvents } from './cache-helpers.js';
import {
  assertConfigError,
  assertSchemaRejects,
  bodyText,
  failsWith,
  runNow,
  templatedEnv,
} from '../../support/node-run.js';

function halves(
  extra: Record<string, unknown> = {},
  scope: GatewayScope<GatewayMetrics> = createGatewayScope(),
) {
  const make = (phase: string, nodeId: string) =>
    instantiate(proxyCache, { phase, id: 'products', ...extra }, templatedEnv({ nodeId, scope }));
  return {
    scope,
    lookup: make('lookup', 'lookup'),
    store: make('store', 'store'),
    purge: make('purge', 'purge'),
  };
}

/** What an upstream would leave on the context. */
function answered(
  ctx: Context,
  status = 200,
  body = 'payload',
  headers: Record<string, string> = {},
): Context {
  ctx.response.status = status;
  ctx.response.setBody(body, 'text/plain');
  Object.assign(ctx.response.headers, headers);
  return ctx;
}

const get = (url = '/items', init: Parameters<typeof requestContext>[0] = {}) =>
  requestContext({ url, ...init });

test('proxy-cache: a miss continues on success, the store half marks MISS and keeps the response; the next lookup leaves on hit', async () => {
  const { lookup, store, scope } = halves();
  const first = get();
  assert.equal(runNow(lookup, first), 'success');
  answered(first, 200, 'fresh', { 'x-origin': 'a', 'cache-control': 'max-age=60' });
  assert.equal(runNow(store, first), 'success');
  assert.equal(first.response.headers['switchyard-cache-status'], 'MISS');

  const second = get();
  assert.equal(runNow(lookup, second), 'hit');
  assert.equal(second.response.status, 200);
  assert.equal(bodyText(second), 'fresh');
  assert.equal(second.response.headers['x-origin'], 'a');
  assert.equal(second.response.headers['switchyard-cache-status'], 'HIT');
  assert.equal(second.response.headers['age'], '0');
  assert.equal(second.response.headers['cache-control'], 'max-age=60');
  assert.equal(second.errors.length, 0);
  assert.deepEqual(await cacheEvents(scope), { 'local//miss': 1, 'local//hit': 1 });
});

test('proxy-cache: the key is method + host + path by default; cache_key components are legacy $var templates', () => {
  const { lookup, store } = halves();
  const first = get('/items?page=1');
  runNow(lookup, first);
  runNow(store, answered(first));
  assert.equal(runNow(lookup, get('/items?page=2')), 'hit', 'the default key leaves the query out');
  assert.equal(runNow(lookup, get('/other')), 'success');
  assert.equal(runNow(lookup, get('/items', { host: 'other.test' })), 'success');
  assert.equal(runNow(lookup, get('/items', { method: 'HEAD' })), 'success');

  const keyed = halves({ cache_key: ['$request_uri', '{{request.headers.x-tenant}}'] });
  const tenant = (t: string, url = '/items?page=1') => get(url, { headers: { host: 'h', 'x-tenant': t } });
  const a = tenant('a');
  runNow(keyed.lookup, a);
  runNow(keyed.store, answered(a));
  assert.equal(runNow(keyed.lookup, tenant('a')), 'hit');
  assert.equal(runNow(keyed.lookup, tenant('b')), 'success');
  assert.equal(runNow(keyed.lookup, tenant('a', '/items?page=2')), 'success');
});

test('proxy-cache: the store half reuses the key the lookup computed before a rewrite', () => {
  const { lookup, store } = halves();
  const ctx = get('/before');
  runNow(lookup, ctx);
  ctx.request.path = '/after';
  runNow(store, answered(ctx));
  assert.equal(runNow(lookup, get('/before')), 'hit');
});

test('proxy-cache: only cache_method requests are looked up or stored', () => {
  const { lookup, store } = halves({ cache_method: ['GET'] });
  const post = get('/items', { method: 'POST' });
  assert.equal(runNow(lookup, post), 'success');
  runNow(store, answered(post));
  assert.equal(post.response.headers['switchyard-cache-status'], undefined);
  assert.equal(runNow(lookup, get('/items', { method: 'POST' })), 'success');
});

test('proxy-cache: only cache_http_statuses are stored (alias cache_http_status)', () => {
  for (const key of ['cache_http_statuses', 'cache_http_status']) {
    const { lookup, store } = halves({ [key]: [200] });
    const notFound = get();
    runNow(lookup, notFound);
    runNow(store, answered(notFound, 404));
    assert.equal(notFound.response.headers['switchyard-cache-status'], 'MISS');
    assert.equal(runNow(lookup, get()), 'success', `${key}: a 404 is not stored`);
  }
  const defaults = halves();
  const missing = get();
  runNow(defaults.lookup, missing);
  runNow(defaults.store, answered(missing, 404));
  assert.equal(runNow(defaults.lookup, get()), 'hit', '404 is cacheable by default');
});

test('proxy-cache: private, no-store and Set-Cookie responses are never stored', () => {
  for (const headers of [
    { 'cache-control': 'private' },
    { 'cache-control': 'no-store' },
    { 'set-cookie': 'a=b' },
  ]) {
    const { lookup, store } = halves();
    const ctx = get();
    runNow(lookup, ctx);
    runNow(store, answered(ctx, 200, 'x', headers));
    assert.equal(runNow(lookup, get()), 'success', JSON.stringify(headers));
  }
});

test('proxy-cache: cache_bypass skips the lookup and marks BYPASS; no_cache serves but does not store', () => {
  const { lookup, store } = halves({
    cache_bypass: ['{{request.query.fresh}}'],
    no_cache: ['{{request.headers.x-no-cache}}'],
  });
  const warm = get('/items');
  runNow(lookup, warm);
  runNow(store, answered(warm, 200, 'old'));
  const bypass = get('/items?fresh=1');
  assert.equal(runNow(lookup, bypass), 'success');
  runNow(store, answered(bypass, 200, 'new'));
  assert.equal(bypass.response.headers['switchyard-cache-status'], 'BYPASS');
  const zero = get('/items?fresh=0');
  assert.equal(runNow(lookup, zero), 'hit', '"0" does not bypass');
  assert.equal(bodyText(zero), 'old', 'a bypassed response is not stored');

  const other = halves({ no_cache: ['{{request.headers.x-no-cache}}'] });
  const skip = get('/x', { headers: { host: 'h', 'x-no-cache': 'yes' } });
  runNow(other.lookup, skip);
  runNow(other.store, answered(skip));
  assert.equal(skip.response.headers['switchyard-cache-status'], 'MISS');
  assert.equal(runNow(other.lookup, get('/x')), 'success');
});

test('proxy-cache: a body over max_object_bytes is served, not stored, and counted as size_skip', async () => {
  const { lookup, store, scope } = halves({ max_object_bytes: 4 });
  const big = get();
  runNow(lookup, big);
  runNow(store, answered(big, 200, 'too large'));
  assert.equal(bodyText(big), 'too large');
  assert.equal(runNow(lookup, get()), 'success');
  assert.equal((await cacheEvents(scope))['local//size_skip'], 1);
});

/** Reads a relayed stream to its end, as the client node would. */
async function drain(stream: Readable | null): Promise<string> {
  assert.ok(stream !== null, 'the stream is left to the client node');
  let text = '';
  for await (const chunk of stream) text += String(chunk);
  return text;
}

test('proxy-cache: a streamed response is relayed as it comes and stored once it has ended', async () => {
  const { lookup, store } = halves();
  const ctx = get();
  runNow(lookup, ctx);
  ctx.response.status = 200;
  ctx.response.headers['content-type'] = 'text/plain';
  ctx.response.stream = Readable.from([Buffer.from('chu'), Buffer.from('nk')]);
  assert.equal(runNow(store, ctx), 'success');
  assert.equal(runNow(lookup, get()), 'success', 'nothing is stored before the stream ends');
  assert.equal(await drain(ctx.response.stream), 'chunk');
  const hit = get();
  await waitFor(() => runNow(lookup, hit) === 'hit', { timeoutMs: 5000, what: 'the streamed entry' });
  assert.equal(bodyText(hit), 'chunk');
  assert.equal(hit.response.headers['content-type'], 'text/plain');
});

test('proxy-cache: a streamed response over max_object_bytes is relayed whole and not stored', async () => {
  const { lookup, store, scope } = halves({ max_object_bytes: 4 });
  const ctx = get();
  runNow(lookup, ctx);
  ctx.response.status = 200;
  ctx.response.stream = Readable.from([Buffer.from('too '), Buffer.from('large')]);
  runNow(store, ctx);
  assert.equal(await drain(ctx.response.stream), 'too large');
  assert.equal(runNow(lookup, get()), 'success');
  assert.equal((await cacheEvents(scope))['local//size_skip'], 1);
});

test('proxy-cache: a stream the upstream breaks off is not stored', async () => {
  const { lookup, store } = halves();
  const ctx = get();
  runNow(lookup, ctx);
  ctx.response.status = 200;
  ctx.response.stream = new Readable({
    read() {
      this.push('partial');
      this.destroy(new Error('upstream reset'));
    },
  });
  runNow(store, ctx);
  await assert.rejects(drain(ctx.response.stream));
  assert.equal(runNow(lookup, get()), 'success');
});

/** What src/outbound/upstream-pool.ts does with an answer: a new map, earlier names it did not send carried over. */
function upstreamAnswered(ctx: Context, headers: Record<string, string>, body = 'payload'): void {
  const merged: Record<string, string | string[] | undefined> = { ...headers };
  for (const name in ctx.response.headers) merged[name] ??= ctx.response.headers[name];
  ctx.response.status = 200;
  ctx.response.headers = merged;
  ctx.response.body = Buffer.from(body);
}

test("F5: proxy-cache: headers the request path set before the upstream answered are not stored; a hit keeps the asking request's own", () => {
  const { lookup, store } = halves();
  const first = get();
  first.response.headers['x-ratelimit-remaining'] = '9'; // a limit node before the lookup
  assert.equal(runNow(lookup, first), 'success');
  first.response.headers['x-between'] = 'lookup-to-upstream'; // a node after the lookup, same map
  upstreamAnswered(first, { 'content-type': 'text/plain', 'x-origin': 'a', 'x-between': 'from-upstream' });
  runNow(store, first);
  assert.equal(first.response.headers['x-ratelimit-remaining'], '9', 'the miss itself still carries it');

  const second = get();
  second.response.headers['x-ratelimit-remaining'] = '3';
  assert.equal(runNow(lookup, second), 'hit');
  assert.equal(
    second.response.headers['x-ratelimit-remaining'],
    '3',
    "this request's quota, not the entry's",
  );
  assert.equal(second.response.headers['x-origin'], 'a');
  assert.equal(second.response.headers['x-between'], 'from-upstream', 'a name the upstream sent is its own');

  const bare = get();
  assert.equal(runNow(lookup, bare), 'hit');
  assert.equal(bare.response.headers['x-ratelimit-remaining'], undefined, 'the entry holds no quota header');
  assert.equal(bare.response.headers['content-type'], 'text/plain');
});

test('F5: proxy-cache: when no upstream replaced the headers, those present at the lookup are not stored', () => {
  const { lookup, store } = halves();
  const ctx = get();
  ctx.response.headers['x-ratelimit-remaining'] = '9';
  runNow(lookup, ctx);
  runNow(store, answered(ctx, 200, 'mocked', { 'x-mock': 'yes' }));
  const hit = get();
  assert.equal(runNow(lookup, hit), 'hit');
  assert.equal(hit.response.headers['x-mock'], 'yes');
  assert.equal(hit.response.headers['x-ratelimit-remaining'], undefined);
});

test('F5: proxy-cache: a streamed entry holds the headers the store half saw, not those a later node adds before the body ends', async () => {
  const { lookup, store } = halves();
  const ctx = get();
  runNow(lookup, ctx);
  upstreamAnswered(ctx, { 'content-type': 'text/plain' });
  ctx.response.body = null;
  ctx.response.stream = Readable.from([Buffer.from('chu'), Buffer.from('nk')]);
  runNow(store, ctx);
  ctx.response.headers['access-control-allow-origin'] = 'https://alice.example'; // cors after the store
  assert.equal(await drain(ctx.response.stream), 'chunk');
  const hit = get();
  await waitFor(() => runNow(lookup, hit) === 'hit', { timeoutMs: 5000, what: 'the streamed entry' });
  assert.equal(hit.response.headers['content-type'], 'text/plain');
  assert.equal(hit.response.headers['access-control-allow-origin'], undefined);
});

test('proxy-cache: hide_cache_headers strips Cache-Control and Expires from hits', () => {
  const { lookup, store } = halves({ hide_cache_headers: true });
  const ctx = get();
  runNow(lookup, ctx);
  runNow(
    store,
    answered(ctx, 200, 'x', { 'cache-control': 'max-age=5', expires: 'Thu, 01 Jan 2099 00:00:00 GMT' }),
  );
  const hit = get();
  assert.equal(runNow(lookup, hit), 'hit');
  assert.equal(hit.response.headers['cache-control'], undefined);
  assert.equal(hit.response.headers['expires'], undefined);
});

test('proxy-cache: cache_status_header renames the status header (the reference literal is featherbit-cache-status)', () => {
  const { lookup, store } = halves({ cache_status_header: 'Featherbit-Cache-Status' });
  const ctx = get();
  runNow(lookup, ctx);
  runNow(store, answered(ctx));
  assert.equal(ctx.response.headers['featherbit-cache-status'], 'MISS');
  const hit = get();
  runNow(lookup, hit);
  assert.equal(hit.response.headers['featherbit-cache-status'], 'HIT');
});

test('proxy-cache: Age on a hit counts the seconds since the entry was stored', (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
  const { lookup, store } = halves({ cache_ttl: 10 });
  const ctx = get();
  runNow(lookup, ctx);
  runNow(store, answered(ctx));
  t.mock.timers.tick(4000);
  const hit = get();
  assert.equal(runNow(lookup, hit), 'hit');
  assert.equal(hit.response.headers['age'], '4');
});

test('proxy-cache: a local entry expires after its TTL', async () => {
  const cache = new LocalResponseCache(10, new GatewayMetrics());
  cache.put('a\u0001k', { status: 200, headers: {}, body: Buffer.from('x'), storedAt: 0 }, 0.05);
  assert.ok(cache.get('a\u0001k') !== undefined);
  await waitFor(() => cache.get('a\u0001k') === undefined, { timeoutMs: 2000, what: 'the entry to expire' });
});

test('proxy-cache: the purge half empties its namespace and no other', async () => {
  const scope = createGatewayScope();
  const products = halves({}, scope);
  const orders = instantiate(proxyCache, { phase: 'lookup', id: 'products-v2' }, templatedEnv({ scope }));
  const ordersStore = instantiate(proxyCache, { phase: 'store', id: 'products-v2' }, templatedEnv({ scope }));
  for (const [l, s] of [
    [products.lookup, products.store],
    [orders, ordersStore],
  ] as const) {
    const ctx = get();
    runNow(l, ctx);
    runNow(s, answered(ctx));
  }
  assert.equal(await products.purge.run(get('/write', { method: 'POST' })), 'success');
  assert.equal(runNow(products.lookup, get()), 'success', 'purged');
  assert.equal(runNow(orders, get()), 'hit', 'products-v2 is another namespace');
  assert.equal((await cacheEvents(scope))['local//purge'], 1);
});

test('proxy-cache: a failing purge leaves on error with CACHE_PURGE_FAILED', async () => {
  const node = instantiate(
    proxyCache,
    { phase: 'purge', id: 'p', policy: 'redis', store: 'down' },
    {
      ...templatedEnv(),
      stores: {
        get: (name) =>
          name === 'down'
            ? {
                name,
                get: () => Promise.reject(new Error('unreachable')),
                set: () => Promise.reject(new Error('unreachable')),
                delete: () => Promise.reject(new Error('unreachable')),
                incr: () => Promise.reject(new Error('unreachable')),
                scan: () => Promise.reject(new Error('unreachable')),
                eval: () => Promise.reject(new Error('unreachable')),
                ping: () => Promise.reject(new Error('unreachable')),
              }
            : undefined,
      },
    },
  );
  const err = await failsWith(node, get(), 'CACHE_PURGE_FAILED', 502);
  assert.deepEqual(err.metadata, { id: 'p', backend: 'redis', store: 'down' });
});

test('proxy-cache: the local LRU is bounded by cache.max_entries and counts evictions', async () => {
  const metrics = new GatewayMetrics();
  const cache = new LocalResponseCache(2, metrics);
  const entry = { status: 200, headers: {}, body: Buffer.from('x'), storedAt: 0 };
  for (const key of ['a\u0001k1', 'a\u0001k2', 'a\u0001k3']) cache.put(key, entry, 60);
  assert.equal(cache.size, 2);
  assert.equal(cache.get('a\u0001k1'), undefined, 'the least recently used entry went');
  const text = (await metrics.render()).body;
  assert.match(text, /gateway_cache_events_total\{backend="local",store="",event="eviction"\} 1/);

  const scope = createGatewayScope({ cacheMaxEntries: 1 });
  const { lookup, store } = halves({}, scope);
  for (const url of ['/a', '/b']) {
    const ctx = get(url);
    runNow(lookup, ctx);
    runNow(store, answered(ctx));
  }
  assert.equal(runNow(lookup, get('/a')), 'success', 'evicted by the system-wide bound');
  assert.equal(runNow(lookup, get('/b')), 'hit');
});

test('proxy-cache: the halves expose their cache target for pair checks and purges', () => {
  const { lookup } = halves();
  assert.deepEqual(
    { ...lookup.cache, purge: undefined },
    { id: 'products', phase: 'lookup', backend: 'local', store: '', purge: undefined },
  );
});

test('proxy-cache: config rejections', () => {
  assertConfigError(() => instantiate(proxyCache, { id: 'x' }), 'phase');
  assertConfigError(() => instantiate(proxyCache, { id: 'x', phase: 'lookup', role: 'store' }), 'role');
  assertSchemaRejects(() => instantiate(proxyCache, { phase: 'lookup' }), 'id');
  assertSchemaRejects(() => instantiate(proxyCache, { id: 'x', phase: 'evict' }), 'phase');
  assertConfigError(() => instantiate(proxyCache, { id: 'a\u0001b', phase: 'lookup' }), 'id', /control/);
  assertConfigError(
    () => instantiate(proxyCache, { id: 'x', phase: 'lookup', policy: 'redis' }),
    'store',
    /required/,
  );
  assertConfigError(
    () => instantiate(proxyCache, { id: 'x', phase: 'lookup', policy: 'kvstore', store: 'nope' }),
    'store',
    /nope/,
  );
  assertConfigError(
    () => instantiate(proxyCache, { id: 'x', phase: 'lookup', no_cache: ['$arg_nocache'] }),
    'no_cache[0]',
    /template/,
  );
  assertConfigError(
    () =>
      instantiate(proxyCache, {
        id: 'x',
        phase: 'store',
        cache_http_statuses: [200],
        cache_http_status: [404],
      }),
    'cache_http_status',
  );
  assertSchemaRejects(
    () => instantiate(proxyCache, { id: 'x', phase: 'store', max_object_bytes: 0 }),
    'max_object_bytes',
  );
  assertSchemaRejects(
    () => instantiate(proxyCache, { id: 'x', phase: 'store', cache_strategy: 'disk' }),
    'cache_strategy',
  );
});

test('proxy-cache: only a store half whose no_cache reads the body makes its upstream buffer', () => {
  const body = { no_cache: ['{{response.body}}'] };
  assert.equal(proxyCache.readsResponseBody?.({ phase: 'store', ...body } as never), true);
  assert.equal(proxyCache.readsResponseBody?.({ role: 'store', ...body } as never), true);
  assert.equal(proxyCache.readsResponseBody?.({ phase: 'store' } as never), false);
  assert.equal(proxyCache.readsResponseBody?.({ phase: 'lookup', ...body } as never), false);
  assert.equal(proxyCache.readsResponseBody?.({ phase: 'purge' } as never), false);
});
