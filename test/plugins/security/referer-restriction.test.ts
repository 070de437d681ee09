import assert from 'node:assert/strict';
import { test } from 'node:test';
import { refererHost, refererRestriction } from '../../../src/plugins/security/referer-restriction.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { assertConfigError, assertSchemaRejects, templatedEnv } from '../../support/node-run.js';
import { responseJson } from '../../support/assertions.js';

const withReferer = (referer?: string) =>
  requestContext({ headers: referer === undefined ? { host: 'gw' } : { host: 'gw', referer } });

test('referer-restriction: whitelisted hosts and wildcard subdomains pass; others get 403', () => {
  const node = instantiate(refererRestriction, { whitelist: ['example.com', '*.example.org'] });
  assert.equal(node.run(withReferer('http://example.com/x')), 'success');
  assert.equal(node.run(withReferer('https://API.example.org:8443/x')), 'success');
  for (const referer of ['https://example.org/', 'https://evil.com/']) {
    const ctx = withReferer(referer);
    assert.equal(node.run(ctx), 'denied', referer);
    assert.equal(ctx.response.status, 403);
    assert.deepEqual(responseJson(ctx), { message: 'Your referer host is not allowed' });
  }
});

test('referer-restriction: a blacklist denies matching hosts, and a missing Referer by default', () => {
  const node = instantiate(refererRestriction, { blacklist: ['*.evil.com', 'bad.org'] });
  assert.equal(node.run(withReferer('http://sub.evil.com/')), 'denied');
  assert.equal(node.run(withReferer('http://bad.org/')), 'denied');
  assert.equal(node.run(withReferer('http://good.org/')), 'success');
  assert.equal(node.run(withReferer()), 'denied');
});

test('referer-restriction: bypass_missing lets missing and malformed Referers through', () => {
  const node = instantiate(refererRestriction, { whitelist: ['example.com'], bypass_missing: true });
  assert.equal(node.run(withReferer()), 'success');
  assert.equal(node.run(withReferer('not a url')), 'success');
  const strict = instantiate(refererRestriction, { whitelist: ['example.com'] });
  assert.equal(strict.run(withReferer('ftp://example.com/')), 'denied');
});

test('referer-restriction: message is templated', () => {
  const node = instantiate(
    refererRestriction,
    { whitelist: ['example.com'], message: 'blocked for {{request.path}}' },
    templatedEnv(),
  );
  const ctx = requestContext({ url: '/secret', headers: { host: 'gw', referer: 'https://evil.com/' } });
  assert.equal(node.run(ctx), 'denied');
  assert.deepEqual(responseJson(ctx), { message: 'blocked for /secret' });
});

test('referer-restriction: host parsing handles ports, queries, IPv6 and bad schemes', () => {
  assert.equal(refererHost('https://Example.COM:8443?q=1'), 'example.com');
  assert.equal(refererHost('http://[::1]:8080/x'), '[::1]');
  assert.equal(refererHost('example.com/path'), undefined);
  assert.equal(refererHost('http://'), undefined);
});

test('referer-restriction: config rejections — bad host pattern, both lists, no list, unknown key', () => {
  assertConfigError(
    () => instantiate(refererRestriction, { whitelist: ['ok.com', 'bad host'] }),
    'whitelist[1]',
  );
  assertConfigError(() => instantiate(refererRestriction, { blacklist: ['*'] }), 'blacklist[0]');
  assertConfigError(
    () => instantiate(refererRestriction, { whitelist: ['a.com'], blacklist: ['b.com'] }),
    'blacklist',
  );
  assertConfigError(() => instantiate(refererRestriction, {}), '');
  assertSchemaRejects(
    () => instantiate(refererRestriction, { whitelist: ['a.com'], rejected_code: 403 }),
    'rejected_code',
  );
});
