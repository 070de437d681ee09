import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseAddress, realIp } from '../../../src/plugins/core/real-ip.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { assertConfigError, assertSchemaRejects, runNow } from '../../support/node-run.js';

function from(remoteAddress: string, headers: Record<string, string> = {}, url = '/') {
  return requestContext({ remoteAddress, remotePort: 5000, url, headers: { host: 'gw', ...headers } });
}

test('real-ip: a trusted peer has its address replaced from X-Real-IP; the peer port stays', () => {
  const node = instantiate(realIp, { source: 'http_x_real_ip', trusted_addresses: ['127.0.0.0/24'] });
  const ctx = from('127.0.0.1', { 'x-real-ip': '203.0.113.7' });
  assert.equal(node.run(ctx), 'success');
  assert.equal(ctx.request.remoteAddress, '203.0.113.7');
  assert.equal(ctx.request.remotePort, 5000);
});

test('real-ip: an untrusted peer, a missing source or a bad address leave the address alone', () => {
  const node = instantiate(realIp, { source: 'http_x_real_ip', trusted_addresses: ['127.0.0.0/24'] });
  for (const ctx of [
    from('198.51.100.9', { 'x-real-ip': '203.0.113.7' }),
    from('127.0.0.1'),
    from('127.0.0.1', { 'x-real-ip': 'unknown' }),
  ]) {
    const before = ctx.request.remoteAddress;
    assert.equal(node.run(ctx), 'success');
    assert.equal(ctx.request.remoteAddress, before);
  }
});

test('real-ip: without trusted_addresses the source always applies; a source port wins', () => {
  const node = instantiate(realIp, { source: 'http_x_real_ip' });
  const ctx = from('198.51.100.9', { 'x-real-ip': '[2001:db8::1]:9000' });
  runNow(node, ctx);
  assert.equal(ctx.request.remoteAddress, '2001:db8::1');
  assert.equal(ctx.request.remotePort, 9000);
});

test('real-ip: X-Forwarded-For takes the last hop, or with recursive the first untrusted from the right', () => {
  const xff = { 'x-forwarded-for': '203.0.113.7, 10.1.1.1, 10.2.2.2' };
  const last = instantiate(realIp, { source: 'http_x_forwarded_for', trusted_addresses: ['127.0.0.0/24'] });
  const a = from('127.0.0.1', xff);
  runNow(last, a);
  assert.equal(a.request.remoteAddress, '10.2.2.2');

  const recursive = instantiate(realIp, {
    source: 'http_x_forwarded_for',
    trusted_addresses: ['127.0.0.0/24', '10.0.0.0/8'],
    recursive: true,
  });
  const b = from('127.0.0.1', xff);
  runNow(recursive, b);
  assert.equal(b.request.remoteAddress, '203.0.113.7');
  const c = from('127.0.0.1', { 'x-forwarded-for': '10.9.9.9, 10.1.1.1' });
  runNow(recursive, c);
  assert.equal(c.request.remoteAddress, '10.9.9.9');
});

test('real-ip: arg_ and cookie_ sources read the query and cookies', () => {
  const byArg = from('192.0.2.1', {}, '/x?realip=198.51.100.4');
  runNow(instantiate(realIp, { source: 'arg_realip' }), byArg);
  assert.equal(byArg.request.remoteAddress, '198.51.100.4');
  const byCookie = from('192.0.2.1', { cookie: 'ip=198.51.100.5' });
  runNow(instantiate(realIp, { source: 'cookie_ip' }), byCookie);
  assert.equal(byCookie.request.remoteAddress, '198.51.100.5');
});

test('real-ip: address parsing accepts ip, ip:port and bracketed IPv6, refuses port 0 and junk', () => {
  assert.deepEqual(parseAddress('203.0.113.7:8443'), { ip: '203.0.113.7', port: 8443 });
  assert.deepEqual(parseAddress(' ::1 '), { ip: '::1' });
  assert.equal(parseAddress('203.0.113.7:0'), undefined);
  assert.equal(parseAddress('2001:db8::1:80:x'), undefined);
  assert.equal(parseAddress('example.com'), undefined);
});

test('real-ip: config rejections — missing or unknown source, empty or invalid trusted_addresses', () => {
  assertSchemaRejects(() => instantiate(realIp, {}), 'source');
  assertConfigError(() => instantiate(realIp, { source: 'remote_port' }), 'source');
  assertConfigError(
    () => instantiate(realIp, { source: 'http_x_real_ip', trusted_addresses: [] }),
    'trusted_addresses',
  );
  assertConfigError(
    () => instantiate(realIp, { source: 'http_x_real_ip', trusted_addresses: ['10.0.0.0/8', 'nope'] }),
    'trusted_addresses[1]',
  );
});
