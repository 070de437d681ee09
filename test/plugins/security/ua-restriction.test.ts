import assert from 'node:assert/strict';
import { test } from 'node:test';
import { uaRestriction } from '../../../src/plugins/security/ua-restriction.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { LINEAR_BOUND_MS, REDOS_VALUE_RULE, redosInput, timed } from '../../support/redos.js';
import { assertConfigError, assertSchemaRejects, templatedEnv } from '../../support/node-run.js';
import { responseJson } from '../../support/assertions.js';

const withUa = (ua?: string) =>
  requestContext({ headers: ua === undefined ? { host: 'gw' } : { host: 'gw', 'user-agent': ua } });

test('ua-restriction: a denylisted User-Agent is denied with 403 {"message": "Not allowed"}', () => {
  const node = instantiate(uaRestriction, { denylist: ['curl/.*', '(?i)spider'] });
  for (const ua of ['curl/8.1.2', 'Mega SPIDER bot']) {
    const ctx = withUa(ua);
    assert.equal(node.run(ctx), 'denied', ua);
    assert.equal(ctx.response.status, 403);
    assert.deepEqual(responseJson(ctx), { message: 'Not allowed' });
  }
  assert.equal(node.run(withUa('Mozilla/5.0')), 'success');
});

test('ua-restriction: an allowlist admits only matching agents (values trimmed)', () => {
  const node = instantiate(uaRestriction, { allowlist: ['^Mozilla'] });
  assert.equal(node.run(withUa('  Mozilla/5.0  ')), 'success');
  assert.equal(node.run(withUa('curl/8')), 'denied');
});

test('ua-restriction: a missing User-Agent is denied unless bypass_missing', () => {
  assert.equal(instantiate(uaRestriction, { denylist: ['curl'] }).run(withUa()), 'denied');
  assert.equal(
    instantiate(uaRestriction, { denylist: ['curl'], bypass_missing: true }).run(withUa()),
    'success',
  );
});

test('ua-restriction: rejected_code and a templated rejected_msg shape the denial', () => {
  const node = instantiate(
    uaRestriction,
    { denylist: ['curl'], rejected_code: 405, rejected_msg: 'go away from {{request.path}}' },
    templatedEnv(),
  );
  const ctx = requestContext({ url: '/x', headers: { host: 'gw', 'user-agent': 'curl/8' } });
  assert.equal(node.run(ctx), 'denied');
  assert.equal(ctx.response.status, 405);
  assert.deepEqual(responseJson(ctx), { message: 'go away from /x' });
});

test('ua-restriction: config rejections — invalid regex, both lists, no list, bad status', () => {
  assertConfigError(
    () => instantiate(uaRestriction, { denylist: ['ok', '('] }),
    'denylist[1]',
    /regular expression/,
  );
  assertConfigError(() => instantiate(uaRestriction, { allowlist: ['['] }), 'allowlist[0]');
  assertConfigError(() => instantiate(uaRestriction, { denylist: [''] }), 'denylist[0]');
  assertConfigError(() => instantiate(uaRestriction, { allowlist: ['a'], denylist: ['b'] }), 'denylist');
  assertConfigError(() => instantiate(uaRestriction, {}), '');
  assertSchemaRejects(
    () => instantiate(uaRestriction, { denylist: ['a'], rejected_code: 100 }),
    'rejected_code',
  );
});

test('ua-restriction: M3 a nested-quantifier denylist entry answers a crafted User-Agent in linear time', () => {
  const node = instantiate(uaRestriction, { denylist: [REDOS_VALUE_RULE] });
  const run = timed(() => node.run(withUa(redosInput(30))));
  assert.equal(run.value, 'success');
  assert.ok(run.ms < LINEAR_BOUND_MS, `took ${run.ms.toFixed(1)} ms`);
  assert.equal(node.run(withUa('aaaa')), 'denied');
});

test('ua-restriction: M3 a lookahead in allowlist or denylist is refused at load naming the entry', () => {
  assertConfigError(
    () => instantiate(uaRestriction, { allowlist: ['^(?=Mozilla)'] }),
    'allowlist[0]',
    /lookahead/,
  );
  assertConfigError(
    () => instantiate(uaRestriction, { denylist: ['a', '(b)\\1'] }),
    'denylist[1]',
    /backreference/,
  );
});
