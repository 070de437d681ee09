import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isSecretName } from '../../src/debug/redaction.js';
import { createTriggerGate, debugGateIssues } from '../../src/debug/trigger-gate.js';

test('trigger gate: loopback by default, IPv4-mapped clients match IPv4 entries, absent header never counts', () => {
  const gate = createTriggerGate({});
  assert.equal(gate('1', '127.0.0.1'), true);
  assert.equal(gate('1', '::ffff:127.0.0.1'), true);
  assert.equal(gate('1', '::1'), true);
  assert.equal(gate('1', '10.1.2.3'), false);
  assert.equal(gate(undefined, '127.0.0.1'), false);
  const lan = createTriggerGate({ allowed_cidrs: ['10.0.0.0/8'], header_secret: 's'.repeat(16) });
  assert.equal(lan('s'.repeat(16), '::ffff:10.9.8.7'), true);
  assert.equal(lan(['s'.repeat(16)], '10.9.8.7'), true);
  assert.equal(lan('wrong', '10.9.8.7'), false);
  assert.equal(lan('s'.repeat(16), '127.0.0.1'), false);
});

test('trigger gate: bad CIDRs and a short secret are issues naming their key', () => {
  assert.deepEqual(
    debugGateIssues({ allowed_cidrs: ['10.0.0.0/8', 'nope', '1.2.3.4/33'], header_secret: 'short' }).map(
      (i) => i.path,
    ),
    ['debug.allowed_cidrs[1]', 'debug.allowed_cidrs[2]', 'debug.header_secret'],
  );
});

test('redaction: the name pattern catches the review L2 names and leaves ordinary ones', () => {
  for (const name of [
    'password',
    'db_passwd',
    'x-secret-header',
    'private-token',
    'x-auth',
    'x-upstream-auth',
    'x-api-version',
    'hmac_key',
    'x-session-id',
    'ticket',
  ])
    assert.equal(isSecretName(name), true, name);
  for (const name of [
    'page',
    'x-tenant',
    'consumer.key_id',
    'keep-alive',
    'content-type',
    'keyword',
    'x-request-id',
  ])
    assert.equal(isSecretName(name), false, name);
});
