import assert from 'node:assert/strict';
import { test } from 'node:test';
import { attachConsumerLabel } from '../../../src/plugins/auth/attach-consumer-label.js';
import { keyAuth } from '../../../src/plugins/auth/key-auth.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { assertConfigError, assertSchemaRejects, envWith } from './helpers.js';

test('attach-consumer-label: the consumer labels become lowercased prefixed request headers', () => {
  const env = envWith([
    { name: 'alice', labels: { Tier: 'gold', custom_id: '42' }, credentials: { 'key-auth': { key: 'k' } } },
  ]);
  const ctx = requestContext({ headers: { 'x-api-key': 'k', 'x-consumer-tier': 'forged' } });
  assert.equal(instantiate(keyAuth, { use_consumers: true }, env).run(ctx), 'success');
  assert.equal(instantiate(attachConsumerLabel, {}).run(ctx), 'success');
  assert.equal(ctx.request.headers['x-consumer-tier'], 'gold');
  assert.equal(ctx.request.headers['x-consumer-custom_id'], '42');
  const custom = requestContext();
  custom.message['consumer.labels'] = { team: 'core' };
  assert.equal(instantiate(attachConsumerLabel, { header_prefix: 'X-Caller-' }).run(custom), 'success');
  assert.equal(custom.request.headers['x-caller-team'], 'core');
});

test('attach-consumer-label: without a consumer the request passes untouched', () => {
  const ctx = requestContext();
  const before = { ...ctx.request.headers };
  assert.equal(instantiate(attachConsumerLabel, {}).run(ctx), 'success');
  assert.deepEqual(ctx.request.headers, before);
  assert.equal(ctx.response.status, 0);
});

test('attach-consumer-label: config rejections', () => {
  assertConfigError(() => instantiate(attachConsumerLabel, { header_prefix: 'X Bad: ' }), 'header_prefix');
  assertSchemaRejects(() => instantiate(attachConsumerLabel, { prefix: 'x-' }), 'prefix');
  assertSchemaRejects(() => instantiate(attachConsumerLabel, { header_prefix: ['x-'] }), 'header_prefix');
});
