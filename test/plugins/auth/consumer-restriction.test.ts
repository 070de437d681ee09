import assert from 'node:assert/strict';
import { test } from 'node:test';
import { consumerRestriction } from '../../../src/plugins/auth/consumer-restriction.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { assertConfigError, assertSchemaRejects, responseJson } from './helpers.js';

function as(name?: string, group?: string, method = 'GET') {
  const ctx = requestContext({ method });
  if (name !== undefined) ctx.setConsumer(group === undefined ? { name } : { name, group });
  return ctx;
}

test('consumer-restriction: a whitelisted consumer leaves by success', () => {
  const node = instantiate(consumerRestriction, { whitelist: ['alice', 'bob'] });
  assert.equal(node.run(as('alice')), 'success');
});

test('consumer-restriction: a consumer outside the whitelist → 403 on denied', () => {
  const node = instantiate(consumerRestriction, { whitelist: ['alice'] });
  const ctx = as('eve');
  assert.equal(node.run(ctx), 'denied');
  assert.equal(ctx.response.status, 403);
  assert.deepEqual(responseJson(ctx), { message: 'The consumer_name is forbidden.' });
  assert.equal(ctx.errors.length, 0);
});

test('consumer-restriction: blacklist by group with a custom code and message', () => {
  const node = instantiate(consumerRestriction, {
    type: 'consumer_group_id',
    blacklist: ['banned'],
    rejected_code: 429,
    rejected_msg: 'go away',
  });
  const ctx = as('x', 'banned');
  assert.equal(node.run(ctx), 'denied');
  assert.equal(ctx.response.status, 429);
  assert.deepEqual(responseJson(ctx), { message: 'go away' });
  assert.equal(node.run(as('y', 'gold')), 'success');
});

test('consumer-restriction: no consumer (or no group) attached → 401', () => {
  const byName = requestContext();
  assert.equal(instantiate(consumerRestriction, { whitelist: ['a'] }).run(byName), 'denied');
  assert.equal(byName.response.status, 401);
  assert.deepEqual(responseJson(byName), {
    message: 'The request is rejected, please check the consumer_name for this request',
  });
  const byGroup = as('alice');
  assert.equal(
    instantiate(consumerRestriction, { type: 'consumer_group_id', blacklist: ['x'] }).run(byGroup),
    'denied',
  );
  assert.equal(byGroup.response.status, 401);
});

test('consumer-restriction: allowed_by_methods confines a named consumer to its methods', () => {
  const node = instantiate(consumerRestriction, {
    blacklist: ['eve'],
    allowed_by_methods: [{ user: 'bob', methods: ['get', 'HEAD'] }],
  });
  assert.equal(node.run(as('bob', undefined, 'GET')), 'success');
  const post = as('bob', undefined, 'POST');
  assert.equal(node.run(post), 'denied');
  assert.equal(post.response.status, 403);
  assert.equal(
    node.run(as('carol', undefined, 'POST')),
    'success',
    'consumers without an entry are unrestricted',
  );
});

test('consumer-restriction: config rejections', () => {
  assertConfigError(() => instantiate(consumerRestriction, {}), '', /at least one of/);
  assertConfigError(
    () => instantiate(consumerRestriction, { whitelist: ['a'], blacklist: ['b'] }),
    '',
    /only one/,
  );
  assertConfigError(() => instantiate(consumerRestriction, { type: 'route_id', whitelist: ['r'] }), 'type');
  assertConfigError(
    () =>
      instantiate(consumerRestriction, {
        allowed_by_methods: [
          { user: 'a', methods: ['GET'] },
          { user: 'a', methods: ['POST'] },
        ],
      }),
    'allowed_by_methods[1].user',
  );
  assertSchemaRejects(() => instantiate(consumerRestriction, { type: 'consumer', whitelist: ['a'] }), 'type');
  assertSchemaRejects(
    () => instantiate(consumerRestriction, { allowed_by_methods: [{ user: 'a' }] }),
    'allowed_by_methods[0].methods',
  );
});
