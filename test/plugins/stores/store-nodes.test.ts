import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { storeDelete } from '../../../src/plugins/stores/store-delete.js';
import { storeGet } from '../../../src/plugins/stores/store-get.js';
import { storeIncr } from '../../../src/plugins/stores/store-incr.js';
import { storeSet } from '../../../src/plugins/stores/store-set.js';
import type { StoreSet } from '../../../src/stores/index.js';
import { freePort } from '../../support/free-port.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { skipWithoutRedis, startRedis, testStores, type RedisServer } from '../../support/redis.js';
import { waitFor } from '../../support/wait.js';
import { assertConfigError, assertSchemaRejects, failsWith, templatedEnv } from '../../support/node-run.js';

describe('store nodes: configuration', () => {
  let stores: StoreSet;
  before(() => {
    stores = testStores({ s: 'redis://127.0.0.1:6399' });
  });
  after(() => stores.release());
  const env = () => templatedEnv({ stores });

  test('store nodes: an unknown store is rejected at config.store', () => {
    const configs = [
      [storeGet, { store: 'nope', key: 'k', name: 'n' }],
      [storeSet, { store: 'nope', key: 'k', value: 'v' }],
      [storeIncr, { store: 'nope', key: 'k', name: 'n' }],
      [storeDelete, { store: 'nope', key: 'k' }],
    ] as const;
    for (const [def, config] of configs) {
      assertConfigError(
        () => instantiate(def as typeof storeGet, config, env()),
        'store',
        /unknown store 'nope'/,
      );
    }
  });

  test('store nodes: ttl_seconds 0 is rejected (omit it for no expiry)', () => {
    assertConfigError(
      () => instantiate(storeSet, { store: 's', key: 'k', value: 'v', ttl_seconds: 0 }, env()),
      'ttl_seconds',
    );
    assertConfigError(
      () => instantiate(storeIncr, { store: 's', key: 'k', name: 'n', ttl_seconds: 0 }, env()),
      'ttl_seconds',
    );
  });

  test('store nodes: required keys and unknown keys are schema errors', () => {
    assertSchemaRejects(() => instantiate(storeGet, { store: 's', key: 'k' }, env()), 'name');
    assertSchemaRejects(() => instantiate(storeSet, { store: 's', key: 'k' }, env()), 'value');
    assertSchemaRejects(() => instantiate(storeIncr, { store: 's', name: 'n' }, env()), 'key');
    assertSchemaRejects(() => instantiate(storeDelete, { store: 's', key: 'k', ttl: 1 }, env()), 'ttl');
  });

  test('store nodes: only a response-body reference makes an upstream buffer', () => {
    assert.equal(storeSet.readsResponseBody?.({ store: 's', key: 'k', value: '{{request.path}}' }), false);
    assert.equal(storeSet.readsResponseBody?.({ store: 's', key: 'k', value: '{{response.body}}' }), true);
    assert.equal(
      storeGet.readsResponseBody?.({ store: 's', key: '{{response.body}}', name: 'n', json: false }),
      true,
    );
    assert.equal(storeDelete.readsResponseBody?.({ store: 's', key: 'k' }), false);
  });
});

describe('store nodes: redis', { skip: skipWithoutRedis() }, () => {
  let redis: RedisServer;
  let raw: Redis;
  let stores: StoreSet;
  const env = () => templatedEnv({ stores });

  before(async () => {
    redis = await startRedis();
    raw = new Redis(redis.url);
    stores = testStores({ s: redis.url, down: `redis://127.0.0.1:${await freePort()}` });
  });
  after(async () => {
    stores.release();
    raw.disconnect();
    await redis.stop();
  });

  test('store-set then store-get: success writes the value to context.message', async () => {
    const set = instantiate(
      storeSet,
      { store: 's', key: 'user:{{request.headers.x-user}}', value: '{{request.method}}' },
      env(),
    );
    const get = instantiate(
      storeGet,
      { store: 's', key: 'user:{{request.headers.x-user}}', name: 'seen' },
      env(),
    );
    const ctx = requestContext({ method: 'PUT', headers: { host: 'h', 'x-user': 'u1' } });
    assert.equal(await set.run(ctx), 'success');
    assert.equal(await raw.get('sy:kv:user:u1'), 'PUT');
    assert.equal(await raw.ttl('sy:kv:user:u1'), -1);
    assert.equal(await get.run(ctx), 'success');
    assert.equal(ctx.message.seen, 'PUT');
  });

  test('store-get: an absent key leaves through miss and writes nothing', async () => {
    const get = instantiate(storeGet, { store: 's', key: 'absent', name: 'v' }, env());
    const ctx = requestContext();
    assert.equal(await get.run(ctx), 'miss');
    assert.equal('v' in ctx.message, false);
  });

  test('store-get: json flattens an object one level; a scalar lands under name', async () => {
    await raw.set('sy:kv:profile', JSON.stringify({ tier: 'gold', seats: 3, tags: ['a'], org: { id: 1 } }));
    await raw.set('sy:kv:count', '42');
    const ctx = requestContext();
    assert.equal(
      await instantiate(storeGet, { store: 's', key: 'profile', name: 'p', json: true }, env()).run(ctx),
      'success',
    );
    assert.equal(ctx.message['p.tier'], 'gold');
    assert.equal(ctx.message['p.seats'], 3);
    assert.equal(ctx.message['p.tags'], '["a"]');
    assert.equal(ctx.message['p.org'], '{"id":1}');
    assert.equal(
      await instantiate(storeGet, { store: 's', key: 'count', name: 'c', json: true }, env()).run(ctx),
      'success',
    );
    assert.equal(ctx.message.c, 42);
  });

  test('store-get: json on a non-JSON value fails with STORE_VALUE_INVALID (500)', async () => {
    await raw.set('sy:kv:bad', '{nope');
    const node = instantiate(storeGet, { store: 's', key: 'bad', name: 'b', json: true }, env());
    await failsWith(node, requestContext(), 'STORE_VALUE_INVALID', 500);
  });

  test('store nodes: a key that renders empty fails with STORE_KEY_INVALID (500)', async () => {
    const node = instantiate(storeGet, { store: 's', key: '{{request.headers.x-absent}}', name: 'n' }, env());
    await failsWith(node, requestContext(), 'STORE_KEY_INVALID', 500);
  });

  test('store-set: ttl_seconds sets an expiry', async () => {
    await instantiate(storeSet, { store: 's', key: 'ttl', value: 'x', ttl_seconds: 60 }, env()).run(
      requestContext(),
    );
    const ttl = await raw.ttl('sy:kv:ttl');
    assert.ok(ttl > 0 && ttl <= 60);
  });

  test('store-incr: counts 1, 2, then 1 again after the pinned TTL ran out (E2E-STORE-12)', async () => {
    const node = instantiate(
      storeIncr,
      { store: 's', key: 'hits:{{request.path}}', ttl_seconds: 1, name: 'hits' },
      env(),
    );
    const hit = async (): Promise<unknown> => {
      const ctx = requestContext({ url: '/x' });
      assert.equal(await node.run(ctx), 'success');
      return ctx.message.hits;
    };
    assert.equal(await hit(), 1);
    assert.equal(await hit(), 2);
    await waitFor(async () => (await raw.exists('sy:kv:hits:/x')) === 0, { what: 'the counter to expire' });
    assert.equal(await hit(), 1);
  });

  test('store-incr: by may be negative; a non-integer value fails with STORE_VALUE_INVALID', async () => {
    const down = instantiate(storeIncr, { store: 's', key: 'neg', by: -3, name: 'n' }, env());
    const ctx = requestContext();
    await down.run(ctx);
    assert.equal(ctx.message.n, -3);
    await raw.set('sy:kv:word', 'abc');
    await failsWith(
      instantiate(storeIncr, { store: 's', key: 'word', name: 'n' }, env()),
      ctx,
      'STORE_VALUE_INVALID',
      500,
    );
  });

  test('store-delete: removes a key and succeeds on an absent one', async () => {
    await raw.set('sy:kv:gone', '1');
    const node = instantiate(storeDelete, { store: 's', key: 'gone' }, env());
    assert.equal(await node.run(requestContext()), 'success');
    assert.equal(await raw.exists('sy:kv:gone'), 0);
    assert.equal(await node.run(requestContext()), 'success');
  });

  test('store nodes: an unreachable store fails with STORE_ERROR (503), never a miss', async () => {
    const ctx = requestContext();
    const err = await failsWith(
      instantiate(storeGet, { store: 'down', key: 'k', name: 'n' }, env()),
      ctx,
      'STORE_ERROR',
      503,
    );
    assert.equal(err.metadata.store, 'down');
    await failsWith(
      instantiate(storeSet, { store: 'down', key: 'k', value: 'v' }, env()),
      ctx,
      'STORE_ERROR',
      503,
    );
    await failsWith(
      instantiate(storeIncr, { store: 'down', key: 'k', name: 'n' }, env()),
      ctx,
      'STORE_ERROR',
      503,
    );
    await failsWith(instantiate(storeDelete, { store: 'down', key: 'k' }, env()), ctx, 'STORE_ERROR', 503);
  });

  test('store nodes: a policy key cannot reach another namespace', async () => {
    await raw.set('sy:sess:{abc}', 'secret');
    const get = instantiate(storeGet, { store: 's', key: '{{request.headers.x-k}}', name: 'n' }, env());
    const ctx = requestContext({ headers: { host: 'h', 'x-k': ':sess:{abc}' } });
    assert.equal(await get.run(ctx), 'miss');
  });
});
