import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ConfigIssue } from '../../src/config/schema-validate.js';
import { openStores, StoreError, type Store, type StoreSet } from '../../src/stores/index.js';
import { startGateway, type RunningGateway } from '../support/in-process.js';
import { skipWithoutRedis } from '../support/redis.js';
import { startRedisCluster, type RedisClusterSetup } from '../support/redis-cluster.js';
import { probe } from '../support/redis-sentinel.js';

describe('stores: Redis Cluster', { skip: skipWithoutRedis() }, () => {
  let cluster: RedisClusterSetup;
  let set: StoreSet;
  let store: Store;
  let gateway: RunningGateway | undefined;

  before(async () => {
    cluster = await startRedisCluster(3);
    const issues: ConfigIssue[] = [];
    // One seed is enough: the client learns the other masters from CLUSTER SLOTS.
    set = openStores(
      [
        {
          name: 'c',
          type: 'redis',
          topology: 'cluster',
          urls: [cluster.urls[0] ?? ''],
          connect_budget_ms: 8000,
        },
      ],
      { env: {} },
      issues,
    );
    assert.deepEqual(issues, []);
    const s = set.get('c');
    assert.ok(s);
    store = s;
  });

  after(async () => {
    await gateway?.stop();
    set.release();
    await cluster.stop();
  });

  /** Which master holds `key` (by asking each for it). */
  async function holders(key: string): Promise<number[]> {
    const found: number[] = [];
    for (const port of cluster.ports) if ((await probe(port, (c) => c.exists(key))) === 1) found.push(port);
    return found;
  }

  test('stores: a cluster store spreads keys over the masters and reads them back', async () => {
    const keys = Array.from({ length: 30 }, (_, i) => `kv:key-${i}`);
    for (const [i, k] of keys.entries()) await store.set(k, String(i), 60);
    for (const [i, k] of keys.entries()) assert.equal(await store.get(k), String(i));
    const owners = new Set<number>();
    for (const k of keys) {
      const at = await holders(`sy:${k}`);
      assert.equal(at.length, 1, `${k} lives on exactly one master`);
      owners.add(at[0] ?? 0);
    }
    assert.equal(owners.size, 3, 'keys landed on every master');
    assert.equal(await store.incr('kv:counter', 2, 60), 2);
    assert.equal(await store.incr('kv:counter', 3, 60), 5);
    assert.match((await store.ping()).server_version, /^\d+\.\d+/);
  });

  test('stores: SCAN over a cluster store visits every master', async () => {
    const seen: string[] = [];
    let cursor = '0';
    let rounds = 0;
    do {
      const page = await store.scan('kv:key-', cursor, 100);
      seen.push(...page.keys);
      cursor = page.cursor;
      assert.ok(++rounds < 100, 'the scan ends');
    } while (cursor !== '0');
    assert.equal(new Set(seen).size, 30);
  });

  test('stores: a script over keys of several hash slots fails with STORE_COMMAND_FAILED naming the cause', async () => {
    await assert.rejects(
      store.eval(`return redis.call('MGET', unpack(KEYS))`, ['kv:key-1', 'kv:key-2'], []),
      (err: unknown) =>
        err instanceof StoreError &&
        err.code === 'STORE_COMMAND_FAILED' &&
        /CROSSSLOT.*one hash slot/.test(err.message),
    );
  });

  test('stores: limit-count on a cluster store counts each client key on its own slot and answers 429 past the quota', async () => {
    gateway = await startGateway(`
stores:
  - name: shared
    type: redis
    topology: cluster
    urls: [${cluster.urls.join(', ')}]
    key_prefix: cluster-test
routes:
  - { name: r, match: { path: /* }, policy: p }
policies:
  - name: p
    nodes:
      - { id: listener, type: listener }
      - { id: quota, type: limit-count, config: { count: 2, time_window: 60, policy: redis, store: shared, key: $http_x_client, rejected_code: 429 } }
      - { id: ok, type: mocking, config: { response_example: fine, content_type: text/plain } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: quota.in }
      - { from: quota.success, to: ok.in }
      - { from: quota.limited, to: client.in }
      - { from: ok.success, to: client.in }
`);
    const clients = Array.from({ length: 12 }, (_, i) => `client-${i}`);
    for (const client of clients) {
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++)
        statuses.push((await fetch(`${gateway.url}/x`, { headers: { 'x-client': client } })).status);
      assert.deepEqual(statuses, [200, 200, 429], client);
    }
    const perMaster = await Promise.all(cluster.ports.map((p) => probe(p, (c) => c.keys('cluster-test:*'))));
    const counts = perMaster.map((k) => k?.length ?? 0);
    assert.equal(
      counts.reduce((a, b) => a + b, 0),
      clients.length,
      `one counter per client: ${counts.join('/')}`,
    );
    assert.ok(
      counts.filter((n) => n > 0).length >= 2,
      `counters spread over the masters: ${counts.join('/')}`,
    );
  });
});
