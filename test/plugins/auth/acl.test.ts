import assert from 'node:assert/strict';
import { test } from 'node:test';
import { acl } from '../../../src/plugins/auth/acl.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { assertConfigError, assertSchemaRejects, responseJson } from './helpers.js';

function as(name?: string, group?: string) {
  const ctx = requestContext();
  if (name !== undefined) ctx.setConsumer(group === undefined ? { name } : { name, group });
  return ctx;
}

test('acl: a consumer in an allowed group leaves by success', () => {
  const node = instantiate(acl, { allowed_by: ['gold', 'internal'] });
  assert.equal(node.run(as('alice', 'gold')), 'success');
});

test('acl: a group outside allowed_by, or no group, → 403 on denied', () => {
  const node = instantiate(acl, { allowed_by: ['gold'] });
  for (const ctx of [as('bob', 'silver'), as('carol')]) {
    assert.equal(node.run(ctx), 'denied');
    assert.equal(ctx.response.status, 403);
    assert.deepEqual(responseJson(ctx), { message: 'The consumer is forbidden.' });
    assert.equal(ctx.errors.length, 0);
  }
});

test('acl: denied_by wins over allowed_by; rejected_code and rejected_msg shape the answer', () => {
  const node = instantiate(acl, {
    allowed_by: ['gold'],
    denied_by: ['gold'],
    rejected_code: 404,
    rejected_msg: 'nope',
  });
  const ctx = as('alice', 'gold');
  assert.equal(node.run(ctx), 'denied');
  assert.equal(ctx.response.status, 404);
  assert.deepEqual(responseJson(ctx), { message: 'nope' });
  const denyOnly = instantiate(acl, { denied_by: ['banned'] });
  assert.equal(denyOnly.run(as('x', 'banned')), 'denied');
  assert.equal(denyOnly.run(as('y')), 'success');
});

test('acl: no consumer attached → 401 Missing authentication.', () => {
  const ctx = requestContext();
  assert.equal(instantiate(acl, { allowed_by: ['gold'] }).run(ctx), 'denied');
  assert.equal(ctx.response.status, 401);
  assert.deepEqual(responseJson(ctx), { message: 'Missing authentication.' });
});

test('acl: config rejections', () => {
  assertConfigError(() => instantiate(acl, {}), '', /at least one of 'allowed_by' or 'denied_by'/);
  assertConfigError(() => instantiate(acl, { allowed_by: [] }), '');
  assertSchemaRejects(() => instantiate(acl, { allowed_by: ['a'], rejected_code: 200 }), 'rejected_code');
  assertSchemaRejects(() => instantiate(acl, { allowed_by: 'gold' }), 'allowed_by');
  assertSchemaRejects(() => instantiate(acl, { whitelist: ['gold'] }), 'whitelist');
});
