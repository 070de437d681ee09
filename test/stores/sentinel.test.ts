import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { StoreConfig } from '../../src/config/gateway.js';
import type { ConfigIssue } from '../../src/config/schema-validate.js';
import {
  deleteSession,
  getSession,
  listSessions,
  newSessionId,
  putSession,
} from '../../src/sessions/stored.js';
import { openStores, type Store, type StoreSet } from '../../src/stores/index.js';
import { startGateway, type RunningGateway } from '../support/in-process.js';
import { skipWithoutRedis } from '../support/redis.js';
import { probe, startSentinels, type SentinelSetup } from '../support/redis-sentinel.js';
import { waitFor } from '../support/wait.js';

function open(configs: StoreConfig[]): { set: StoreSet; issues: ConfigIssue[] } {
  const issues: ConfigIssue[] = [];
  return { set: openStores(configs, { env: {} }, issues), issues };
}

test('stores: sentinel and cluster settings are checked with their key paths', () => {
  const { set, issues } = open([
    { name: 'a', type: 'redis', topology: 'sentinel', urls: ['redis://127.0.0.1:26379'] },
    { name: 'b', type: 'redis', topology: 'sentinel', master_name: 'm', urls: [] },
    {
      name: 'c',
      type: 'redis',
      topology: 'cluster',
      url: 'redis://127.0.0.1:1',
      urls: ['redis://127.0.0.1:7000'],
    },
    { name: 'd', type: 'redis', topology: 'ring', urls: ['redis://127.0.0.1:7000'] },
    {
      name: 'e',
      type: 'redis',
      topology: 'cluster',
      urls: ['http://127.0.0.1:7000', 'redis://127.0.0.1:7001/3'],
    },
    { name: 'f', type: 'redis', url: 'redis://127.0.0.1:1', urls: ['redis://127.0.0.1:7000'] },
    { name: 'g', type: 'redis' },
  ]);
  assert.deepEqual(
    issues.map((i) => i.path),
    [
      'stores[0].master_name',
      'stores[1].urls',
      'stores[2].url',
      'stores[3].topology',
      'stores[4].urls[0]',
      'stores[4].urls[1]',
      'stores[5].urls',
      'stores[6].url',
    ],
    JSON.stringify(issues, null, 1),
  );
  assert.equal(set.names.length, 0);
  set.release();
});

describe('stores: Redis Sentinel', { skip: skipWithoutRedis() }, () => {
  let sentinel: SentinelSetup;
  let set: StoreSet;
  let store: Store;
  let gateway: RunningGateway | undefined;

  before(async () => {
    sentinel = await startSentinels();
    const opened = open([
      {
        name: 's',
        type: 'redis',
        topology: 'sentinel',
        master_name: sentinel.masterName,
        // The first sentinel address is dead: the client asks the next one.
        urls: ['redis://127.0.0.1:1', ...sentinel.urls],
        connect_budget_ms: 8000,
      },
    ]);
    assert.deepEqual(opened.issues, []);
    set = opened.set;
    const s = set.get('s');
    assert.ok(s);
    store = s;
  });

  after(async () => {
    await gateway?.stop();
    set.release();
    await sentinel.stop();
  });

  test('stores: a sentinel store reads and writes on the master the sentinels name', async () => {
    await store.set('kv:greeting', 'hello', 60);
    assert.equal(await store.get('kv:greeting'), 'hello');
    assert.equal(await store.incr('kv:n', 5, 60), 5);
    // Written on the master itself, and replicated from there.
    assert.equal(await probe(sentinel.master.port, (c) => c.get('sy:kv:greeting')), 'hello');
    await waitFor(async () => (await probe(sentinel.replica.port, (c) => c.get('sy:kv:n'))) === '5', {
      timeoutMs: 10000,
      what: 'the replica to receive the write',
    });
    const ping = await store.ping();
    assert.match(ping.server_version, /^\d+\.\d+/);
  });

  test('stores: sessions live on the sentinel-discovered master (put, list, delete)', async () => {
    const id = newSessionId();
    const now = Math.floor(Date.now() / 1000);
    const meta = {
      subject: 'alice',
      plugin: 'openid-connect',
      policy: 'p',
      route: 'r',
      created_at: now,
      expires_at: now + 60,
    };
    await putSession(store, id, 'sealed-payload', meta, 60);
    assert.equal(await getSession(store, id), 'sealed-payload');
    const page = await listSessions(store, { limit: 10 });
    assert.ok(
      page.sessions.some((s) => s.id === id),
      JSON.stringify(page),
    );
    assert.equal(await probe(sentinel.master.port, (c) => c.exists(`sy:sess:{${id}}`)), 1);
    assert.equal(await deleteSession(store, id), true);
    assert.equal(await getSession(store, id), null);
  });

  test('stores: limit-count with a sentinel store counts on the master and answers 429 past the quota', async () => {
    gateway = await startGateway(`
stores:
  - name: shared
    type: redis
    topology: sentinel
    master_name: ${sentinel.masterName}
    urls: [${sentinel.urls.join(', ')}]
    key_prefix: sentinel-test
routes:
  - { name: r, match: { path: /* }, policy: p }
policies:
  - name: p
    nodes:
      - { id: listener, type: listener }
      - { id: quota, type: limit-count, config: { count: 3, time_window: 60, policy: redis, store: shared, rejected_code: 429 } }
      - { id: ok, type: mocking, config: { response_example: fine, content_type: text/plain } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: quota.in }
      - { from: quota.success, to: ok.in }
      - { from: quota.limited, to: client.in }
      - { from: ok.success, to: client.in }
`);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await fetch(`${gateway.url}/x`)).status);
    assert.deepEqual(statuses, [200, 200, 200, 429]);
    const keys = await probe(sentinel.master.port, (c) => c.keys('sentinel-test:*'));
    assert.ok(keys !== undefined && keys.length > 0, 'the counter lives on the master');
  });

  test('stores: after a failover the store follows the sentinels to the promoted replica', async () => {
    const oldPort = sentinel.master.port;
    await sentinel.master.stop();
    await waitFor(async () => (await sentinel.currentMasterPort()) === sentinel.replica.port, {
      timeoutMs: 30000,
      intervalMs: 200,
      what: 'the sentinels to promote the replica',
    });
    // The first operations may fail while the client notices; one succeeds within the deadline.
    await waitFor(
      async () => {
        try {
          await store.set('kv:after-failover', 'yes', 60);
          return true;
        } catch {
          return false;
        }
      },
      { timeoutMs: 30000, intervalMs: 200, what: 'a write through the new master' },
    );
    assert.notEqual(sentinel.replica.port, oldPort);
    assert.equal(await probe(sentinel.replica.port, (c) => c.get('sy:kv:after-failover')), 'yes');
  });
});
