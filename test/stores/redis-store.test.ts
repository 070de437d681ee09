import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import type { StoreConfig } from '../../src/config/gateway.js';
import type { ConfigIssue } from '../../src/config/schema-validate.js';
import {
  openConnectionCount,
  openStores,
  StoreError,
  type Store,
  type StoreSet,
} from '../../src/stores/index.js';
import { freePort } from '../support/free-port.js';
import { startRedis, skipWithoutRedis, type RedisServer } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

function open(configs: StoreConfig[], env: NodeJS.ProcessEnv = {}): { set: StoreSet; issues: ConfigIssue[] } {
  const issues: ConfigIssue[] = [];
  return { set: openStores(configs, { env }, issues), issues };
}

function only(set: StoreSet, name = 's'): Store {
  const store = set.get(name);
  assert.ok(store, `store '${name}' resolved`);
  return store;
}

async function rejectsWith(promise: Promise<unknown>, code: string): Promise<StoreError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof StoreError, `expected a StoreError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    return err;
  }
  assert.fail(`expected ${code}`);
}

describe('stores: configuration', () => {
  test('stores: an unsupported topology, urls and a non-redis url are rejected with their paths', () => {
    const { set, issues } = open([
      { name: 'a', type: 'redis', url: 'redis://127.0.0.1:1', topology: 'ring' },
      { name: 'b', type: 'redis', url: 'redis://127.0.0.1:1', urls: ['redis://x'] },
      { name: 'c', type: 'redis', url: 'http://127.0.0.1:1' },
      { name: 'd', type: 'redis', url: '${UNSET_STORE_URL}' },
      { name: 'e', type: 'redis', url: 'redis://127.0.0.1:1', connect_timeout_ms: 'soon' },
    ]);
    assert.deepEqual(
      issues.map((i) => i.path),
      [
        'stores[0].topology',
        'stores[1].urls',
        'stores[2].url',
        'stores[3].url',
        'stores[4].connect_timeout_ms',
      ],
    );
    assert.equal(set.names.length, 0);
    set.release();
  });

  test('stores: ${ENV} in url and timeouts resolves at compile time', () => {
    const { set, issues } = open(
      [{ name: 's', type: 'valkey', url: '${STORE_URL}', connect_budget_ms: '${BUDGET:-700}' }],
      { STORE_URL: 'redis://127.0.0.1:6390/2' },
    );
    assert.deepEqual(issues, []);
    assert.deepEqual(set.names, ['s']);
    set.release();
  });

  test('stores: an unchanged store keeps its connection across compiles; an unreferenced one is closed', () => {
    const base = openConnectionCount();
    const first = open([{ name: 's', type: 'redis', url: 'redis://127.0.0.1:6391' }]).set;
    assert.equal(openConnectionCount(), base + 1);
    const second = open([
      { name: 's', type: 'redis', url: 'redis://127.0.0.1:6391' },
      { name: 't', type: 'redis', url: 'redis://127.0.0.1:6392' },
    ]).set;
    assert.equal(openConnectionCount(), base + 2);
    first.release();
    assert.equal(openConnectionCount(), base + 2, 'still referenced by the second configuration');
    second.release();
    second.release();
    assert.equal(openConnectionCount(), base);
  });
});

describe('stores: redis', { skip: skipWithoutRedis() }, () => {
  let redis: RedisServer;
  let raw: Redis;
  let set: StoreSet;
  let store: Store;

  before(async () => {
    redis = await startRedis();
    raw = new Redis(redis.url, { lazyConnect: true });
    await raw.connect();
    ({ set } = open([
      { name: 's', type: 'redis', url: redis.url },
      { name: 'fb', type: 'redis', url: redis.url, key_prefix: 'fb' },
    ]));
    store = only(set);
  });

  after(async () => {
    set.release();
    raw.disconnect();
    await redis.stop();
  });

  test('stores: keys get the default sy prefix; key_prefix fb is honoured', async () => {
    await store.set('kv:a', 'one');
    await only(set, 'fb').set('kv:a', 'two');
    assert.equal(await raw.get('sy:kv:a'), 'one');
    assert.equal(await raw.get('fb:kv:a'), 'two');
    assert.equal(await store.get('kv:a'), 'one');
    assert.equal(await store.get('kv:absent'), null);
    await store.delete('kv:a');
    await store.delete('kv:a');
    assert.equal(await raw.exists('sy:kv:a'), 0);
  });

  test('stores: set with a TTL expires the key', async () => {
    await store.set('kv:ttl', 'x', 30);
    const ttl = await raw.ttl('sy:kv:ttl');
    assert.ok(ttl > 0 && ttl <= 30, `ttl ${ttl}`);
    await store.set('kv:ttl', 'y');
    assert.equal(await raw.ttl('sy:kv:ttl'), -1);
  });

  test('stores: incr pins the TTL at creation and never refreshes it', async () => {
    assert.equal(await store.incr('kv:c', 1, 100), 1);
    assert.ok((await raw.ttl('sy:kv:c')) > 90);
    await raw.expire('sy:kv:c', 20);
    assert.equal(await store.incr('kv:c', 2, 100), 3);
    const ttl = await raw.ttl('sy:kv:c');
    assert.ok(ttl > 0 && ttl <= 20, `ttl stays pinned, got ${ttl}`);
    assert.equal(await store.incr('kv:c', -5), -2);
    await store.set('kv:durable', '7');
    assert.equal(await store.incr('kv:durable', 1, 100), 8);
    assert.equal(await raw.ttl('sy:kv:durable'), -1, 'an existing key is not given a TTL');
  });

  test('stores: incr on a non-integer value fails with STORE_VALUE_INVALID', async () => {
    await store.set('kv:text', 'hello');
    await rejectsWith(store.incr('kv:text', 1), 'STORE_VALUE_INVALID');
    await rejectsWith(store.incr('kv:text', 1, 10), 'STORE_VALUE_INVALID');
  });

  test('stores: scan lists logical keys under a prefix', async () => {
    for (let i = 0; i < 25; i++) await store.set(`scan:[x]:${i}`, String(i));
    await store.set('scan:other', '-');
    const seen: string[] = [];
    let cursor = '0';
    do {
      const page = await store.scan('scan:[x]:', cursor, 10);
      seen.push(...page.keys);
      cursor = page.cursor;
    } while (cursor !== '0');
    assert.equal(new Set(seen).size, 25);
    assert.ok(seen.every((k) => k.startsWith('scan:[x]:')));
  });

  test('stores: eval prefixes keys and caches the script', async () => {
    const script = "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('GET', KEYS[1])";
    assert.equal(await store.eval(script, ['kv:e'], ['v1']), 'v1');
    assert.equal(await store.eval(script, ['kv:e'], [2]), '2');
    assert.equal(await raw.get('sy:kv:e'), '2');
    await rejectsWith(store.eval('return redis.call("NOPE")', [], []), 'STORE_COMMAND_FAILED');
  });

  test('stores: ping reports latency and the server version', async () => {
    const info = await store.ping();
    assert.match(info.server_version, /^\d+\.\d+/);
    assert.ok(info.latency_ms >= 0);
  });

  test('stores: a stopped server fails operations fast; a restarted one is used again', async () => {
    await store.set('kv:live', '1');
    await redis.stop();
    const started = Date.now();
    const err = await rejectsWith(store.get('kv:live'), 'STORE_UNAVAILABLE');
    assert.equal(err.store, 's');
    assert.ok(Date.now() - started < 2500, 'fails without waiting for the 5 s budget');
    await redis.start();
    await waitFor(
      async () => {
        try {
          return (await store.get('kv:live')) === null;
        } catch {
          return false;
        }
      },
      { what: 'the store to reconnect' },
    );
  });
});

describe('stores: unreachable servers', () => {
  test('stores: a refused connection fails at once with STORE_UNAVAILABLE', async () => {
    const port = await freePort();
    const { set } = open([{ name: 's', type: 'redis', url: `redis://127.0.0.1:${port}` }]);
    const started = Date.now();
    await rejectsWith(only(set).get('kv:x'), 'STORE_UNAVAILABLE');
    await rejectsWith(only(set).set('kv:x', '1'), 'STORE_UNAVAILABLE');
    assert.ok(Date.now() - started < 2500, 'fails without waiting for the 5 s budget');
    set.release();
  });

  test('stores: a server that never answers is abandoned after connect_budget_ms', async () => {
    const sockets = new Set<Socket>();
    const server: Server = createServer((s) => {
      sockets.add(s);
      s.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const { set } = open([
      {
        name: 's',
        type: 'redis',
        url: `redis://127.0.0.1:${port}`,
        connect_timeout_ms: 5000,
        connect_budget_ms: 300,
      },
    ]);
    const started = Date.now();
    await rejectsWith(only(set).get('kv:x'), 'STORE_TIMEOUT');
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 250 && elapsed < 3000, `gave up after ${elapsed} ms`);
    set.release();
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
});
