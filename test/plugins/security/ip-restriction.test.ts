import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ipRestriction } from '../../../src/plugins/security/ip-restriction.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { assertConfigError, assertSchemaRejects } from '../../support/node-run.js';
import { responseJson } from '../../support/assertions.js';

const from = (remoteAddress: string) => requestContext({ remoteAddress });

test('ip-restriction: an address inside an allowed CIDR or equal to an allowed IP leaves by success', () => {
  const node = instantiate(ipRestriction, { allow: ['127.0.0.0/24', '113.74.26.106'] });
  for (const ip of ['127.0.0.1', '127.0.0.255', '113.74.26.106', '::ffff:127.0.0.9']) {
    const ctx = from(ip);
    assert.equal(node.run(ctx), 'success', ip);
    assert.equal(ctx.response.status, 0);
  }
});

test('ip-restriction: an address outside a non-empty allow list is denied with 403', () => {
  const node = instantiate(ipRestriction, { allow: ['127.0.0.0/24'] });
  const ctx = from('114.114.114.114');
  assert.equal(node.run(ctx), 'denied');
  assert.equal(ctx.response.status, 403);
  assert.equal(ctx.response.headers['content-type'], 'application/json');
  assert.deepEqual(responseJson(ctx), { error: 'forbidden', message: 'IP address not allowed' });
  assert.equal(ctx.errors.length, 0);
});

test('ip-restriction: a denied address is refused with 403 and deny wins over allow', () => {
  const node = instantiate(ipRestriction, { allow: ['10.0.0.0/8'], deny: ['10.0.0.1', 'fe80::/32'] });
  const ctx = from('10.0.0.1');
  assert.equal(node.run(ctx), 'denied');
  assert.equal(ctx.response.status, 403);
  assert.deepEqual(responseJson(ctx), { error: 'forbidden', message: 'IP address denied' });
  assert.equal(node.run(from('fe80::1:1')), 'denied');
  assert.equal(node.run(from('10.0.0.2')), 'success');
});

test('ip-restriction: IPv6 deny lists leave IPv4 clients alone; empty lists admit everyone', () => {
  const node = instantiate(ipRestriction, { deny: ['::1', 'fe80::/32'] });
  assert.equal(node.run(from('::1')), 'denied');
  assert.equal(node.run(from('127.0.0.1')), 'success');
  assert.equal(instantiate(ipRestriction, {}).run(from('203.0.113.5')), 'success');
});

test('ip-restriction: an unparseable client address is not admitted by an allow list', () => {
  const node = instantiate(ipRestriction, { allow: ['0.0.0.0/0'] });
  assert.equal(node.run(from('')), 'denied');
});

test('ip-restriction: config rejections — invalid IP, invalid prefix, unknown key, wrong type', () => {
  assertConfigError(() => instantiate(ipRestriction, { allow: ['10.0.0.0/8', 'not-an-ip'] }), 'allow[1]');
  assertConfigError(() => instantiate(ipRestriction, { deny: ['10.0.0.0/33'] }), 'deny[0]');
  assertConfigError(() => instantiate(ipRestriction, { deny: ['fe80::/129'] }), 'deny[0]');
  assertSchemaRejects(() => instantiate(ipRestriction, { whitelist: ['1.2.3.4'] }), 'whitelist');
  assertSchemaRejects(() => instantiate(ipRestriction, { allow: '1.2.3.4' }), 'allow');
});
